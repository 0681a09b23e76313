#include "trace/chrome.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace grid::trace {
namespace {

std::string Quote(const char* s) { return nlohmann::json(s == nullptr ? "" : s).dump(); }

// Chrome's ts is in microseconds; ours in ns, kept to the ns.
std::string Micros(int64_t ns) {
  const char* sign = ns < 0 ? "-" : "";
  const uint64_t a = ns < 0 ? 0 - static_cast<uint64_t>(ns) : static_cast<uint64_t>(ns);
  return absl::StrFormat("%s%d.%03d", sign, a / 1000, a % 1000);
}

class Writer {
 public:
  explicit Writer(int pid) : pid_(pid) {}
  void Add(const Event& e, size_t tid) {
    std::string line =
        absl::StrFormat(R"({"name":%s,"cat":%s,"ph":"%c","ts":%s,"pid":%d,"tid":%d)", Quote(e.name),
                        Quote(e.category), static_cast<char>(e.phase), Micros(e.ts_ns), pid_, tid);
    if (e.phase == Phase::kInstant) absl::StrAppend(&line, R"(,"s":"t")");
    if (e.phase == Phase::kAsyncBegin || e.phase == Phase::kAsyncEnd) {
      absl::StrAppendFormat(&line, R"(,"id":"0x%x")", e.id);
    }
    if (e.args[0].name != nullptr) {
      absl::StrAppend(&line, R"(,"args":{)");
      for (int i = 0; i < Event::kMaxArgs && e.args[i].name != nullptr; ++i) {
        absl::StrAppendFormat(&line, "%s%s:%d", i > 0 ? "," : "", Quote(e.args[i].name),
                              e.args[i].value);
      }
      absl::StrAppend(&line, "}");
    }
    absl::StrAppend(&line, "}");
    Line(line);
  }
  void Line(const std::string& line) { absl::StrAppend(&out_, out_.empty() ? "" : ",\n", line); }
  std::string& out() { return out_; }

 private:
  int pid_;
  std::string out_;
};

}  // namespace

std::string ChromeTraceJson(const TraceProcess& process) {
  Writer w(process.pid);
  w.Line(absl::StrFormat(R"({"name":"process_name","ph":"M","pid":%d,"tid":0,"args":{"name":%s}})",
                         process.pid, Quote(process.name.c_str())));
  uint64_t dropped = 0;
  // Async slices are the process's: one still open at the end is closed at
  // the last event of any track.
  using AsyncKey = std::tuple<std::string, std::string, uint64_t>;
  std::map<AsyncKey, std::pair<Event, size_t>> open_async;
  int64_t last_ns = 0;
  for (size_t t = 0; t < process.tracks.size(); ++t) {
    const Track& track = process.tracks[t];
    w.Line(
        absl::StrFormat(R"({"name":"thread_name","ph":"M","pid":%d,"tid":%d,"args":{"name":%s}})",
                        process.pid, t, Quote(track.name.c_str())));
    const std::vector<Event> events = track.recorder->Events();
    if (events.empty()) continue;
    if (const uint64_t lost = track.recorder->dropped(); lost > 0) {
      dropped += lost;
      Event note;
      note.ts_ns = events.front().ts_ns;
      note.phase = Phase::kInstant;
      note.category = "trace";
      note.name = "trace ring full: oldest events dropped";
      note.args[0] = {"dropped", static_cast<int64_t>(lost)};
      note.args[1] = {"capacity", static_cast<int64_t>(track.recorder->capacity())};
      w.Add(note, t);
    }
    std::vector<const Event*> open;  // this track's B without their E yet
    for (const Event& e : events) {
      last_ns = std::max(last_ns, e.ts_ns);
      if (e.phase == Phase::kEnd) {
        // Its B was overwritten in the ring: left out.
        if (open.empty() || std::strcmp(open.back()->name, e.name) != 0) continue;
        open.pop_back();
      } else if (e.phase == Phase::kBegin) {
        open.push_back(&e);
      } else if (e.phase == Phase::kAsyncBegin) {
        open_async[{e.category, e.name, e.id}] = {e, t};
      } else if (e.phase == Phase::kAsyncEnd) {
        if (open_async.erase({e.category, e.name, e.id}) == 0) continue;
      }
      w.Add(e, t);
    }
    for (size_t i = open.size(); i-- > 0;) {
      Event end = *open[i];
      end.phase = Phase::kEnd;
      end.ts_ns = events.back().ts_ns;
      end.args[0] = {};
      w.Add(end, t);
    }
  }
  for (auto& [key, begun] : open_async) {
    Event end = begun.first;
    end.phase = Phase::kAsyncEnd;
    end.ts_ns = std::max(last_ns, end.ts_ns);
    end.args[0] = {"unfinished", 1};
    for (int i = 1; i < Event::kMaxArgs; ++i) end.args[i] = {};
    w.Add(end, begun.second);
  }
  return absl::StrFormat(
      "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"grid_trace\":1,\"process\":%s,\"role\":%s,"
      "\"dropped_events\":%d%s%s},\n\"traceEvents\":[\n%s\n]}\n",
      Quote(process.name.c_str()), Quote(process.role.c_str()), dropped,
      process.other_json.empty() ? "" : ",", process.other_json, w.out());
}

absl::Status WriteChromeTrace(const std::string& dir, const std::string& file,
                              const TraceProcess& process) {
  if (::mkdir(dir.c_str(), 0777) != 0 && errno != EEXIST) {
    return absl::InternalError(
        absl::StrFormat("GRID_TRACE: cannot create %s: %s", dir, std::strerror(errno)));
  }
  const std::string path = dir + "/" + file;
  const std::string text = ChromeTraceJson(process);
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) {
    return absl::InternalError(
        absl::StrFormat("GRID_TRACE: cannot write %s: %s", path, std::strerror(errno)));
  }
  const bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  if (std::fclose(f) != 0 || !ok) {
    return absl::InternalError(absl::StrFormat("GRID_TRACE: writing %s failed", path));
  }
  return absl::OkStatus();
}

std::string JsonQuote(const std::string& text) { return Quote(text.c_str()); }

std::string TraceFileName(const std::string& role, const std::string& name) {
  std::string out = role + "-";
  for (char c : name) {
    const bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '.' || c == '_' || c == '-';
    out += keep ? c : '_';
  }
  return out + ".json";
}

}  // namespace grid::trace
