#include "gloo_peer.h"

#include <gloo/allreduce.h>
#include <gloo/barrier_all_to_all.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/tcp/device.h>
#include <netdb.h>
#include <sys/socket.h>

#include <algorithm>
#include <chrono>
#include <exception>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace grid::bench {
namespace {

// Gloo's rendezvous over a grid::Store. Gloo's interface has no error
// returns, so failures are thrown, and Connect turns them back into a status.
class StoreForGloo : public gloo::rendezvous::Store {
 public:
  StoreForGloo(grid::Store& store, absl::Duration timeout) : store_(store), timeout_(timeout) {}

  void set(const std::string& key, const std::vector<char>& data) override {
    absl::Status s = store_.Set(Key(key), std::string_view(data.data(), data.size()));
    if (!s.ok()) throw std::runtime_error(std::string(s.message()));
  }

  std::vector<char> get(const std::string& key) override {
    auto v = store_.Get(Key(key), timeout_);
    if (!v.ok()) throw std::runtime_error(std::string(v.status().message()));
    return std::vector<char>(v->begin(), v->end());
  }

  void wait(const std::vector<std::string>& keys) override { wait(keys, kDefaultTimeout); }

  void wait(const std::vector<std::string>& keys,
            const std::chrono::milliseconds& timeout) override {
    const absl::Duration limit = std::min(timeout_, absl::FromChrono(timeout));
    for (const std::string& key : keys) {
      auto v = store_.Get(Key(key), limit);
      if (!v.ok()) throw std::runtime_error(std::string(v.status().message()));
    }
  }

 private:
  static std::string Key(const std::string& key) { return absl::StrCat("gloo/", key); }

  grid::Store& store_;
  const absl::Duration timeout_;
};

class TcpGlooPeer : public GlooPeer {
 public:
  TcpGlooPeer(int rank, std::shared_ptr<gloo::rendezvous::Context> context)
      : rank_(rank), context_(std::move(context)) {}

  // A rank that is done may still have its last sends queued: closing its
  // connections before every rank is done cuts them off ("closed by peer").
  ~TcpGlooPeer() override {
    try {
      gloo::BarrierAllToAll(context_).run();
    } catch (const std::exception&) {
      // A peer is gone already; there is nothing left to protect.
    }
  }

  // gloo::allreduce with the ring algorithm: what PyTorch's Gloo backend
  // runs for a dense tensor, a bandwidth-optimal reduce-scatter and
  // allgather. (gloo::AllreduceRing passes the whole buffer round the ring,
  // n-1 times the data per host.)
  absl::Status AllReduce(float* data, size_t count) override {
    try {
      gloo::AllreduceOptions opts(context_);
      opts.setAlgorithm(gloo::AllreduceOptions::Algorithm::RING);
      opts.setOutput(data, count);
      opts.setReduceFunction(
          static_cast<void (*)(void*, const void*, const void*, size_t)>(&gloo::sum<float>));
      opts.setTag(tag_++);
      gloo::allreduce(opts);
      return absl::OkStatus();
    } catch (const std::exception& e) {
      return absl::UnavailableError(absl::StrFormat(
          "rank %d: Gloo's ring allreduce of %d floats: %s", rank_, count, e.what()));
    }
  }

 private:
  const int rank_;
  std::shared_ptr<gloo::rendezvous::Context> context_;
  uint32_t tag_ = 0;
};

}  // namespace

absl::StatusOr<std::unique_ptr<GlooPeer>> GlooPeer::Connect(Store& store, int rank, int world,
                                                            const std::string& address,
                                                            absl::Duration timeout) {
  // Gloo's device dereferences a failed lookup (a segfault on a name that
  // does not resolve), so the name is looked up here first.
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (int err = getaddrinfo(address.c_str(), nullptr, &hints, &found); err != 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("rank %d: Gloo over TCP on \"%s\": the address does not resolve: %s", rank,
                        address, gai_strerror(err)));
  }
  freeaddrinfo(found);
  try {
    gloo::transport::tcp::attr attr(address.c_str());
    auto device = gloo::transport::tcp::CreateDevice(attr);
    auto context = std::make_shared<gloo::rendezvous::Context>(rank, world);
    context->setTimeout(absl::ToChronoMilliseconds(timeout));
    StoreForGloo gloo_store(store, timeout);
    context->connectFullMesh(gloo_store, device);
    return std::make_unique<TcpGlooPeer>(rank, std::move(context));
  } catch (const std::exception& e) {
    return absl::UnavailableError(
        absl::StrFormat("rank %d: Gloo over TCP on %s: %s", rank, address, e.what()));
  }
}

}  // namespace grid::bench
