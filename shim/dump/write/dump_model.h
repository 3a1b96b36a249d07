// Step 3 of a dump (bundle_writer.h): the snapshot as the tools' in-memory
// bundle model (common/bundle_model.h), built without reading any file back.
// The files are written from it (bundle_files.h): its manifest and metadata
// figures, its allocations (allocations.json, and the top sites of
// summary.txt through common/live_sites.h), its symbolized stacks
// (stacks.json, summary.txt); snapshot.pickle is made from it with the
// tools' own converter (common/memviz_snapshot.h). The enums go into the
// model as they are: one EventKind and one MemoryType (common/bundle_schema.h).
#pragma once
#include <vector>

#include "common/bundle_model.h"
#include "shim/dump/write/bundle_input.h"
#include "shim/dump/capture/dump_snapshot.h"

namespace gpumemrec {

// Frames of every stack in `ids` (StackTable::kFull left out): native frames
// through the symbolizer (inside begin()/end()), Python frames from the
// stack's own words, placed among the native ones by common/frame_order.h.
std::vector<model::Stack> symbolize_stacks(Recorder* r, Symbolizer& sym, const std::vector<uint32_t>& ids);

// Fills *b from the snapshot: allocations, stacks (moved in), metadata and
// the manifest's name, reason, backend and event count.
void build_model(const BundleInput& in, const DumpSnapshot& snap, std::vector<model::Stack> stacks,
                 model::Bundle* b);
// The verdict and the recovered failures of `in` into the model (metadata
// outcome, outcome_detail, recovery, recovered_failures; manifest outcome):
// by build_model, and again before the verdict files are rewritten.
void set_model_verdict(const BundleInput& in, model::Bundle* b);
// Adds the events, only while snapshot.pickle is made (bundle_writer.cpp):
// a model event is larger than the ring's 64 bytes.
void add_model_events(const DumpSnapshot& snap, model::Bundle* b);

}  // namespace gpumemrec
