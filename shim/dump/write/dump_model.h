// Step 2 of a dump: the snapshot as the tools' in-memory bundle model
// (common/bundle_model.h), built without reading any file back. The shim's
// writers use its symbolized stacks (stacks.json, summary.txt) and its live
// allocations (the top sites, common/live_sites.h); snapshot.pickle is made
// from it with the tools' own converter (common/memviz_snapshot.h).
#pragma once
#include <vector>

#include "common/bundle_model.h"
#include "shim/dump/write/bundle_input.h"
#include "shim/dump/capture/dump_snapshot.h"

namespace gpumemrec {

// Frames of every stack in `ids` (StackTable::kFull left out): native frames
// through the symbolizer (inside begin()/end()), Python frames from the
// stack's own words; Python frames first, both innermost first.
std::vector<model::Stack> symbolize_stacks(Recorder* r, Symbolizer& sym, const std::vector<uint32_t>& ids);

// Fills manifest-independent parts of *b: allocations, stacks (moved in),
// metadata; and the events when `with_events` (for snapshot.pickle).
void build_model(const BundleInput& in, const DumpSnapshot& snap, std::vector<model::Stack> stacks,
                 model::Bundle* b);
void add_model_events(const BundleInput& in, const DumpSnapshot& snap, model::Bundle* b);

}  // namespace gpumemrec
