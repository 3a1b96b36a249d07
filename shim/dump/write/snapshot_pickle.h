// snapshot.pickle in every bundle: the PyTorch memory-snapshot format
// (pytorch.org/memory_viz, `python -m torch.cuda._memory_viz`), made from the
// in-memory model the dump already holds (dump_model.h) with the same code
// `gpumemrec export --format memory-viz` uses (common/memviz_snapshot.h).
// Nothing is read back from the bundle.
#pragma once
#include <cstdint>
#include <string>

#include "common/bundle_model.h"

namespace gpumemrec {

struct BundleFiles;

// Rings bigger than this, or live sets bigger than this, are not converted
// at dump time (it would dominate the dump's time and memory: 2.1M live
// allocations took 3.7 s of an 8.7 s dump, for a 230 MB pickle, on a loaded
// 2-core machine); `gpumemrec export` converts any bundle.
constexpr uint64_t kSnapshotMaxEvents = 200000;
constexpr uint64_t kSnapshotMaxLive = 200000;

// Writes snapshot.pickle from `b` (events, allocations, stacks, metadata).
// On failure the file is removed, left out of files.names, and *error says why.
bool write_snapshot_pickle(BundleFiles& files, const model::Bundle& b, std::string* error);

}  // namespace gpumemrec
