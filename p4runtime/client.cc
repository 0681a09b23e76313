#include "p4runtime/client.h"

#include <grpcpp/grpcpp.h>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "google/rpc/status.pb.h"
#include "p4runtime/entries.h"

namespace grid::p4rt {
namespace {

std::string Code(grpc::StatusCode c) {
  static const char* kNames[] = {"OK",
                                 "CANCELLED",
                                 "UNKNOWN",
                                 "INVALID_ARGUMENT",
                                 "DEADLINE_EXCEEDED",
                                 "NOT_FOUND",
                                 "ALREADY_EXISTS",
                                 "PERMISSION_DENIED",
                                 "RESOURCE_EXHAUSTED",
                                 "FAILED_PRECONDITION",
                                 "ABORTED",
                                 "OUT_OF_RANGE",
                                 "UNIMPLEMENTED",
                                 "INTERNAL",
                                 "UNAVAILABLE",
                                 "DATA_LOSS",
                                 "UNAUTHENTICATED"};
  const int i = static_cast<int>(c);
  return i >= 0 && i < 17 ? kNames[i] : absl::StrCat("code ", i);
}

absl::StatusCode ToAbsl(grpc::StatusCode c) {
  return static_cast<absl::StatusCode>(static_cast<int>(c));
}

std::string Id(const p4::v1::Uint128& id) {
  return id.high() == 0 ? absl::StrCat(id.low()) : absl::StrCat(id.high(), ":", id.low());
}

}  // namespace

std::string P4RuntimeSwitch::Who() const {
  return absl::StrFormat("switch %s at %s", target_.name, target_.address);
}

void P4RuntimeSwitch::SetDeadline(grpc::ClientContext& context) const {
  context.set_deadline(absl::ToChronoTime(absl::Now() + target_.timeout));
}

p4::v1::Uint128 P4RuntimeSwitch::ElectionId() const {
  p4::v1::Uint128 id;
  id.set_high(absl::Uint128High64(target_.election_id));
  id.set_low(absl::Uint128Low64(target_.election_id));
  return id;
}

absl::StatusOr<std::unique_ptr<P4RuntimeSwitch>> P4RuntimeSwitch::Connect(
    const SwitchTarget& target) {
  std::unique_ptr<P4RuntimeSwitch> s(new P4RuntimeSwitch(target));
  s->channel_ = grpc::CreateChannel(target.address, grpc::InsecureChannelCredentials());
  if (!s->channel_->WaitForConnected(absl::ToChronoTime(absl::Now() + target.timeout))) {
    return absl::UnavailableError(absl::StrFormat("%s: no P4Runtime server answered within %s",
                                                  s->Who(), absl::FormatDuration(target.timeout)));
  }
  s->stub_ = p4::v1::P4Runtime::NewStub(s->channel_);
  if (absl::Status st = s->Arbitrate(); !st.ok()) return st;
  return s;
}

absl::Status P4RuntimeSwitch::Arbitrate() {
  stream_ = stub_->StreamChannel(&stream_context_);
  p4::v1::StreamMessageRequest request;
  p4::v1::MasterArbitrationUpdate* a = request.mutable_arbitration();
  a->set_device_id(target_.device_id);
  *a->mutable_election_id() = ElectionId();
  if (!stream_->Write(request)) {
    return absl::UnavailableError(absl::StrCat(Who(), ": the arbitration stream closed at once"));
  }
  reader_ = std::thread([this] { ReadStream(); });
  std::unique_lock<std::mutex> lock(mu_);
  if (!answered_.wait_for(lock, absl::ToChronoNanoseconds(target_.timeout),
                          [&] { return arbitrated_ || ended_; })) {
    return absl::DeadlineExceededError(absl::StrFormat("%s: no arbitration answer within %s", Who(),
                                                       absl::FormatDuration(target_.timeout)));
  }
  if (!primary_) return absl::FailedPreconditionError(absl::StrCat(Who(), ": ", why_));
  return absl::OkStatus();
}

void P4RuntimeSwitch::ReadStream() {
  p4::v1::StreamMessageResponse response;
  while (stream_->Read(&response)) {
    if (!response.has_arbitration()) continue;  // digests, packet-ins: none asked for
    const auto& a = response.arbitration();
    std::lock_guard<std::mutex> lock(mu_);
    arbitrated_ = true;
    primary_ = a.status().code() == 0;  // google.rpc.Code OK
    if (!primary_) {
      why_ =
          absl::StrFormat("another controller is primary (election id %s; ours is %s, lower): %s",
                          Id(a.election_id()), Id(ElectionId()), a.status().message());
    }
    answered_.notify_all();
  }
  const grpc::Status st = stream_->Finish();
  std::lock_guard<std::mutex> lock(mu_);
  const bool was_primary = primary_;
  ended_ = true;
  primary_ = false;
  // A refusal already says why; a primary that loses its stream says so.
  if (why_.empty() || was_primary) {
    why_ = absl::StrFormat("the P4Runtime stream ended (%s: %s)", Code(st.error_code()),
                           st.error_message());
  }
  answered_.notify_all();
}

P4RuntimeSwitch::~P4RuntimeSwitch() {
  if (stream_ != nullptr) {
    stream_->WritesDone();
    stream_context_.TryCancel();
  }
  if (reader_.joinable()) reader_.join();
}

bool P4RuntimeSwitch::primary() const {
  std::lock_guard<std::mutex> lock(mu_);
  return primary_;
}

absl::Status P4RuntimeSwitch::Lost() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (primary_) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(Who(), ": not primary: ", why_));
}

absl::Status P4RuntimeSwitch::SetPipeline(const P4InfoIndex& info, const std::string& device_config,
                                          uint64_t cookie) {
  if (absl::Status s = Lost(); !s.ok()) return s;
  p4::v1::SetForwardingPipelineConfigRequest request;
  request.set_device_id(target_.device_id);
  *request.mutable_election_id() = ElectionId();
  request.set_action(p4::v1::SetForwardingPipelineConfigRequest::VERIFY_AND_COMMIT);
  *request.mutable_config()->mutable_p4info() = info.p4info();
  request.mutable_config()->set_p4_device_config(device_config);
  request.mutable_config()->mutable_cookie()->set_cookie(cookie);
  p4::v1::SetForwardingPipelineConfigResponse response;
  grpc::ClientContext context;
  SetDeadline(context);
  const grpc::Status st = stub_->SetForwardingPipelineConfig(&context, request, &response);
  if (!st.ok()) {
    return absl::Status(ToAbsl(st.error_code()),
                        absl::StrFormat("%s: SetForwardingPipelineConfig of %s: %s: %s", Who(),
                                        info.what(), Code(st.error_code()), st.error_message()));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::optional<uint64_t>> P4RuntimeSwitch::PipelineCookie() {
  p4::v1::GetForwardingPipelineConfigRequest request;
  request.set_device_id(target_.device_id);
  request.set_response_type(p4::v1::GetForwardingPipelineConfigRequest::COOKIE_ONLY);
  p4::v1::GetForwardingPipelineConfigResponse response;
  grpc::ClientContext context;
  SetDeadline(context);
  const grpc::Status st = stub_->GetForwardingPipelineConfig(&context, request, &response);
  // A switch without a program answers FAILED_PRECONDITION, "No forwarding
  // pipeline config set for this device" (BMv2's PI server), or with no
  // config at all. The code alone says too little: other servers give it
  // for other faults (an unknown device, say), and reading those as "no
  // program" would commit over a running one.
  if (st.error_code() == grpc::StatusCode::FAILED_PRECONDITION &&
      absl::StrContains(absl::AsciiStrToLower(st.error_message()), "pipeline")) {
    return std::nullopt;
  }
  if (!st.ok()) {
    return absl::Status(ToAbsl(st.error_code()),
                        absl::StrFormat("%s: GetForwardingPipelineConfig: %s: %s", Who(),
                                        Code(st.error_code()), st.error_message()));
  }
  if (!response.has_config() || !response.config().has_cookie()) return std::nullopt;
  return response.config().cookie().cookie();
}

absl::Status P4RuntimeSwitch::Write(const std::vector<p4::v1::Update>& updates,
                                    const P4InfoIndex& info) {
  if (updates.empty()) return absl::OkStatus();
  if (absl::Status s = Lost(); !s.ok()) return s;
  p4::v1::WriteRequest request;
  request.set_device_id(target_.device_id);
  *request.mutable_election_id() = ElectionId();
  for (const auto& u : updates) *request.add_updates() = u;
  p4::v1::WriteResponse response;
  grpc::ClientContext context;
  SetDeadline(context);
  const grpc::Status st = stub_->Write(&context, request, &response);
  if (st.ok()) return absl::OkStatus();
  // The per-update errors travel in google.rpc.Status details, one
  // p4.v1.Error per update, in order.
  std::string refused;
  google::rpc::Status details;
  if (details.ParseFromString(st.error_details())) {
    for (int i = 0; i < details.details_size() && i < request.updates_size(); ++i) {
      p4::v1::Error e;
      if (!details.details(i).UnpackTo(&e) || e.canonical_code() == 0) continue;
      const p4::v1::Entity& entity = request.updates(i).entity();
      const std::string what =
          entity.has_table_entry() ? DescribeEntry(entity.table_entry(), info)
          : entity.has_packet_replication_engine_entry()
              ? absl::StrCat("multicast group ", entity.packet_replication_engine_entry()
                                                     .multicast_group_entry()
                                                     .multicast_group_id())
              : "an entity";
      absl::StrAppendFormat(&refused, "%s%s: %s (%s)", refused.empty() ? "" : "; ", what,
                            e.message(), Code(static_cast<grpc::StatusCode>(e.canonical_code())));
    }
  }
  return absl::Status(
      ToAbsl(st.error_code()),
      absl::StrFormat("%s: Write of %d updates refused: %s%s", Who(), request.updates_size(),
                      refused.empty() ? st.error_message() : refused,
                      refused.empty() ? absl::StrCat(" (", Code(st.error_code()), ")") : ""));
}

absl::StatusOr<std::vector<p4::v1::Entity>> P4RuntimeSwitch::ReadAll(const P4InfoIndex& info) {
  p4::v1::ReadRequest request;
  request.set_device_id(target_.device_id);
  // Every table's entries (table_id 0: all tables), each table's default
  // action, and every multicast group (group id 0: all).
  request.add_entities()->mutable_table_entry();
  for (const auto& t : info.p4info().tables()) {
    p4::v1::TableEntry* d = request.add_entities()->mutable_table_entry();
    d->set_table_id(t.preamble().id());
    d->set_is_default_action(true);
  }
  request.add_entities()
      ->mutable_packet_replication_engine_entry()
      ->mutable_multicast_group_entry();
  grpc::ClientContext context;
  SetDeadline(context);
  auto reader = stub_->Read(&context, request);
  std::vector<p4::v1::Entity> out;
  p4::v1::ReadResponse response;
  while (reader->Read(&response)) {
    for (const auto& e : response.entities()) out.push_back(e);
  }
  const grpc::Status st = reader->Finish();
  if (!st.ok()) {
    return absl::Status(
        ToAbsl(st.error_code()),
        absl::StrFormat("%s: Read: %s: %s", Who(), Code(st.error_code()), st.error_message()));
  }
  return out;
}

}  // namespace grid::p4rt
