// Arbitrary text as a GRID_TRACE file read by grid-report (tools/report.h):
// up to three files, split at NUL bytes, read into one run, summed up and
// judged. Whatever is read must never crash the report, throw past it, or
// make the rules divide by nothing; what is refused is an error.
#include <cstdint>
#include <string>
#include <string_view>

#include "tools/report.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view rest(reinterpret_cast<const char*>(data), size);
  grid::tools::Run run;
  for (int file = 0; file < 3 && !rest.empty(); ++file) {
    const size_t end = rest.find('\0');
    const std::string_view text = rest.substr(0, end);
    rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 1);
    if (!grid::tools::ReadTraceText("fuzz.json", text, run).ok()) return 0;
  }
  grid::tools::FromRunStart(run);
  const grid::tools::Diagnosis d = grid::tools::Diagnose(run);
  (void)grid::tools::FormatReport(run, d);
  return 0;
}
