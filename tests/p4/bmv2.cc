#include "p4/bmv2.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace grid::testing {
namespace {

using Clock = std::chrono::steady_clock;

// simple_switch waits this long before it reads the input files; the tables
// must be loaded by then.
constexpr int kWaitSeconds = 3;
constexpr size_t kMaxInputs = 1000;

#pragma pack(push, 1)
struct PcapFileHeader {
  uint32_t magic = 0xa1b2c3d4;
  uint16_t major = 2, minor = 4;
  int32_t zone = 0;
  uint32_t sigfigs = 0, snaplen = 65535, linktype = 1;  // Ethernet
};
struct PcapRecord {
  uint32_t seconds, microseconds, captured, length;
};
#pragma pack(pop)

bool Executable(const std::string& path) {
  return !path.empty() && ::access(path.c_str(), X_OK) == 0;
}

// A free TCP port on loopback (for the switch's thrift server).
int FreePort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

bool Accepts(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
  ::close(fd);
  return ok;
}

// Starts `argv` in `dir` with stdin from `in` (or /dev/null) and stdout and
// stderr to `log`.
pid_t Spawn(const std::vector<std::string>& argv, const std::string& dir, const std::string& in,
            const std::string& log) {
  const pid_t pid = ::fork();
  if (pid != 0) return pid;
  if (::chdir(dir.c_str()) != 0) ::_exit(126);
  const int in_fd = ::open(in.empty() ? "/dev/null" : in.c_str(), O_RDONLY);
  const int out_fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  ::dup2(in_fd, 0);
  ::dup2(out_fd, 1);
  ::dup2(out_fd, 2);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  ::execv(args[0], args.data());
  ::_exit(127);
}

// Waits for `pid` to exit, at most `timeout`; true with its status if it did.
bool WaitExit(pid_t pid, std::chrono::milliseconds timeout, int* status) {
  const auto end = Clock::now() + timeout;
  while (Clock::now() < end) {
    if (::waitpid(pid, status, WNOHANG) == pid) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Runs simple_switch_CLI on `commands`; its output in `log`.
absl::StatusOr<std::string> Cli(const Bmv2Tools& tools, int thrift_port, const std::string& dir,
                                const std::string& name, const std::string& commands) {
  const std::string in = dir + "/" + name + ".txt", log = dir + "/" + name + ".log";
  std::ofstream(in) << commands;
  const pid_t pid = Spawn({tools.cli, "--thrift-port", std::to_string(thrift_port)}, dir, in, log);
  int status = 0;
  if (!WaitExit(pid, std::chrono::seconds(60), &status)) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
    return absl::DeadlineExceededError("simple_switch_CLI did not finish in 60 s (" + log + ")");
  }
  const std::string output = ReadFile(log);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || output.find("Error") != std::string::npos ||
      output.find("Invalid") != std::string::npos ||
      output.find("Traceback") != std::string::npos) {
    return absl::InternalError(
        absl::StrFormat("simple_switch_CLI failed on %s: %s", in, output.substr(0, 2000)));
  }
  return output;
}

size_t CountOutputs(const std::string& dir, int ports) {
  size_t n = 0;
  for (int p = 0; p < ports; ++p) {
    auto frames = ReadPcap(absl::StrFormat("%s/p%d_out.pcap", dir, p));
    if (frames.ok()) n += frames->size();
  }
  return n;
}

}  // namespace

absl::Status WritePcap(const std::string& path,
                       const std::vector<std::pair<uint64_t, const Frame*>>& records) {
  std::ofstream out(path, std::ios::binary);
  const PcapFileHeader header;
  out.write(reinterpret_cast<const char*>(&header), sizeof(header));
  for (const auto& [us, frame] : records) {
    const PcapRecord r{static_cast<uint32_t>(us / 1000000), static_cast<uint32_t>(us % 1000000),
                       static_cast<uint32_t>(frame->size()), static_cast<uint32_t>(frame->size())};
    out.write(reinterpret_cast<const char*>(&r), sizeof(r));
    out.write(reinterpret_cast<const char*>(frame->data()), static_cast<long>(frame->size()));
  }
  if (!out) return absl::InternalError("cannot write " + path);
  return absl::OkStatus();
}

absl::StatusOr<std::vector<Frame>> ReadPcap(const std::string& path,
                                            std::vector<uint64_t>* times_us) {
  const std::string bytes = ReadFile(path);
  std::vector<Frame> frames;
  if (bytes.size() < sizeof(PcapFileHeader)) {
    return absl::NotFoundError("no pcap file header in " + path);
  }
  size_t at = sizeof(PcapFileHeader);
  while (at + sizeof(PcapRecord) <= bytes.size()) {
    PcapRecord r;
    std::memcpy(&r, bytes.data() + at, sizeof(r));
    at += sizeof(r);
    if (at + r.captured > bytes.size()) break;  // being written
    frames.emplace_back(bytes.begin() + static_cast<long>(at),
                        bytes.begin() + static_cast<long>(at + r.captured));
    if (times_us != nullptr) times_us->push_back(uint64_t{r.seconds} * 1000000 + r.microseconds);
    at += r.captured;
  }
  return frames;
}

std::string Bmv2Tools::Missing() const {
  if (!Executable(simple_switch)) {
    return "simple_switch not found: put ../shared/p4tools/bin on PATH (README.md, 'P4 "
           "toolchain') and configure again";
  }
  if (!Executable(cli)) return "simple_switch_CLI not found next to simple_switch";
  if (::access(json.c_str(), R_OK) != 0) {
    return "no compiled v1model program at " + json +
           " (the test p4_compile_v1model makes it; p4c-bm2-ss may be missing)";
  }
  return "";
}

absl::StatusOr<Bmv2Run> RunBmv2(const Bmv2Tools& tools, const std::string& dir, int ports,
                                const std::string& commands, const std::vector<Packet>& inputs,
                                size_t expected) {
  if (inputs.size() > kMaxInputs) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%d inputs; simple_switch's input buffer takes %d", inputs.size(), kMaxInputs));
  }
  std::error_code error;
  std::filesystem::remove_all(dir, error);
  std::filesystem::create_directories(dir, error);
  if (error) return absl::InternalError("cannot create " + dir + ": " + error.message());
  std::vector<std::vector<std::pair<uint64_t, const Frame*>>> by_port(ports);
  for (size_t i = 0; i < inputs.size(); ++i) {
    by_port[inputs[i].port].push_back({1000000 + i, &inputs[i].frame});
  }
  std::vector<std::string> argv = {tools.simple_switch, "--use-files", std::to_string(kWaitSeconds),
                                   "--thrift-port"};
  const int thrift_port = FreePort();
  argv.push_back(std::to_string(thrift_port));
  for (int p = 0; p < ports; ++p) {
    if (absl::Status s = WritePcap(absl::StrFormat("%s/p%d_in.pcap", dir, p), by_port[p]); !s.ok())
      return s;
    argv.push_back("-i");
    argv.push_back(absl::StrFormat("%d@p%d", p, p));
  }
  argv.push_back(std::filesystem::absolute(tools.json).string());  // it runs in `dir`
  const auto start = Clock::now();
  const pid_t sw = Spawn(argv, dir, "", dir + "/switch.log");
  auto stop = [&] {
    int status = 0;
    ::kill(sw, SIGTERM);
    if (!WaitExit(sw, std::chrono::seconds(5), &status)) {
      ::kill(sw, SIGKILL);
      ::waitpid(sw, &status, 0);
    }
  };
  while (!Accepts(thrift_port)) {
    int status = 0;
    if (::waitpid(sw, &status, WNOHANG) == sw || Clock::now() - start > std::chrono::seconds(10)) {
      stop();
      return absl::UnavailableError("simple_switch did not start: " +
                                    ReadFile(dir + "/switch.log").substr(0, 2000));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  // Queues deep enough that no burst of this test is tail-dropped.
  auto loaded = Cli(tools, thrift_port, dir, "tables", commands + "set_queue_depth 10000\n");
  if (!loaded.ok()) {
    stop();
    return loaded.status();
  }
  if (Clock::now() - start > std::chrono::milliseconds(kWaitSeconds * 1000 - 200)) {
    stop();
    return absl::DeadlineExceededError(absl::StrFormat(
        "loading the tables took longer than simple_switch's %d s wait", kWaitSeconds));
  }
  // Until the expected frames are out and nothing more comes for a while.
  size_t seen = 0;
  auto last_change = Clock::now();
  while (true) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    const size_t now = CountOutputs(dir, ports);
    if (now != seen) {
      seen = now;
      last_change = Clock::now();
    }
    const auto quiet = Clock::now() - last_change;
    const bool started = Clock::now() - start > std::chrono::seconds(kWaitSeconds);
    if (started && seen >= expected && quiet > std::chrono::milliseconds(500)) break;
    if (started && quiet > std::chrono::seconds(5)) break;
  }
  std::string reads;
  for (int r = 1; r < sw::kNumDrops; ++r)
    absl::StrAppend(&reads, "counter_read GridIngress.drops ", r, "\n");
  auto counters = Cli(tools, thrift_port, dir, "counters", reads);
  stop();
  if (!counters.ok()) return counters.status();
  Bmv2Run run;
  const std::regex line("GridIngress\\.drops\\[(\\d+)\\]= \\((\\d+) bytes, (\\d+) packets\\)");
  for (auto it = std::sregex_iterator(counters->begin(), counters->end(), line);
       it != std::sregex_iterator(); ++it) {
    const int reason = std::stoi((*it)[1]);
    if (reason > 0 && reason < sw::kNumDrops) run.drops[reason] = std::stoull((*it)[3]);
  }
  run.first_out_us = UINT64_MAX;
  for (int p = 0; p < ports; ++p) {
    std::vector<uint64_t> times;
    auto frames = ReadPcap(absl::StrFormat("%s/p%d_out.pcap", dir, p), &times);
    run.out.push_back(frames.ok() ? *std::move(frames) : std::vector<Frame>{});
    for (uint64_t t : times) {
      run.first_out_us = std::min(run.first_out_us, t);
      run.last_out_us = std::max(run.last_out_us, t);
    }
  }
  return run;
}

}  // namespace grid::testing
