// One P4Runtime switch as grid-controller drives it (docs/deploy.md,
// "P4Runtime"): a gRPC channel, the stream that makes this client the
// primary controller (arbitration by election id), and the calls a job's
// publication needs: SetForwardingPipelineConfig, Write and Read. Every call
// has a deadline; losing the stream (the switch went away, or a controller
// with a higher election id took over) fails the next call with the reason
// instead of hanging it. Errors name the switch and its address.
#ifndef GRID_P4RUNTIME_CLIENT_H_
#define GRID_P4RUNTIME_CLIENT_H_

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/numeric/int128.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "p4/v1/p4runtime.grpc.pb.h"
#include "p4runtime/p4info.h"

namespace grid::p4rt {

struct SwitchTarget {
  std::string name;     // the topology's name of the switch ("S1"), for errors
  std::string address;  // its P4Runtime server, HOST:PORT
  uint64_t device_id = 0;
  absl::uint128 election_id = 1;  // the higher is primary
  absl::Duration timeout = absl::Seconds(10);
};

class P4RuntimeSwitch {
 public:
  // Connects and arbitrates. FailedPrecondition if another controller is
  // primary (its election id is named); Unavailable if the switch does not
  // answer within the timeout.
  static absl::StatusOr<std::unique_ptr<P4RuntimeSwitch>> Connect(const SwitchTarget& target);
  ~P4RuntimeSwitch();
  P4RuntimeSwitch(const P4RuntimeSwitch&) = delete;
  P4RuntimeSwitch& operator=(const P4RuntimeSwitch&) = delete;

  // VERIFY_AND_COMMIT of `info`'s program with its target's device config
  // (BMv2: the compiled JSON), tagged with `cookie` (ProgramCookie) so a
  // later controller can tell the program is there. Committing resets
  // every register and removes every table entry and multicast group.
  absl::Status SetPipeline(const P4InfoIndex& info, const std::string& device_config,
                           uint64_t cookie);
  // The cookie of the program the switch runs; nullopt when it runs none.
  absl::StatusOr<std::optional<uint64_t>> PipelineCookie();
  // One Write of `updates`, atomic as the target allows. A refusal names the
  // update the switch refused (its table and key, by `info`) and gRPC's code.
  absl::Status Write(const std::vector<p4::v1::Update>& updates, const P4InfoIndex& info);
  // Every table entry (default actions included) and multicast group the
  // switch holds.
  absl::StatusOr<std::vector<p4::v1::Entity>> ReadAll(const P4InfoIndex& info);

  const SwitchTarget& target() const { return target_; }
  // Whether the stream still says this client is primary.
  bool primary() const;

 private:
  explicit P4RuntimeSwitch(SwitchTarget target) : target_(std::move(target)) {}
  absl::Status Arbitrate();
  void ReadStream();          // the stream's reader thread
  absl::Status Lost() const;  // why this client may no longer write, or OK
  std::string Who() const;    // "switch S1 at 127.0.0.1:9559"
  void SetDeadline(grpc::ClientContext& context) const;
  p4::v1::Uint128 ElectionId() const;

  SwitchTarget target_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<p4::v1::P4Runtime::Stub> stub_;
  grpc::ClientContext stream_context_;
  std::unique_ptr<
      grpc::ClientReaderWriter<p4::v1::StreamMessageRequest, p4::v1::StreamMessageResponse>>
      stream_;
  std::thread reader_;
  mutable std::mutex mu_;
  std::condition_variable answered_;
  bool arbitrated_ = false;  // under mu_: an arbitration answer came
  bool primary_ = false;     // under mu_
  bool ended_ = false;       // under mu_: the stream closed
  std::string why_;          // under mu_: why it is not (or no longer) primary
};

}  // namespace grid::p4rt

#endif  // GRID_P4RUNTIME_CLIENT_H_
