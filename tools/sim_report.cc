#include "tools/sim_report.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "absl/strings/str_format.h"

namespace grid::tools {
namespace {

struct Stat {
  double mean = 0, sd = 0;
};

Stat MeanSd(const std::vector<double>& v) {
  Stat s;
  if (v.empty()) return s;
  for (double x : v) s.mean += x;
  s.mean /= static_cast<double>(v.size());
  for (double x : v) s.sd += (x - s.mean) * (x - s.mean);
  s.sd = v.size() > 1 ? std::sqrt(s.sd / static_cast<double>(v.size() - 1)) : 0;
  return s;
}

template <typename F>
Stat Over(const std::vector<const Row*>& rows, F field) {
  std::vector<double> v;
  for (const Row* r : rows) v.push_back(field(*r));
  return MeanSd(v);
}

}  // namespace

Groups Group(const std::vector<Row>& rows) {
  Groups g;
  for (const Row& r : rows) g[{r.experiment, r.model, r.planner, r.workers}].push_back(&r);
  return g;
}

void WritePlots(const std::filesystem::path& dir, const std::vector<Experiment>& experiments,
                const Groups& groups) {
  for (const Experiment& e : experiments) {
    for (planner::Model m : kModels) {
      const std::string model = planner::ModelName(m);
      for (const auto& [metric, label] : {std::pair{"mean", "mean worker sending rate (Gbps)"},
                                          std::pair{"min", "min worker sending rate (Gbps)"}}) {
        const std::string base = absl::StrFormat("%s-%s-%s", e.name, model, metric);
        const bool mean_metric = std::string(metric) == "mean";
        std::ofstream data(dir / (base + ".dat"));
        for (const char* p : kPlanners) {
          data << "# " << p << "\n";
          for (int w : e.workers) {
            auto it = groups.find({e.name, model, p, w});
            if (it == groups.end()) continue;
            const Stat s = Over(it->second, [mean_metric](const Row& r) {
              return mean_metric ? r.mean_rate : r.min_rate;
            });
            data << w << " " << s.mean << " " << s.sd << "\n";
          }
          data << "\n\n";
        }
        data.close();  // gnuplot reads it below
        std::ofstream script(dir / (base + ".gp"));
        script << "set terminal pngcairo size 800,500\n"
               << "set output '" << (dir / (base + ".png")).string() << "'\n"
               << "set title '" << e.name << ", " << model << " model'\n"
               << "set xlabel 'workers'\nset ylabel '" << label << "'\n"
               << "set key top left\nset grid\nset yrange [0:*]\n"
               << "plot ";
        for (size_t i = 0; i < std::size(kPlanners); ++i) {
          script << (i ? ", " : "") << "'" << (dir / (base + ".dat")).string() << "' index " << i
                 << " using 1:2:3 with yerrorlines title '" << kPlanners[i] << "'";
        }
        script << "\n";
        script.close();
        const std::string cmd = "gnuplot '" + (dir / (base + ".gp")).string() + "' 2>/dev/null";
        if (std::system(cmd.c_str()) != 0) {
          std::fprintf(stderr, "grid-sim: gnuplot failed for %s (is gnuplot installed?)\n",
                       base.c_str());
        }
      }
    }
  }
}

void WriteMarkdown(const std::filesystem::path& path, const std::vector<Experiment>& experiments,
                   const Groups& groups, int seeds, bool authors) {
  std::ofstream md(path);
  md << "# grid-sim results\n\nMean ± standard deviation over " << seeds
     << " seeds (topology and job drawn from each seed). Rates in Gbps. Baselines: "
     << (authors ? "the authors' simulation formulas (the same under both models)"
                 : "strict (planners as the paper defines them)")
     << ".\n";
  for (const Experiment& e : experiments) {
    for (planner::Model m : kModels) {
      const std::string model = planner::ModelName(m);
      md << "\n## " << e.name << ", " << model << " model\n\n"
         << "| workers | planner | mean rate | min rate | switch aggregation | PS ingress | solve "
            "s |\n"
         << "|---|---|---|---|---|---|---|\n";
      for (int w : e.workers) {
        for (const char* p : kPlanners) {
          auto it = groups.find({e.name, model, p, w});
          if (it == groups.end()) continue;
          const auto& rows = it->second;
          auto fmt = [](Stat s) { return absl::StrFormat("%.2f ± %.2f", s.mean, s.sd); };
          md << "| " << w << " | " << p << " | "
             << fmt(Over(rows, [](const Row& r) { return r.mean_rate; })) << " | "
             << fmt(Over(rows, [](const Row& r) { return r.min_rate; })) << " | "
             << fmt(Over(rows, [](const Row& r) { return r.switch_aggregation; })) << " | "
             << fmt(Over(rows, [](const Row& r) { return r.ps_ingress; })) << " | "
             << absl::StrFormat("%.3f",
                                Over(rows, [](const Row& r) { return r.solve_seconds; }).mean)
             << " |\n";
        }
      }
    }
  }
}

void WriteCsv(const std::filesystem::path& path, const std::vector<Row>& rows) {
  std::ofstream csv(path);
  csv << "experiment,model,planner,workers,seed,min_rate_gbps,mean_rate_gbps,"
         "switch_aggregation_gbps,ps_ingress_gbps,solve_seconds\n";
  for (const Row& r : rows) {
    csv << absl::StrFormat("%s,%s,%s,%d,%d,%.6f,%.6f,%.6f,%.6f,%.6f\n", r.experiment, r.model,
                           r.planner, r.workers, r.seed, r.min_rate, r.mean_rate,
                           r.switch_aggregation, r.ps_ingress, r.solve_seconds);
  }
}

}  // namespace grid::tools
