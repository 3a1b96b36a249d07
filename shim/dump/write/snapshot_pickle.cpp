#include "shim/dump/write/snapshot_pickle.h"

#include <fcntl.h>
#include <unistd.h>

#include "common/memviz_snapshot.h"
#include "shim/dump/write/bundle_files.h"

namespace gpumemrec {

namespace {

bool to_file(void* ctx, const uint8_t* data, size_t n) {
  static_cast<FdOut*>(ctx)->write(reinterpret_cast<const char*>(data), n);
  return true;  // errors stick in FdOut and are reported by finish()
}

}  // namespace

bool write_snapshot_pickle(BundleFiles& files, const model::Bundle& b, std::string* error) {
  if (b.events.size() > kSnapshotMaxEvents) {
    *error = "ring too large for a snapshot at dump time (use gpumemrec export)";
    return false;
  }
  if (b.allocations.size() > kSnapshotMaxLive) {
    *error = "live set too large for a snapshot at dump time (use gpumemrec export)";
    return false;
  }
  const MemvizPlan plan = build_memviz_plan(b);
  bool ok;
  {
    OutFile file(files, file::kSnapshot);
    ok = file.ok();
    if (ok) {
      PickleWriter w(&to_file, &file.out());
      ok = write_memviz_pickle(b, plan, w);
    }
    if (!ok && file.ok()) *error = "cannot encode the snapshot";
    ok = file.finish(error) && ok;
  }
  if (!ok && !files.names.empty() && files.names.back() == file::kSnapshot) {
    files.names.pop_back();
    unlinkat(files.dirfd, file::kSnapshot, 0);
  }
  return ok;
}

}  // namespace gpumemrec
