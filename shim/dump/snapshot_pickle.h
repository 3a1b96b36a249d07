// snapshot.pickle in every bundle: the PyTorch memory-snapshot format
// (pytorch.org/memory_viz, `python -m torch.cuda._memory_viz`), made from the
// bundle's own JSON files once they are complete, with the same code the
// `gpumemrec export --format memory-viz` command uses (common/memviz_snapshot).
#pragma once
#include <cstdint>
#include <string>

namespace gpumemrec {

// Rings bigger than this are not converted at dump time (it would dominate
// the dump's time and memory); `gpumemrec export` converts any bundle.
constexpr uint64_t kSnapshotMaxEvents = 200000;

// `dir` is the (still temporary) bundle directory, `dirfd` an open fd on it,
// with every JSON file and manifest.json written. Writes snapshot.pickle and
// rewrites manifest.json (through a temporary file and a rename) to list it.
// On failure nothing is left behind and the bundle stays as it was.
bool add_snapshot_pickle(const std::string& dir, int dirfd, std::string* error);

}  // namespace gpumemrec
