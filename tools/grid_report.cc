// grid-report DIR [--png=OUT_DIR]: where a traced run's time went, and what
// limited it (docs/observability.md). DIR is a GRID_TRACE directory: every
// rank's, switch's and root's trace of one run.
#include <cstdio>
#include <string>

#include "tools/flags.h"
#include "tools/report.h"

namespace {

constexpr const char* kUsage =
    "usage: grid-report DIR [--png=OUT_DIR]\n"
    "  DIR: the GRID_TRACE directory of one run (rank-*.json, switch-*.json, root-*.json)\n"
    "  --png: a timeline per rank, OUT_DIR/rank-R.png (gnuplot), with its data beside it\n";

}  // namespace

int main(int argc, char** argv) {
  const std::string first = argc > 1 ? argv[1] : "";
  if (first == "--help" || first == "-h") {
    std::fputs(kUsage, stdout);
    return 0;
  }
  if (first.empty() || first.rfind("--", 0) == 0) {
    std::fprintf(stderr, "grid-report: the trace directory comes first\n%s", kUsage);
    return 2;
  }
  // The flags after DIR (Flags skips its first argument, here DIR).
  grid::tools::Flags flags("grid-report", argc - 1, argv + 1, {"png"}, kUsage);
  const std::string& dir = first;
  auto run = grid::tools::ReadRun(dir);
  if (!run.ok()) flags.Exit(run.status());
  const grid::tools::Diagnosis d = grid::tools::Diagnose(*run);
  std::fputs(grid::tools::FormatReport(*run, d).c_str(), stdout);
  if (const std::string png = flags.String("png", ""); !png.empty()) {
    if (absl::Status s = grid::tools::PlotRanks(*run, png); !s.ok()) flags.Exit(s);
    std::printf("timelines: %s/rank-*.png\n", png.c_str());
  }
  return 0;
}
