#include "plot.h"

#include <sys/wait.h>

#include <cstdio>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace grid::bench {

absl::Status PlotBusbw(const std::string& png, const std::string& title,
                       const std::vector<int64_t>& sizes, const std::vector<PlotSeries>& series) {
  const std::string dat = png + ".dat";
  {
    std::ofstream out(dat);
    out << "# bytes";
    for (const PlotSeries& s : series) out << " " << s.name << "_busbw_GBps";
    out << "\n";
    for (size_t k = 0; k < sizes.size(); ++k) {
      out << sizes[k];
      for (const PlotSeries& s : series) out << absl::StrFormat(" %.6g", s.busbw[k]);
      out << "\n";
    }
    if (!out) return absl::InternalError(absl::StrCat("--plot: cannot write ", dat));
  }
  std::string script = absl::StrFormat(
      "set terminal pngcairo size 800,500\nset output '%s'\nset title '%s' noenhanced\n"
      "set logscale x 2\nset format x '%%.0b %%BB'\nset xlabel 'size'\n"
      "set ylabel 'busbw (GB/s)'\nset key top left\nset grid\nplot ",
      png, title);
  for (size_t i = 0; i < series.size(); ++i) {
    absl::StrAppendFormat(&script, "%s'%s' using 1:%d with linespoints lw 2 title '%s'",
                          i ? ", " : "", dat, i + 2, series[i].name);
  }
  script += "\n";
  FILE* gnuplot = popen("gnuplot 2>&1", "w");
  if (gnuplot == nullptr) return absl::UnavailableError("--plot: cannot start gnuplot");
  std::fwrite(script.data(), 1, script.size(), gnuplot);
  const int status = pclose(gnuplot);
  if (status != 0) {
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return absl::UnavailableError(
        absl::StrFormat("--plot: gnuplot exited %d drawing %s (127: not installed; apt-get install "
                        "gnuplot-nox); the numbers are in %s",
                        code, png, dat));
  }
  return absl::OkStatus();
}

}  // namespace grid::bench
