// allreduce_perf --plot: busbw against size, one line per column, drawn by
// gnuplot (Debian's gnuplot-nox) into a PNG, with the numbers beside it in
// FILE.dat so the figure can be redrawn or read.
#ifndef GRID_BENCH_PLOT_H_
#define GRID_BENCH_PLOT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace grid::bench {

struct PlotSeries {
  std::string name;           // "grid", "gloo", ...
  std::vector<double> busbw;  // GB/s, one per size
};

// Writes `png` and `png`.dat; an error names gnuplot's failure or a file
// that could not be written.
absl::Status PlotBusbw(const std::string& png, const std::string& title,
                       const std::vector<int64_t>& sizes, const std::vector<PlotSeries>& series);

}  // namespace grid::bench

#endif  // GRID_BENCH_PLOT_H_
