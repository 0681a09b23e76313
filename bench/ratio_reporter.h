// Prints Google Benchmark results as ratios to baselines measured in the same
// run: these machines are shared and noisy, so absolute figures mean little.
// A benchmark named "GROUP/MEMBER/ARGS" (or "MEMBER/ARGS") is compared with
// the baselines of the same GROUP and ARGS.
#ifndef GRID_BENCH_RATIO_REPORTER_H_
#define GRID_BENCH_RATIO_REPORTER_H_

#include <benchmark/benchmark.h>

#include <cstdio>
#include <map>
#include <string>
#include <vector>

namespace grid::bench {

// Whether a run has no figures: Google Benchmark 1.7 (Debian 12) says so
// with error_occurred, 1.8 and later (Debian 13 has 1.9) with skipped.
template <typename R>
bool Failed(const R& run) {
  if constexpr (requires { run.error_occurred; }) {
    return run.error_occurred;
  } else {
    return run.skipped != decltype(run.skipped){};  // NotSkipped is 0
  }
}

class RatioReporter : public benchmark::ConsoleReporter {
 public:
  // kRate compares bytes_per_second (higher is better); kTime compares real
  // time per iteration (a ratio above 1 is slower than the baseline).
  enum class Measure { kRate, kTime };

  RatioReporter(Measure measure, std::vector<std::string> baselines)
      : measure_(measure), baselines_(std::move(baselines)) {}

  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& run : runs) {
      if (Failed(run)) {
        ++errors_;
        continue;
      }
      // With --benchmark_repetitions the median wins; it is reported after
      // the repetitions it summarizes.
      const bool median = run.run_type == Run::RT_Aggregate && run.aggregate_name == "median";
      if (run.run_type == Run::RT_Aggregate && !median) continue;
      double value = 0;
      if (measure_ == Measure::kRate) {
        auto it = run.counters.find("bytes_per_second");
        if (it == run.counters.end()) continue;
        value = it->second.value;
      } else {
        value = run.GetAdjustedRealTime();
      }
      const std::string& name = run.run_name.function_name;
      const size_t slash = name.rfind('/');
      const std::string group = slash == std::string::npos ? "" : name.substr(0, slash);
      const std::string member = slash == std::string::npos ? name : name.substr(slash + 1);
      results_[{group, run.run_name.args}][member] = value;
    }
  }

  // What main returns: 1 when a run ended with SkipWithError (a wrong
  // result, a failed setup), so that the smoke tests catch it.
  int ExitCode(const char* tool) const {
    if (errors_ == 0) return 0;
    std::fprintf(stderr, "%s: %d run(s) failed\n", tool, errors_);
    return 1;
  }

  void PrintRatios() const {
    std::printf("\n%-12s %-10s %-26s %12s", "group", "args", "benchmark",
                measure_ == Measure::kRate ? "GB/s" : "time");
    for (const std::string& b : baselines_) std::printf(" %14s", ("x " + b).c_str());
    std::printf("\n");
    for (const auto& [key, members] : results_) {
      for (const auto& [member, value] : members) {
        std::printf("%-12s %-10s %-26s %12.4g", key.first.c_str(), key.second.c_str(),
                    member.c_str(), measure_ == Measure::kRate ? value / 1e9 : value);
        for (const std::string& b : baselines_) {
          auto it = members.find(b);
          if (it == members.end() || it->second == 0) {
            std::printf(" %14s", "-");
          } else {
            std::printf(" %14.3f", value / it->second);
          }
        }
        std::printf("\n");
      }
    }
  }

 private:
  // Groups in name order; numeric arguments in numeric order (shorter first).
  struct KeyOrder {
    bool operator()(const std::pair<std::string, std::string>& a,
                    const std::pair<std::string, std::string>& b) const {
      if (a.first != b.first) return a.first < b.first;
      if (a.second.size() != b.second.size()) return a.second.size() < b.second.size();
      return a.second < b.second;
    }
  };

  Measure measure_;
  std::vector<std::string> baselines_;
  int errors_ = 0;
  std::map<std::pair<std::string, std::string>, std::map<std::string, double>, KeyOrder> results_;
};

}  // namespace grid::bench

#endif  // GRID_BENCH_RATIO_REPORTER_H_
