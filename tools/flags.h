// A small --key=value parser for the command-line tools: unknown flags and
// malformed values are one-line errors (exit status 2), never ignored.
#ifndef GRID_TOOLS_FLAGS_H_
#define GRID_TOOLS_FLAGS_H_

#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"

namespace grid::tools {

class Flags {
 public:
  Flags(const char* program, int argc, char** argv, std::set<std::string> known, const char* usage)
      : program_(program) {
    for (int i = 1; i < argc; ++i) {
      std::string arg = argv[i];
      if (arg == "--help" || arg == "-h") {
        std::printf("%s", usage);
        std::exit(0);
      }
      if (arg.rfind("--", 0) != 0) Fail("unexpected argument \"" + arg + "\"");
      const size_t eq = arg.find('=');
      const std::string key = arg.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
      if (!known.count(key)) Fail("unknown flag --" + key);
      values_[key] = eq == std::string::npos ? "true" : arg.substr(eq + 1);
    }
  }

  // A usage error: exit status 2.
  [[noreturn]] void Fail(const std::string& message) const {
    std::fprintf(stderr, "%s: %s (try --help)\n", program_, message.c_str());
    std::exit(2);
  }
  // A failure of the work itself: exit status 1.
  [[noreturn]] void Error(const std::string& message) const {
    std::fprintf(stderr, "%s: %s\n", program_, message.c_str());
    std::exit(1);
  }
  // A failed Status from the work the flags asked for: what the user gave
  // (InvalidArgument, NotFound, OutOfRange) is a usage error, anything else
  // (a store that never answered, a transport that did not open) a failure,
  // which --help would not fix.
  [[noreturn]] void Exit(const absl::Status& status) const {
    const std::string message(status.message());
    if (absl::IsInvalidArgument(status) || absl::IsNotFound(status) || absl::IsOutOfRange(status)) {
      Fail(message);
    }
    Error(message);
  }

  std::optional<std::string> Get(const std::string& key) const {
    auto it = values_.find(key);
    if (it == values_.end()) return std::nullopt;
    return it->second;
  }

  std::string Required(const std::string& key) const {
    auto v = Get(key);
    if (!v || v->empty()) Fail("--" + key + " is required");
    return *v;
  }

  std::string String(const std::string& key, const std::string& fallback) const {
    return Get(key).value_or(fallback);
  }

  int64_t Int(const std::string& key, int64_t fallback, int64_t lo, int64_t hi) const {
    auto v = Get(key);
    if (!v) return fallback;
    int64_t out = 0;
    if (!absl::SimpleAtoi(*v, &out) || out < lo || out > hi) {
      Fail("--" + key + "=" + *v + ": expected a whole number in [" + std::to_string(lo) + ", " +
           std::to_string(hi) + "]");
    }
    return out;
  }

  bool Bool(const std::string& key) const {
    auto v = Get(key);
    if (!v) return false;
    if (*v == "true" || *v == "1") return true;
    if (*v == "false" || *v == "0") return false;
    Fail("--" + key + "=" + *v + ": expected true or false");
  }

 private:
  const char* program_;
  std::map<std::string, std::string> values_;
};

}  // namespace grid::tools

#endif  // GRID_TOOLS_FLAGS_H_
