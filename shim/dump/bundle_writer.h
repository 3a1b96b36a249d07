// Writing one bundle (docs/bundle-format.md is the contract), as named steps:
//   1. finish_snapshot (dump_snapshot.h): the frozen live tables and ring
//      cut, reconciled, one consistent history;
//   2. symbolize the stacks and build the in-memory model (dump_model.h);
//   3. one writer per file (bundle_files.h): events.json, allocations.json,
//      stacks.json, metadata.json, environment.json, summary.txt, then
//      snapshot.pickle (optional) and manifest.json last.
// When the verdict of an out-of-memory bundle comes after it was written,
// metadata.json, summary.txt and manifest.json are written again from the
// kept model (rewrite_verdict_files), each to a new file renamed over the
// old one: a reader sees the old file or the new one, never a mix.
// The caller (dumper.cpp) owns the directory, the temporary name and the
// publication (fsync, rename, prune, report).
#pragma once
#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "common/bundle_model.h"
#include "shim/dump/device_query.h"
#include "shim/dump/dump_snapshot.h"
#include "shim/dump/episodes.h"
#include "shim/dump/gpu_processes.h"
#include "shim/record/failure.h"

namespace gpumemrec {

struct Recorder;
class Symbolizer;

struct BundleInput {
  Recorder* recorder = nullptr;
  DumpReason reason = DumpReason::kNone;
  const FailureInfo* failure = nullptr;  // null for signal / exit dumps
  Backend backend = Backend::kCuda;
  std::string bundle_name;
  uint64_t created_ns = 0;
  uint64_t failed_calls_before_dump = 0;  // see dumper.cpp (episodes)
  DeviceReport devices;
  GpuProcessReport gpu_processes;  // NVML's view of the failing device
  Verdict verdict;                 // out-of-memory bundles: unknown until decided
  uint64_t episode_ms = 0;         // for the verdict's wording
  RecoveredList recovered;         // recovered episodes without a bundle since the last one
  // Set to false once the stacks are symbolized (a dlclose waits for it:
  // dumper_before_unload).
  std::atomic<bool>* awaiting_symbols = nullptr;
  // > 0: the state was frozen this long after the failure (its episode met
  // other bundles in the works: dumper.cpp, Deferred).
  uint64_t frozen_after_failure_ns = 0;
};

struct WriteBuffer {
  char* data = nullptr;
  size_t size = 0;
};

// What a written bundle keeps for rewriting its verdict files.
struct BundleBuild {
  DumpSnapshot snap;  // its frozen events are gone once the bundle is written
  model::Bundle model;
  const char* symbolizer = "";
  std::vector<std::string> names;  // the files, for the manifest
};

// Writes every file into the directory `dirfd`. False and *error on failure
// (the caller removes the directory). *build is left for rewrite_verdict_files.
bool write_bundle(int dirfd, const BundleInput& in, const FrozenState& frozen, Symbolizer& symbolizer,
                  WriteBuffer buf, BundleBuild* build, std::string* error);
// metadata.json, summary.txt, then manifest.json, written again with
// in.verdict, each renamed over the old one.
bool rewrite_verdict_files(int bundle_fd, const BundleInput& in, BundleBuild& build, WriteBuffer buf,
                           std::string* error);

}  // namespace gpumemrec
