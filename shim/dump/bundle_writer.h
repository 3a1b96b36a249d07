// Writing one bundle (docs/bundle-format.md is the contract), as named steps:
//   1. take_snapshot (dump_snapshot.h): live tables + ring cut, reconciled,
//      one consistent history;
//   2. symbolize the stacks and build the in-memory model (dump_model.h);
//   3. one writer per file (bundle_files.h): events.json, allocations.json,
//      stacks.json, metadata.json, environment.json, summary.txt, then
//      snapshot.pickle (optional) and manifest.json last.
// The caller (dumper.cpp) owns the directory, the temporary name and the
// publication (fsync, rename, prune, report).
#pragma once
#include <cstdint>
#include <string>

#include "shim/dump/device_query.h"
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
};

struct WriteBuffer {
  char* data = nullptr;
  size_t size = 0;
};

// Writes every file into the directory `dirfd`. False and *error on failure
// (the caller removes the directory).
bool write_bundle(int dirfd, const BundleInput& in, Symbolizer& symbolizer, WriteBuffer buf, std::string* error);

}  // namespace gpumemrec
