// snapshot.pickle in every bundle: the PyTorch memory-snapshot format
// (pytorch.org/memory_viz, `python -m torch.cuda._memory_viz`), made from the
// in-memory model the dump already holds (dump_model.h) with the same code
// `gpumemrec export --format memory-viz` uses (common/memviz_snapshot.h).
// Nothing is read back from the bundle.
#pragma once
#include <cstdint>
#include <string>

#include "common/bundle_model.h"
#include "common/bundle_schema.h"  // kSnapshotMaxEvents

namespace gpumemrec {

struct BundleFiles;

// Writes snapshot.pickle from `b` (events, allocations, stacks, metadata).
// On failure the file is removed, left out of files.names, and *error says why.
bool write_snapshot_pickle(BundleFiles& files, const model::Bundle& b, std::string* error);

}  // namespace gpumemrec
