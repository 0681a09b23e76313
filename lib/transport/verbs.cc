// RDMA verbs, with a raw-packet queue pair: whole Ethernet frames go out as
// they are, and a flow rule steers frames for this host's MAC to the receive
// queue. This is how DPDK's mlx5 driver uses ConnectX NICs; it needs no
// address exchange, so it carries the same frames as every other transport.
//
// Never run on a device here: these machines have no RDMA hardware. The
// tests check that opening fails cleanly when there is none.
#include "transport/verbs.h"

#include <infiniband/verbs.h>

#include <cstring>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "grid/wire.h"

namespace grid::transport {
namespace {

constexpr int kSlots = 512;  // receive buffers, and as many send buffers
// A buffer slot holds the largest GRID frame, rounded up to whole cache lines.
constexpr size_t kSlotBytes = (wire::kMaxFrameBytes + 63) / 64 * 64;
constexpr int kBurst = 32;

class VerbsTransport final : public Transport {
 public:
  ~VerbsTransport() override {
    if (flow_) ibv_destroy_flow(flow_);
    if (qp_) ibv_destroy_qp(qp_);
    if (send_cq_) ibv_destroy_cq(send_cq_);
    if (recv_cq_) ibv_destroy_cq(recv_cq_);
    if (mr_) ibv_dereg_mr(mr_);
    if (pd_) ibv_dealloc_pd(pd_);
    if (context_) ibv_close_device(context_);
  }

  static absl::StatusOr<std::unique_ptr<Transport>> Open(const std::string& device, int port,
                                                         const wire::MacAddress& mac) {
    int n = 0;
    ibv_device** list = ibv_get_device_list(&n);
    if (list == nullptr || n == 0) {
      if (list) ibv_free_device_list(list);
      return absl::UnavailableError("verbs: no RDMA device on this machine");
    }
    ibv_device* chosen = nullptr;
    for (int i = 0; i < n; ++i) {
      if (device.empty() || device == ibv_get_device_name(list[i])) chosen = list[i];
      if (chosen) break;
    }
    std::unique_ptr<VerbsTransport> t(new VerbsTransport());
    t->name_ = chosen ? ibv_get_device_name(chosen) : "";
    t->context_ = chosen ? ibv_open_device(chosen) : nullptr;
    ibv_free_device_list(list);
    if (!chosen) return absl::NotFoundError(absl::StrFormat("verbs: no device \"%s\"", device));
    if (t->context_ == nullptr) return t->Fail("ibv_open_device");
    t->port_ = port;
    t->buffer_.resize(size_t{2} * kSlots * kSlotBytes);
    if (!(t->pd_ = ibv_alloc_pd(t->context_))) return t->Fail("ibv_alloc_pd");
    if (!(t->mr_ =
              ibv_reg_mr(t->pd_, t->buffer_.data(), t->buffer_.size(), IBV_ACCESS_LOCAL_WRITE)))
      return t->Fail("ibv_reg_mr");
    if (!(t->send_cq_ = ibv_create_cq(t->context_, kSlots, nullptr, nullptr, 0)) ||
        !(t->recv_cq_ = ibv_create_cq(t->context_, kSlots, nullptr, nullptr, 0))) {
      return t->Fail("ibv_create_cq");
    }
    ibv_qp_init_attr init{};
    init.send_cq = t->send_cq_;
    init.recv_cq = t->recv_cq_;
    init.qp_type = IBV_QPT_RAW_PACKET;
    init.cap.max_send_wr = kSlots;
    init.cap.max_recv_wr = kSlots;
    init.cap.max_send_sge = 1;
    init.cap.max_recv_sge = 1;
    if (!(t->qp_ = ibv_create_qp(t->pd_, &init))) {
      return t->Fail("ibv_create_qp (raw packet; needs CAP_NET_RAW)");
    }
    ibv_qp_attr attr{};
    attr.qp_state = IBV_QPS_INIT;
    attr.port_num = static_cast<uint8_t>(port);
    if (ibv_modify_qp(t->qp_, &attr, IBV_QP_STATE | IBV_QP_PORT) != 0) return t->Fail("QP to INIT");
    attr = {};
    attr.qp_state = IBV_QPS_RTR;
    if (ibv_modify_qp(t->qp_, &attr, IBV_QP_STATE) != 0) return t->Fail("QP to RTR");
    attr = {};
    attr.qp_state = IBV_QPS_RTS;
    if (ibv_modify_qp(t->qp_, &attr, IBV_QP_STATE) != 0) return t->Fail("QP to RTS");
    // Steer frames for our MAC to this queue pair: the rule is the attribute
    // header immediately followed by one Ethernet spec.
    ibv_flow_attr flow{};
    flow.type = IBV_FLOW_ATTR_NORMAL;
    flow.size = sizeof(ibv_flow_attr) + sizeof(ibv_flow_spec_eth);
    flow.num_of_specs = 1;
    flow.port = static_cast<uint8_t>(port);
    ibv_flow_spec_eth eth{};
    eth.type = IBV_FLOW_SPEC_ETH;
    eth.size = sizeof(eth);
    std::memcpy(eth.val.dst_mac, mac.data(), 6);
    std::memset(eth.mask.dst_mac, 0xff, 6);
    alignas(8) uint8_t rule[sizeof(ibv_flow_attr) + sizeof(ibv_flow_spec_eth)];
    std::memcpy(rule, &flow, sizeof(flow));
    std::memcpy(rule + sizeof(flow), &eth, sizeof(eth));
    if (!(t->flow_ = ibv_create_flow(t->qp_, reinterpret_cast<ibv_flow_attr*>(rule)))) {
      return t->Fail("ibv_create_flow");
    }
    for (int i = 0; i < kSlots; ++i) {
      if (!t->PostReceive(i)) return t->Fail("ibv_post_recv");
    }
    return std::unique_ptr<Transport>(std::move(t));
  }

  size_t Send(absl::Span<const absl::Span<const uint8_t>> frames) override {
    ReapSends();
    for (absl::Span<const uint8_t> f : frames) {
      if (outstanding_ == kSlots || f.size() > kSlotBytes) continue;  // lost: loss recovery resends
      uint8_t* slot = buffer_.data() + (kSlots + next_send_) * kSlotBytes;
      std::memcpy(slot, f.data(), f.size());
      ibv_sge sge{reinterpret_cast<uintptr_t>(slot), static_cast<uint32_t>(f.size()), mr_->lkey};
      ibv_send_wr wr{};
      ibv_send_wr* bad = nullptr;
      wr.wr_id = static_cast<uint64_t>(next_send_);
      wr.sg_list = &sge;
      wr.num_sge = 1;
      wr.opcode = IBV_WR_SEND;
      wr.send_flags = IBV_SEND_SIGNALED;
      if (ibv_post_send(qp_, &wr, &bad) != 0) continue;
      next_send_ = (next_send_ + 1) % kSlots;
      ++outstanding_;
    }
    return frames.size();
  }

  size_t Receive(size_t max, absl::FunctionRef<void(absl::Span<const uint8_t>)> on_frame) override {
    ibv_wc wc[kBurst];
    const int n = ibv_poll_cq(recv_cq_, static_cast<int>(std::min<size_t>(max, kBurst)), wc);
    for (int i = 0; i < n; ++i) {
      const int slot = static_cast<int>(wc[i].wr_id);
      if (wc[i].status == IBV_WC_SUCCESS) {
        on_frame({buffer_.data() + slot * kSlotBytes, wc[i].byte_len});
      }
      PostReceive(slot);
    }
    return n > 0 ? static_cast<size_t>(n) : 0;
  }

  void WaitReadable(absl::Duration timeout) override {
    std::this_thread::sleep_for(
        absl::ToChronoMicroseconds(std::min(timeout, absl::Microseconds(20))));
  }

  std::string Describe() const override {
    return absl::StrFormat("verbs %s port %d (raw packet)", name_, port_);
  }

 private:
  VerbsTransport() = default;

  absl::Status Fail(const char* what) {
    return absl::UnavailableError(
        absl::StrFormat("verbs %s: %s failed: %s", name_, what, std::strerror(errno)));
  }

  bool PostReceive(int slot) {
    ibv_sge sge{reinterpret_cast<uintptr_t>(buffer_.data() + slot * kSlotBytes),
                static_cast<uint32_t>(kSlotBytes), mr_->lkey};
    ibv_recv_wr wr{};
    ibv_recv_wr* bad = nullptr;
    wr.wr_id = static_cast<uint64_t>(slot);
    wr.sg_list = &sge;
    wr.num_sge = 1;
    return ibv_post_recv(qp_, &wr, &bad) == 0;
  }

  void ReapSends() {
    ibv_wc wc[kBurst];
    int n;
    while ((n = ibv_poll_cq(send_cq_, kBurst, wc)) > 0) outstanding_ -= n;
  }

  std::string name_;
  int port_ = 1;
  ibv_context* context_ = nullptr;
  ibv_pd* pd_ = nullptr;
  ibv_mr* mr_ = nullptr;
  ibv_cq* send_cq_ = nullptr;
  ibv_cq* recv_cq_ = nullptr;
  ibv_qp* qp_ = nullptr;
  ibv_flow* flow_ = nullptr;
  std::vector<uint8_t> buffer_;  // receive slots, then send slots
  int next_send_ = 0, outstanding_ = 0;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Transport>> OpenVerbs(std::string_view spec) {
  std::string device;
  int port = 1;
  wire::MacAddress mac{};
  bool have_mac = false;
  const std::string_view rest = spec.substr(spec.find(':') + 1);
  for (absl::string_view kv :
       absl::StrSplit(absl::string_view(rest.data(), rest.size()), ',', absl::SkipEmpty())) {
    const size_t eq = kv.find('=');
    const absl::string_view key = kv.substr(0, eq);
    const absl::string_view value = eq == absl::string_view::npos ? "" : kv.substr(eq + 1);
    if (key == "device") {
      device = std::string(value);
    } else if (key == "port" && absl::SimpleAtoi(value, &port) && port >= 1 && port <= 255) {
    } else if (key == "mac") {
      auto m = wire::ParseMac(std::string_view(value.data(), value.size()));
      if (!m.ok()) return m.status();
      mac = *m;
      have_mac = true;
    } else {
      return absl::InvalidArgumentError(absl::StrFormat(
          "transport \"%s\": expected device=NAME, port=N (1-255), mac=MAC; not \"%s\"", spec,
          std::string(kv)));
    }
  }
  if (!have_mac) {
    return absl::InvalidArgumentError(
        absl::StrFormat("transport \"%s\": mac= (this host's MAC) is required", spec));
  }
  return VerbsTransport::Open(device, port, mac);
}

}  // namespace grid::transport
