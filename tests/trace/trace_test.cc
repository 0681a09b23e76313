// GRID_TRACE's recorder and its Chrome trace-event JSON (lib/trace): a ring
// that drops the oldest and says so, and a file in which every slice is
// whole even when the ring cut its start.
#include <nlohmann/json.hpp>
#include <string>

#include "gtest/gtest.h"
#include "trace/chrome.h"
#include "trace/recorder.h"

namespace grid::trace {
namespace {

absl::Time At(int64_t us) { return absl::FromUnixMicros(1'700'000'000'000'000 + us); }

TEST(Recorder, AFullRingDropsTheOldestAndCountsThem) {
  Recorder r(3);
  for (int i = 0; i < 5; ++i) r.Instant(At(i), "tick", "test", {{"i", i}});
  const std::vector<Event> kept = r.Events();
  ASSERT_EQ(kept.size(), 3u);
  EXPECT_EQ(kept[0].args[0].value, 2);
  EXPECT_EQ(kept[2].args[0].value, 4);
  EXPECT_EQ(r.dropped(), 2u);
}

TEST(Recorder, SamplesAreDueOncePerInterval) {
  Recorder r(8);
  EXPECT_TRUE(r.SampleDue(At(0)));
  EXPECT_FALSE(r.SampleDue(At(1)));
  EXPECT_TRUE(r.SampleDue(At(0) + TraceTunables::kCounterInterval));
}

nlohmann::json Parse(const TraceProcess& p) {
  nlohmann::json j = nlohmann::json::parse(ChromeTraceJson(p), nullptr, false);
  EXPECT_FALSE(j.is_discarded());
  return j;
}

TEST(ChromeTrace, EventsKeepTheirFieldsPhasesAndTime) {
  Recorder r(16);
  r.AsyncBegin(At(0), "allreduce", "op", 7, {{"chunks", 3}});
  r.Begin(At(1), "window full", "wait");
  r.Counter(At(2), "chunks", {{"in_flight", 4}, {"window", 4}});
  r.Instant(At(3), "resend (timeout)", "loss", {{"chunk", 2}});
  r.End(At(4), "window full", "wait");
  r.AsyncEnd(At(5), "allreduce", "op", 7);
  const nlohmann::json j = Parse({"rank 0 (job 1)", "rank", 42, {{"lane 0", &r}}, R"("slots":64)"});
  EXPECT_EQ(j["otherData"]["role"], "rank");
  EXPECT_EQ(j["otherData"]["dropped_events"], 0);
  EXPECT_EQ(j["otherData"]["slots"], 64);
  const auto& ev = j["traceEvents"];
  ASSERT_EQ(ev.size(), 8u);  // two metadata events, then the six
  EXPECT_EQ(ev[0]["ph"], "M");
  EXPECT_EQ(ev[0]["args"]["name"], "rank 0 (job 1)");
  EXPECT_EQ(ev[1]["args"]["name"], "lane 0");
  EXPECT_EQ(ev[2]["ph"], "b");
  EXPECT_EQ(ev[2]["id"], "0x7");
  EXPECT_EQ(ev[2]["args"]["chunks"], 3);
  EXPECT_EQ(ev[3]["ph"], "B");
  EXPECT_EQ(ev[3]["pid"], 42);
  EXPECT_EQ(ev[4]["ph"], "C");
  EXPECT_EQ(ev[4]["args"]["window"], 4);
  EXPECT_EQ(ev[5]["ph"], "i");
  EXPECT_EQ(ev[5]["s"], "t");
  EXPECT_EQ(ev[7]["ph"], "e");
  // Microseconds, to the nanosecond.
  EXPECT_DOUBLE_EQ(ev[3]["ts"].get<double>() - ev[2]["ts"].get<double>(), 1.0);
}

TEST(ChromeTrace, SlicesTheRingCutAreLeftOutOrClosedAndTheLossIsSaid) {
  Recorder r(4);
  r.Begin(At(0), "window full", "wait");      // dropped by the ring
  r.AsyncBegin(At(1), "allreduce", "op", 1);  // dropped
  r.End(At(2), "window full", "wait");        // its B is gone: left out
  r.AsyncEnd(At(3), "allreduce", "op", 1);    // its b is gone: left out
  r.Begin(At(4), "results wait", "wait");     // open at the end: closed
  r.AsyncBegin(At(5), "allreduce", "op", 2);  // open at the end: closed
  const nlohmann::json j = Parse({"rank 1 (job 1)", "rank", 1, {{"lane 0", &r}}, ""});
  EXPECT_EQ(j["otherData"]["dropped_events"], 2);
  int depth = 0, async_open = 0;
  bool said = false;
  for (const auto& e : j["traceEvents"]) {
    const std::string ph = e["ph"];
    if (ph == "i" && e["cat"] == "trace") said = e["args"]["dropped"] == 2;
    depth += ph == "B" ? 1 : ph == "E" ? -1 : 0;
    async_open += ph == "b" ? 1 : ph == "e" ? -1 : 0;
    EXPECT_GE(depth, 0);
    EXPECT_GE(async_open, 0);
  }
  EXPECT_TRUE(said);
  EXPECT_EQ(depth, 0);
  EXPECT_EQ(async_open, 0);
}

TEST(ChromeTrace, FileNamesKeepOnlySafeCharacters) {
  EXPECT_EQ(TraceFileName("switch", "S2"), "switch-S2.json");
  EXPECT_EQ(TraceFileName("switch", "a/b c"), "switch-a_b_c.json");
}

TEST(ChromeTrace, AnUnwritableDirectoryIsAnErrorThatNamesIt) {
  Recorder r(1);
  absl::Status s = WriteChromeTrace("/proc/no/such", "x.json", {"p", "rank", 1, {{"t", &r}}, ""});
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("/proc/no/such"), std::string::npos) << s;
}

}  // namespace
}  // namespace grid::trace
