#include "shim/dump/write/bundle_writer.h"

#include <unistd.h>

#include <cstdlib>

#include "shim/base/log.h"
#include "shim/dump/capture/peak_keeper.h"
#include "shim/dump/capture/peak_roles.h"
#include "shim/record/recorder.h"
#include "shim/dump/write/bundle_files.h"
#include "shim/base/dump_memory.h"
#include "shim/dump/write/dump_model.h"
#include "shim/dump/write/snapshot_pickle.h"
#include "shim/dump/query/symbolizer.h"
#include "shim/record/recorder.h"

namespace gpumemrec {

namespace {

// Whether the host can still give us `bytes`.
bool malloc_probe(size_t bytes) {
  void* p = std::malloc(bytes);
  std::free(p);
  return p != nullptr;
}

// snapshot.pickle is optional: skipped (the bundle is complete without it)
// when the host is short of memory (the emergency arena was touched, or 8 MiB
// cannot be had) or the ring is too large to convert at dump time.
void add_optional_pickle(BundleFiles& files, const DumpSnapshot& snap, model::Bundle& model, size_t arena_at_start) {
  if (dump_memory_used() != arena_at_start || !malloc_probe(8u << 20)) {
    GM_DEBUG("host memory is short: no snapshot.pickle in this bundle");
    return;
  }
  if (snap.events.size() > kSnapshotMaxEvents) {
    GM_DEBUG("no snapshot.pickle in this bundle: ring too large for a snapshot at dump time");
    return;
  }
  if (model.allocations.size() > kSnapshotMaxLive) {
    GM_DEBUG("no snapshot.pickle in this bundle: live set too large for a snapshot at dump time");
    return;
  }
  std::string why;
  try {
    add_model_events(snap, &model);
    if (!write_snapshot_pickle(files, model, &why)) GM_DEBUG("no snapshot.pickle in this bundle: {}", why);
  } catch (...) {
    GM_DEBUG("no snapshot.pickle in this bundle: out of memory");
  }
  model.events = model::EventVector();  // give the memory back before the manifest
}

}  // namespace

bool write_bundle(int dirfd, const BundleInput& in, const FrozenState& frozen, Symbolizer& sym, WriteBuffer buf,
                  BundleBuild* build, std::string* error) {
  const size_t arena_at_start = dump_memory_used();
  std::vector<uint32_t> recovered_stacks;
  for (const RecoveredFailure& r : in.recovered.listed) recovered_stacks.push_back(r.stack_id);
  DumpSnapshot snap;
  PeakInput peak;
  peak.keeper = peak_keeper_copy(&peak.kept);
  peak.capacity = in.recorder ? in.recorder->ring.capacity() : 0;  // 0: the window is not known to start at seq 1
  if (peak.kept.resuming() && in.recorder) peak.resume_from_ns = in.recorder->ring.complete_from(peak.kept.after.from_seq);
  finish_snapshot(frozen, in.failure, recovered_stacks, &snap, &peak);
  add_peak_roles(in.framework.get(), frozen, &snap.peak);
  sym.begin();
  std::vector<model::Stack> stacks;
  try {
    stacks = symbolize_stacks(in.recorder, sym, snap.stack_ids);
  } catch (...) {
    sym.end();
    throw;
  }
  sym.end();
  if (in.awaiting_symbols) in.awaiting_symbols->store(false, std::memory_order_release);
  build_model(in, snap, std::move(stacks), &build->model);
  build->symbolizer = sym.backend();

  BundleFiles files;
  files.dirfd = dirfd;
  files.buf = buf;
  files.compress = in.recorder->cfg.compress_zstd;
  const BundleContent c{in, build->model, snap.events, build->symbolizer, &snap.peak};
  using Writer = bool (*)(BundleFiles&, const BundleContent&, std::string*);
  static const Writer kFiles[] = {write_events_json,      write_allocations_json, write_stacks_json,
                                  write_metadata_json,    write_environment_json, write_summary_txt,
                                  write_framework_files,  write_peak_json};
  for (Writer w : kFiles)
    if (!w(files, c, error)) return false;
  add_optional_pickle(files, snap, build->model, arena_at_start);
  build->names = files.names;
  // The frozen memory goes back to the freeze (freeze_done) after this call:
  // the manifest, last, reads the model only.
  return write_manifest_json(files, BundleContent{in, build->model, EventSpan{}, build->symbolizer}, error);
}

bool rewrite_verdict_files(int bundle_fd, const BundleInput& in, BundleBuild& build, WriteBuffer buf,
                           std::string* error) {
  BundleFiles files;
  files.dirfd = bundle_fd;
  files.buf = buf;
  files.rewrite = true;
  files.names = build.names;
  set_model_verdict(in, &build.model);
  const BundleContent c{in, build.model, EventSpan{}, build.symbolizer};
  using Writer = bool (*)(BundleFiles&, const BundleContent&, std::string*);
  static const Writer kFiles[] = {write_framework_files, write_metadata_json, write_summary_txt,
                                  write_manifest_json};
  for (Writer w : kFiles)
    if (!w(files, c, error)) return false;
  build.names = files.names;  // the framework's files, when they came with the verdict
  fsync(bundle_fd);
  return true;
}

}  // namespace gpumemrec
