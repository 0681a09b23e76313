// grid-report's timelines: a PNG per rank (gnuplot), its waits as bars on
// one row each above its window and chunks in flight.
#include <sys/stat.h>
#include <sys/wait.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "tools/report.h"

namespace grid::tools {
namespace {

constexpr const char* kWaits[] = {"window full", "slot busy", "exponent wait", "results wait"};
constexpr int kNumWaits = 4;

absl::Status Gnuplot(const std::string& script, const std::string& png) {
  FILE* gnuplot = popen("gnuplot 2>&1", "w");
  if (gnuplot == nullptr) return absl::UnavailableError("cannot start gnuplot");
  std::fwrite(script.data(), 1, script.size(), gnuplot);
  const int status = pclose(gnuplot);
  if (status == 0) return absl::OkStatus();
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return absl::UnavailableError(absl::StrFormat(
      "gnuplot exited %d drawing %s (127: not installed; apt-get install gnuplot-nox)", code, png));
}

absl::Status PlotRank(const RankRun& r, const std::string& out_dir) {
  const std::string base = absl::StrFormat("%s/rank-%d", out_dir, r.rank);
  const std::string png = base + ".png", waits = base + "-waits.dat", flight = base + "-flight.dat",
                    resent = base + "-resent.dat";
  {
    std::ofstream w(waits), f(flight);
    w << "# row start_s end_s wait\n";
    for (const RankRun::Slice& s : r.slices) {
      for (int k = 0; k < kNumWaits; ++k) {
        if (s.wait == kWaits[k]) w << absl::StrFormat("%d %.9f %.9f %d\n", k, s.start, s.end, k);
      }
    }
    f << "# t_s in_flight window\n";
    for (const RankRun::Sample& s : r.samples) {
      f << absl::StrFormat("%.9f %g %g\n", s.t, s.in_flight, s.window);
    }
    std::ofstream x(resent);
    x << "# t_s (a resend or a stall probe)\n";
    for (double t : r.resent_at) x << absl::StrFormat("%.9f\n", t);
    if (!w || !f || !x) return absl::InternalError(absl::StrCat("cannot write ", base));
  }
  std::string script = absl::StrFormat(
      "set terminal pngcairo size 1100,600\nset output '%s'\nset multiplot layout 2,1 title "
      "'rank %d: %d operations, %d chunks, %d resends' noenhanced\n"
      "set xlabel 'time (s)'\nset ytics (",
      png, r.rank, r.operations, r.chunks, r.resends());
  for (int k = 0; k < kNumWaits; ++k) {
    absl::StrAppendFormat(&script, "%s'%s' %d", k ? ", " : "", kWaits[k], k);
  }
  absl::StrAppendFormat(
      &script,
      ")\nset yrange [-0.5:%d.5]\nset title 'what the lane waits on' noenhanced\nunset key\n"
      "set grid x\nplot '%s' using 2:1:($3-$2):(0):4 with vectors nohead lw 12 lc variable\n"
      "set ytics auto\nset autoscale y\nset ylabel 'chunks'\nset key top right\n"
      "set title 'window and chunks in flight'\n"
      "plot '%s' using 1:3 with steps lw 2 title 'window', '' using 1:2 with steps lw 1 "
      "title 'in flight', '%s' using 1:(0) with points pt 2 ps 1.5 title 'resent'\n"
      "unset multiplot\n",
      kNumWaits - 1, waits, flight, resent);
  return Gnuplot(script, png);
}

}  // namespace

absl::Status PlotRanks(const Run& run, const std::string& out_dir) {
  if (::mkdir(out_dir.c_str(), 0777) != 0 && errno != EEXIST) {
    return absl::InternalError(absl::StrCat("cannot create ", out_dir, ": ", std::strerror(errno)));
  }
  for (const RankRun& r : run.ranks) {
    if (absl::Status s = PlotRank(r, out_dir); !s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace grid::tools
