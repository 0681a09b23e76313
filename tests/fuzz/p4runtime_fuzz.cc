// Arbitrary text as what grid-controller's P4Runtime client parses
// (p4runtime/): with a first byte 'P', a P4Info in text format; otherwise
// a grid-p4-entries/1 document resolved against a small P4Info of the
// program's shape. Whatever is accepted must give entities whose keys and
// readings can be made; nothing may crash or throw.
#include <cstdint>
#include <string>

#include "p4runtime/entries.h"
#include "p4runtime/holding.h"
#include "p4runtime/p4info.h"

namespace {

constexpr const char* kP4Info = R"(
tables {
  preamble { id: 1 name: "GridIngress.label_route" alias: "label_route" }
  match_fields { id: 1 name: "hdr.grid.path" bitwidth: 16 match_type: EXACT }
  action_refs { id: 10 }
  action_refs { id: 11 }
}
tables {
  preamble { id: 2 name: "GridIngress.ip_route" alias: "ip_route" }
  match_fields { id: 1 name: "hdr.ipv4.dst" bitwidth: 32 match_type: EXACT }
  action_refs { id: 10 }
}
actions {
  preamble { id: 10 name: "GridIngress.set_nhop" alias: "set_nhop" }
  params { id: 1 name: "port" bitwidth: 9 }
  params { id: 2 name: "mac" bitwidth: 48 }
}
actions { preamble { id: 11 name: "GridIngress.drop" alias: "drop" } }
)";

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace grid::p4rt;
  const std::string text(reinterpret_cast<const char*>(data), size);
  if (size > 0 && data[0] == 'P') {
    auto index = P4InfoIndex::FromText(text.substr(1), "fuzz.p4info");
    if (index.ok()) {
      for (const auto& t : index->p4info().tables()) (void)index->Table(t.preamble().name());
    }
    return 0;
  }
  static const P4InfoIndex* info = new P4InfoIndex(*P4InfoIndex::FromText(kP4Info, "fuzz.p4info"));
  auto entities = EntriesToEntities(text, *info, "fuzz");
  if (!entities.ok()) return 0;
  for (const auto& e : entities->entries) (void)DescribeEntry(e, *info);
  // Published where nothing is, then again where it all is: the second
  // publication changes nothing, and deleting the job leaves no entry of it.
  const Holding held = Apply({}, PublishUpdates({}, *entities, 7, *info));
  if (!PublishUpdates(held, *entities, 7, *info).empty()) __builtin_trap();
  const Holding gone = Apply(held, DeleteUpdates(held, {7}, *info));
  if (JobsIn(gone, *info).count(7) != 0) __builtin_trap();
  return 0;
}
