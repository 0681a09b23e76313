// grid-controller --switch=bmv2: loading every switch's table entries into
// its running simple_switch through simple_switch_CLI (tools/emulation.h).
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/str_format.h"
#include "tools/emulation.h"

extern char** environ;

namespace grid::tools {
namespace {

bool Accepts(const std::string& host, int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  ::inet_pton(AF_INET, host.c_str(), &a.sin_addr);
  const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
  ::close(fd);
  return ok;
}

// Runs `cli --thrift-port port` with `commands` on its stdin; its output.
absl::StatusOr<std::string> RunCli(const std::string& cli, int port, const std::string& commands) {
  char in_path[] = "/tmp/grid-bmv2-XXXXXX";
  const int in_fd = ::mkstemp(in_path);
  if (in_fd < 0) return absl::InternalError("cannot create a temporary file for the CLI");
  const std::string out_path = std::string(in_path) + ".out";
  { std::ofstream(in_path) << commands; }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, in_path, O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0600);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  const std::string port_text = std::to_string(port);
  std::vector<char*> argv = {const_cast<char*>(cli.c_str()), const_cast<char*>("--thrift-port"),
                             const_cast<char*>(port_text.c_str()), nullptr};
  pid_t pid = 0;
  const int spawned = ::posix_spawnp(&pid, cli.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(in_fd);
  int status = 0;
  if (spawned == 0) ::waitpid(pid, &status, 0);
  std::stringstream output;
  output << std::ifstream(out_path).rdbuf();
  std::error_code ignored;
  std::filesystem::remove(in_path, ignored);
  std::filesystem::remove(out_path, ignored);
  if (spawned != 0) {
    return absl::NotFoundError(absl::StrFormat("cannot run %s: %s", cli, std::strerror(spawned)));
  }
  const std::string text = output.str();
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || text.find("Error") != std::string::npos ||
      text.find("Invalid") != std::string::npos || text.find("Traceback") != std::string::npos) {
    return absl::InternalError(text.substr(0, 1500));
  }
  return text;
}

}  // namespace

absl::Status LoadBmv2(const Fabric& f, const EmulationOptions& o, const std::string& cli,
                      absl::Duration wait) {
  int index = 0;
  for (const auto& [node, config] : f.switches) {
    const sw::SwitchConfig* c = &config;
    const int port = o.bmv2_thrift_base + index++;
    auto entries = sw::ConfigToP4Entries(*c);
    if (!entries.ok()) return entries.status();
    auto commands = sw::P4EntriesToBmv2Commands(*entries);
    if (!commands.ok()) return commands.status();
    const absl::Time deadline = absl::Now() + wait;
    while (!Accepts("127.0.0.1", port)) {
      if (absl::Now() > deadline) {
        return absl::DeadlineExceededError(
            absl::StrFormat("switch \"%s\": no simple_switch answers on thrift port %d after %s",
                            c->name, port, absl::FormatDuration(wait)));
      }
      absl::SleepFor(absl::Milliseconds(50));
    }
    auto loaded = RunCli(cli, port, *commands);
    if (!loaded.ok()) {
      return absl::Status(loaded.status().code(),
                          absl::StrFormat("switch \"%s\" (thrift port %d): loading its tables: %s",
                                          c->name, port, loaded.status().message()));
    }
  }
  return absl::OkStatus();
}

}  // namespace grid::tools
