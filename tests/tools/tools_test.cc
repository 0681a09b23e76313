// grid-plan, grid-sim, grid-tables and grid-controller as a user runs them: output format, exit
// statuses, files written.
#include <fcntl.h>
#include <pty.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "gmock/gmock.h"
#include "grid/planner.h"
#include "grid/switch.h"
#include "gtest/gtest.h"
#include "tools/progress.h"

namespace {

using ::testing::HasSubstr;
using ::testing::Not;

struct Result {
  int status;
  std::string out;
  std::string err;
};

Result RunCommand(const std::string& command) {
  const std::filesystem::path err_file =
      std::filesystem::temp_directory_path() / ("grid_tools_test_" + std::to_string(::getpid()));
  FILE* pipe = ::popen((command + " 2>" + err_file.string()).c_str(), "r");
  Result r{-1, "", ""};
  if (pipe == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), pipe)) > 0) r.out.append(buf, n);
  const int raw = ::pclose(pipe);
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  std::ifstream in(err_file);
  std::stringstream ss;
  ss << in.rdbuf();
  r.err = ss.str();
  std::filesystem::remove(err_file);
  return r;
}

std::string ReadFile(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

const std::string kPlan = GRID_PLAN_BIN;
const std::string kSim = GRID_SIM_BIN;
const std::string kFatTree = "fattree:k=8,hosts=6,prog=random:0.2,cap=uniform:100:3200,seed=1";

TEST(GridPlan, JsonHasExactlyTheDocumentedKeys) {
  const Result r =
      RunCommand(kPlan + " --topology=" + kFatTree + " --workers=100 --planner=grid --format=json");
  ASSERT_EQ(r.status, 0) << r.err;
  const nlohmann::ordered_json j = nlohmann::ordered_json::parse(r.out);
  std::vector<std::string> keys;
  for (const auto& [k, v] : j.items()) keys.push_back(k);
  EXPECT_THAT(
      keys, ::testing::ElementsAre("planner", "model", "workers", "min_rate_gbps", "mean_rate_gbps",
                                   "switch_aggregation_gbps", "ps_ingress_gbps",
                                   "max_capacity_violation", "solve_seconds"));
  EXPECT_EQ(j["planner"], "grid");
  EXPECT_EQ(j["model"], "links");
  EXPECT_EQ(j["workers"], 100);
  EXPECT_GT(j["min_rate_gbps"].get<double>(), 0);
}

TEST(GridPlan, BadArgumentsAreOneLineAndExitTwo) {
  for (const char* args :
       {"--workers=4 --planner=grid",                                   // no topology
        "--topology=testbed --planner=grid",                            // no workers
        "--topology=testbed --workers=4 --planner=magic",               // unknown planner
        "--topology=testbed --workers=4 --planner=grid --model=fluid",  // unknown model
        "--topology=torus --workers=4 --planner=grid",                  // bad spec
        "--topology=testbed --workers=four --planner=grid",             // not a number
        "--topology=testbed --workers=4 --planner=grid --colour=red",   // unknown flag
        "--topology=testbed --workers=20 --planner=grid",               // too many workers
        "--topology=testbed --workers=4 --planner=grid --format=xml"}) {
    const Result r = RunCommand(kPlan + " " + std::string(args));
    EXPECT_EQ(r.status, 2) << args;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << args << ": " << r.err;
    EXPECT_THAT(r.err, HasSubstr("grid-plan: ")) << args;
  }
}

// A link impairment the switches would refuse as they start (in the
// background, their errors in their logs) is refused at planning instead.
TEST(GridController, RefusesALinkImpairmentTheSwitchesWouldNotTake) {
  const std::string base =
      std::string(GRID_CONTROLLER_BIN) +
      " --topology=testbed --workers=4 --udp-base-port=39000 --store=file:" +
      (std::filesystem::temp_directory_path() / "grid_controller_test").string();
  for (const char* bad : {"loss=2", "dup=-1", "loss=abc", "foo=1", "loss", "seed=3"}) {
    const Result r = RunCommand(base + " --link-impairment=" + bad);
    EXPECT_EQ(r.status, 2) << bad;
    EXPECT_THAT(r.err, HasSubstr("--link-impairment: ")) << bad;
  }
  const Result ok = RunCommand(base + " --link-impairment=loss=0.01,dup=0.01,reorder=0.01");
  EXPECT_EQ(ok.status, 0) << ok.err;
  // Two fabrics at once used to be taken, quietly building the UDP one.
  const Result two = RunCommand(base + " --memif-dir=/tmp/grid_controller_test_memif");
  EXPECT_EQ(two.status, 2);
  EXPECT_THAT(two.err, HasSubstr("one fabric, not several"));
}

TEST(GridPlan, WritesAByteIdenticalPlanFile) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("grid_plan_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string base =
      kPlan + " --topology=" + kFatTree + " --workers=40 --planner=grid-paths --seed=3 --out=";
  ASSERT_EQ(RunCommand(base + (dir / "a.json").string()).status, 0);
  ASSERT_EQ(RunCommand(base + (dir / "b.json").string()).status, 0);
  const std::string a = ReadFile(dir / "a.json");
  EXPECT_EQ(a, ReadFile(dir / "b.json"));
  auto topo = grid::topology::GenerateTopology(kFatTree);
  ASSERT_TRUE(topo.ok());
  auto plan = grid::planner::ParsePlanJson(*topo, a);
  EXPECT_TRUE(plan.ok()) << plan.status();
  std::filesystem::remove_all(dir);
}

TEST(GridTables, WritesSwitchAndP4Tables) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("grid_tables_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  ASSERT_EQ(RunCommand(kPlan + " --topology=testbed --workers=8 --planner=switchml --out=" +
                       (dir / "plan.json").string())
                .status,
            0);
  const Result r = RunCommand(std::string(GRID_TABLES_BIN) +
                              " --topology=testbed --plan=" + (dir / "plan.json").string() +
                              " --out=" + (dir / "t").string() + " --job-id=3 --token=99 --p4");
  ASSERT_EQ(r.status, 0) << r.err;
  for (const char* s : {"S1", "S2", "S3"}) {
    auto config = grid::sw::ParseConfigJson(ReadFile(dir / "t" / (std::string(s) + ".json")));
    ASSERT_TRUE(config.ok()) << config.status();
    EXPECT_EQ(config->jobs.at(3).token, 99u);
    EXPECT_TRUE(config->jobs.at(3).aggregate.has_value()) << s;  // every ToR aggregates here
    EXPECT_THAT(ReadFile(dir / "t" / (std::string(s) + ".p4rt.json")),
                HasSubstr("grid-p4-entries/1"));
  }
  EXPECT_EQ(RunCommand(std::string(GRID_TABLES_BIN) +
                       " --topology=testbed --plan=/nonexistent --out=x --token=1")
                .status,
            2);
  // A job's token is given, never a default: the hosts' configs must match.
  const Result no_token = RunCommand(std::string(GRID_TABLES_BIN) +
                                     " --topology=testbed --plan=" + (dir / "plan.json").string() +
                                     " --out=" + (dir / "u").string());
  EXPECT_EQ(no_token.status, 2);
  EXPECT_THAT(no_token.err, HasSubstr("--token is required"));
  EXPECT_EQ(RunCommand(std::string(GRID_TABLES_BIN) +
                       " --topology=testbed --plan=" + (dir / "plan.json").string() +
                       " --out=" + (dir / "u").string() + " --token=0")
                .status,
            2);
  std::filesystem::remove_all(dir);
}

// What the user typed wrong exits 2 and points at --help; a run that failed
// (here: nothing ever published to the store) exits 1 and says why instead.
TEST(GridRoot, TellsAUsageErrorFromAFailedRun) {
  const Result usage = RunCommand(std::string(GRID_ROOT_BIN) + " --threads=0");
  EXPECT_EQ(usage.status, 2);
  EXPECT_THAT(usage.err, HasSubstr("(try --help)"));
  const std::string dir =
      (std::filesystem::temp_directory_path() / "grid_root_test_never_published").string();
  std::filesystem::remove_all(dir);
  const Result failed = RunCommand(std::string(GRID_ROOT_BIN) + " --store=file:" + dir +
                                   " --bootstrap-timeout-ms=50");
  EXPECT_EQ(failed.status, 1) << failed.err;
  EXPECT_THAT(failed.err, HasSubstr(dir + " does not exist"));
  EXPECT_THAT(failed.err, Not(HasSubstr("--help")));
}

TEST(GridSim, WritesCsvTableAndPlots) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("grid_sim_" + std::to_string(::getpid()));
  const Result r =
      RunCommand(kSim + " --experiment=fattree-b --workers=10,20 --seeds=2 --out=" + dir.string());
  ASSERT_EQ(r.status, 0) << r.err;
  std::ifstream csv(dir / "results.csv");
  std::string header;
  std::getline(csv, header);
  EXPECT_EQ(header,
            "experiment,model,planner,workers,seed,min_rate_gbps,mean_rate_gbps,"
            "switch_aggregation_gbps,ps_ingress_gbps,solve_seconds");
  int rows = 0;
  for (std::string line; std::getline(csv, line);) ++rows;
  EXPECT_EQ(rows, 2 /*workers*/ * 2 /*seeds*/ * 5 /*planners*/ * 2 /*models*/);
  EXPECT_THAT(ReadFile(dir / "results.md"), HasSubstr("## fattree-b, paper model"));
  for (const char* png : {"fattree-b-paper-mean.png", "fattree-b-links-min.png"}) {
    EXPECT_GT(std::filesystem::file_size(dir / png), 1000u) << png;
  }
  EXPECT_EQ(RunCommand(kSim + " --experiment=moon --out=" + dir.string()).status, 2);
  // The authors' formulas: Geryon is band / |N| exactly, and the table says
  // which baselines it holds.
  const Result authors = RunCommand(kSim + " --experiment=fattree-b --workers=20 --seeds=1 " +
                                    "--baselines=authors --out=" + dir.string());
  ASSERT_EQ(authors.status, 0) << authors.err;
  EXPECT_THAT(ReadFile(dir / "results.md"), HasSubstr("the authors' simulation formulas"));
  EXPECT_THAT(ReadFile(dir / "results.csv"),
              HasSubstr("fattree-b,paper,geryon,20,1,5.000000,5.000000,"));
  const Result bad =
      RunCommand(kSim + " --experiment=fattree-b --baselines=kind --out=" + dir.string());
  EXPECT_EQ(bad.status, 2);
  EXPECT_THAT(bad.err, HasSubstr("--baselines"));
  std::filesystem::remove_all(dir);
}

// What a Progress line writes to stderr while `stderr_fd` stands in for it.
std::string ProgressOutput(int stderr_fd, int read_fd, const char* env) {
  if (env) setenv("GRID_PROGRESS", env, 1);
  std::fflush(stderr);
  const int saved = dup(2);
  dup2(stderr_fd, 2);
  {
    grid::tools::Progress p("sweep", 4);
    p.Update(1);
  }
  std::fflush(stderr);
  dup2(saved, 2);
  close(saved);
  unsetenv("GRID_PROGRESS");
  std::string out;
  char buf[512];
  fcntl(read_fd, F_SETFL, O_NONBLOCK);
  for (ssize_t n; (n = read(read_fd, buf, sizeof(buf))) > 0;) out.append(buf, n);
  return out;
}

// A line on a terminal, erased at the end; nothing in a file or a pipe, or
// with GRID_PROGRESS=0.
TEST(Progress, DrawsOnlyOnATerminal) {
  int master = -1, slave = -1;
  ASSERT_EQ(openpty(&master, &slave, nullptr, nullptr, nullptr), 0);
  const std::string on_tty = ProgressOutput(slave, master, nullptr);
  EXPECT_THAT(on_tty, HasSubstr("sweep: 1/4 (25%)"));
  EXPECT_THAT(on_tty, ::testing::EndsWith("\r\033[K"));
  EXPECT_EQ(ProgressOutput(slave, master, "0"), "");
  close(master);
  close(slave);
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  EXPECT_EQ(ProgressOutput(fds[1], fds[0], nullptr), "");
  close(fds[0]);
  close(fds[1]);
}

}  // namespace
