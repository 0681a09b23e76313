#include "p4runtime/publish.h"

#include <memory>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "p4runtime/holding.h"

namespace grid::p4rt {
namespace {

std::string Who(const SwitchTarget& t) {
  return absl::StrFormat("switch %s at %s", t.name, t.address);
}

// "a", "a and b", "a, b and c".
std::string Listed(const std::vector<std::string>& items) {
  if (items.size() < 2) return absl::StrJoin(items, "");
  return absl::StrCat(absl::StrJoin(items.begin(), items.end() - 1, ", "), " and ", items.back());
}

// A switch as the survey found it.
struct Found {
  std::unique_ptr<P4RuntimeSwitch> sw;
  bool runs_program = false;  // the program, by its cookie
  Holding held;               // what it holds (nothing when it runs no program)
};

// Survey's work, its errors without the caller's ending.
absl::StatusOr<std::vector<Found>> SurveyAll(const std::vector<SwitchTarget>& targets,
                                             const Program& program) {
  std::vector<Found> out;
  for (const SwitchTarget& t : targets) {
    Found f;
    auto sw = P4RuntimeSwitch::Connect(t);
    if (!sw.ok()) return sw.status();
    f.sw = *std::move(sw);
    auto cookie = f.sw->PipelineCookie();
    if (!cookie.ok()) return cookie.status();
    if (cookie->has_value()) {
      if (**cookie == 0) {
        return absl::FailedPreconditionError(absl::StrFormat(
            "%s runs a program committed without a cookie (by another controller, or a "
            "grid-controller older than cookies), which grid-controller cannot tell from another "
            "program; restart the switch with none (simple_switch_grpc --no-p4) or with this one",
            Who(t)));
      }
      if (**cookie != program.cookie) {
        return absl::FailedPreconditionError(absl::StrFormat(
            "%s runs another program (cookie %#x; %s with this device config is %#x): "
            "grid-controller does not replace a program that other jobs may use; restart the "
            "switch with none (simple_switch_grpc --no-p4) or with this one",
            Who(t), **cookie, program.info->what(), program.cookie));
      }
      auto read = f.sw->ReadAll(*program.info);
      if (!read.ok()) return read.status();
      f.runs_program = true;
      f.held = HoldingOf(*read);
    }
    out.push_back(std::move(f));
  }
  return out;
}

// Connects to every switch as primary and reads what it holds, writing
// nothing: every reason to stop comes before the first write, and its error
// ends with `untouched` (what that means for the caller's operation).
absl::StatusOr<std::vector<Found>> Survey(const std::vector<SwitchTarget>& targets,
                                          const Program& program, const char* untouched) {
  auto found = SurveyAll(targets, program);
  if (found.ok()) return found;
  return absl::Status(found.status().code(),
                      absl::StrFormat("%s (%s)", found.status().message(), untouched));
}

// "inserted 21, modified 6, deleted 0: 21 entries, 6 default actions, ...".
std::string Summary(const std::vector<p4::v1::Update>& updates) {
  int n[4] = {0, 0, 0, 0};
  for (const p4::v1::Update& u : updates) ++n[u.type() & 3];
  return absl::StrFormat("inserted %d, modified %d, deleted %d (%s)", n[p4::v1::Update::INSERT],
                         n[p4::v1::Update::MODIFY], n[p4::v1::Update::DELETE],
                         CountUpdates(updates));
}

// Deletions in a Write of their own, before the rest: a server may apply
// one Write's updates in any order (P4Runtime 1.3, "Batching"), and an
// insertion into a full table must come after the deletion that frees it.
absl::Status WriteInOrder(P4RuntimeSwitch& sw, const std::vector<p4::v1::Update>& updates,
                          const P4InfoIndex& info) {
  std::vector<p4::v1::Update> deletes, rest;
  for (const p4::v1::Update& u : updates) {
    (u.type() == p4::v1::Update::DELETE ? deletes : rest).push_back(u);
  }
  if (absl::Status s = sw.Write(deletes, info); !s.ok()) return s;
  return sw.Write(rest, info);
}

// The read-back every change ends with.
absl::Status Check(P4RuntimeSwitch& sw, const Holding& expected, const P4InfoIndex& info) {
  auto read = sw.ReadAll(info);
  if (!read.ok()) return read.status();
  return Compare(expected, HoldingOf(*read), info, Who(sw.target()));
}

// A switch a publication wrote to: what it held first, and what was sent.
struct Written {
  size_t index = 0;
  Holding before;
  bool committed = false;  // the program was committed here
  std::vector<p4::v1::Update> updates;
};

// Puts back what every switch in `written` held before, newest first, on
// the keys the publication touched. Says what became of each.
std::string Undo(const std::vector<Written>& written, std::vector<Found>& found,
                 const P4InfoIndex& info) {
  std::vector<std::string> back, kept, failed;
  for (auto w = written.rbegin(); w != written.rend(); ++w) {
    P4RuntimeSwitch& sw = *found[w->index].sw;
    std::set<std::string> scope;
    for (const p4::v1::Update& u : w->updates) scope.insert(KeyOf(u.entity()));
    absl::Status st = [&]() -> absl::Status {
      auto now = sw.ReadAll(info);
      if (!now.ok()) return now.status();
      if (absl::Status s = WriteInOrder(sw, Reconcile(HoldingOf(*now), w->before, scope), info);
          !s.ok()) {
        return s;
      }
      return Check(sw, w->before, info);
    }();
    if (st.ok()) {
      back.push_back(sw.target().name);
      if (w->committed) kept.push_back(sw.target().name);
    } else {
      failed.push_back(
          absl::StrFormat("%s could not be put back (%s)", sw.target().name, st.message()));
    }
  }
  std::string out;
  if (!back.empty()) {
    out = absl::StrFormat("%s put back as %s", absl::StrJoin(back, ", "),
                          back.size() == 1 ? "it was" : "they were");
    if (!kept.empty()) {
      absl::StrAppendFormat(&out, ", the program left committed on %s", absl::StrJoin(kept, ", "));
    }
  }
  for (const std::string& f : failed) absl::StrAppend(&out, out.empty() ? "" : "; ", f);
  return out;
}

}  // namespace

uint64_t ProgramCookie(std::string_view p4info_text, std::string_view device_config) {
  uint64_t h = 14695981039346656037ull;
  for (std::string_view part : {p4info_text, std::string_view("\0", 1), device_config}) {
    for (unsigned char c : part) h = (h ^ c) * 1099511628211ull;
  }
  return h == 0 ? 1 : h;
}

absl::StatusOr<std::vector<std::string>> PublishJob(const std::vector<SwitchJob>& switches,
                                                    const Program& program, uint32_t job) {
  const P4InfoIndex& info = *program.info;
  std::vector<SwitchTarget> targets;
  for (const SwitchJob& s : switches) targets.push_back(s.target);
  auto found = Survey(targets, program, "nothing written to any switch");
  if (!found.ok()) return found.status();
  std::vector<Written> written;
  std::vector<std::string> lines;
  for (size_t i = 0; i < switches.size(); ++i) {
    P4RuntimeSwitch& sw = *(*found)[i].sw;
    absl::Status st = [&]() -> absl::Status {
      const bool commit = !(*found)[i].runs_program;
      if (commit) {
        if (absl::Status s = sw.SetPipeline(info, program.device_config, program.cookie); !s.ok()) {
          return s;
        }
      }
      // Recorded before anything else: the error must mention the switch
      // from the commit on, and a refused write may have taken part.
      Written& w = written.emplace_back(Written{i, (*found)[i].held, commit, {}});
      if (commit) {
        auto read = sw.ReadAll(info);  // the program's default actions
        if (!read.ok()) return read.status();
        w.before = HoldingOf(*read);
      }
      w.updates = PublishUpdates(w.before, switches[i].want, job, info);
      const Holding& before = w.before;
      const std::vector<p4::v1::Update>& updates = w.updates;
      if (absl::Status s = WriteInOrder(sw, updates, info); !s.ok()) return s;
      if (absl::Status s = Check(sw, Apply(before, updates), info); !s.ok()) return s;
      lines.push_back(absl::StrFormat("%s: %s; %s; read back equal", Who(sw.target()),
                                      commit ? "program committed" : "program already there",
                                      Summary(updates)));
      return absl::OkStatus();
    }();
    if (!st.ok()) {
      std::string after = Undo(written, *found, info);
      if (i + 1 < switches.size()) {
        absl::StrAppendFormat(&after, "%sthe switches after %s untouched",
                              after.empty() ? "" : "; ", switches[i].target.name);
      }
      return absl::Status(st.code(), absl::StrFormat("%s (%s)", st.message(), after));
    }
  }
  return lines;
}

absl::StatusOr<std::vector<std::string>> DeleteJobs(const std::vector<SwitchTarget>& switches,
                                                    const Program& program,
                                                    const std::set<uint32_t>& jobs) {
  const P4InfoIndex& info = *program.info;
  const std::string named = absl::StrJoin(jobs, ", ");
  auto found = Survey(switches, program, "nothing deleted anywhere");
  if (!found.ok()) return found.status();
  // Every switch's other jobs first, so the flag suggested takes them all.
  std::set<uint32_t> others;
  std::vector<std::string> holders;
  for (const Found& f : *found) {
    bool holds = false;
    for (uint32_t j : JobsIn(f.held, info)) {
      if (jobs.count(j)) continue;
      others.insert(j);
      holds = true;
    }
    if (holds) holders.push_back(Who(f.sw->target()));
  }
  if (!others.empty()) {
    std::set<uint32_t> all = jobs;
    all.insert(others.begin(), others.end());
    return absl::FailedPreconditionError(absl::StrFormat(
        "%s also %s job %s: clearing job %s's registers means committing the program again, "
        "which resets every register of the switch, theirs too (this target's P4Runtime server "
        "refuses register writes); delete them together (--delete-job=%s) or restart the "
        "switch (nothing deleted anywhere)",
        Listed(holders), holders.size() == 1 ? "holds" : "hold", absl::StrJoin(others, ", "), named,
        absl::StrJoin(all, ",")));
  }
  std::vector<std::string> lines;
  for (Found& f : *found) {
    P4RuntimeSwitch& sw = *f.sw;
    if (!f.runs_program) {
      lines.push_back(
          absl::StrFormat("%s: runs no program, holds nothing of job %s", Who(sw.target()), named));
      continue;
    }
    // The deletions say what goes; the commit clears the registers, and
    // removes whatever a refused deletion left, so it follows either way.
    const std::vector<p4::v1::Update> updates = DeleteUpdates(f.held, jobs, info);
    const absl::Status deleted = sw.Write(updates, info);
    absl::Status st = sw.SetPipeline(info, program.device_config, program.cookie);
    if (st.ok()) st = Check(sw, Holding{}, info);
    if (!st.ok()) {
      return absl::Status(
          st.code(),
          absl::StrFormat("%s (job %s is deleted from the switches before %s; %s may hold part "
                          "of it and its registers are not cleared: run --delete-job again)",
                          st.message(), named, sw.target().name, sw.target().name));
    }
    lines.push_back(absl::StrFormat(
        "%s: deleted %s%s; registers cleared by committing the program again; holds no entry now",
        Who(sw.target()), CountUpdates(updates),
        deleted.ok()
            ? ""
            : absl::StrCat(" (the commit removed what it refused: ", deleted.message(), ")")));
  }
  return lines;
}

}  // namespace grid::p4rt
