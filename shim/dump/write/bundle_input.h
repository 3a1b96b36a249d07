// The shared types of one bundle's write: what the dumper hands the writer
// (BundleInput), the buffer it writes through (WriteBuffer), and what a
// written bundle keeps for rewriting its verdict files (BundleBuild).
// Kept apart from bundle_writer.h so that the files' writers and the dump
// job see the types without the whole write.
#pragma once
#include <atomic>
#include <memory>
#include <optional>
#include <cstdint>
#include <string>
#include <vector>

#include "common/bundle_model.h"
#include "shim/dump/capture/dump_snapshot.h"
#include "shim/dump/capture/framework_report.h"
#include "shim/dump/query/device_query.h"
#include "shim/dump/query/gpu_processes.h"
#include "shim/dump/verdict/episodes.h"
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
  LiveAtFreeze live_at_freeze;     // to take NVML's figure for this process back to the freeze
  Verdict verdict;                 // out-of-memory bundles: unknown until decided
  uint64_t episode_ms = 0;         // for the verdict's wording
  RecoveredList recovered;         // recovered episodes without a bundle since the last one
  // Set to false once the stacks are symbolized (a dlclose waits for it:
  // dumper_before_unload).
  std::atomic<bool>* awaiting_symbols = nullptr;
  // > 0: the state was frozen this long after the failure (its episode met
  // other bundles in the works: dumper.cpp, Deferred).
  uint64_t frozen_after_failure_ns = 0;
  // Signal dumps: the requests (handler runs) this bundle serves.
  std::optional<model::SignalRequests> signal_requests;
  // The framework's own view (the Python start-up hook), when it gave one.
  std::shared_ptr<const FrameworkReport> framework;
};

// The device a bundle is about: the failing call's, or for framework_oom the
// one the framework named (its digest's `device`); -1 when neither says.
// The device query at the freeze asked this one (dumper.cpp, device_of).
inline int bundle_device(const BundleInput& in) {
  if (in.failure) return in.failure->device;
  if (in.reason == DumpReason::kFrameworkOom && in.framework) return int(in.framework->fields.device);
  return -1;
}

// Bundles with a verdict: a driver-level failure's, and framework_oom
// (fatal: the framework said so).
inline bool has_verdict(const BundleInput& in) {
  return in.failure != nullptr || in.reason == DumpReason::kFrameworkOom;
}

struct WriteBuffer {
  char* data = nullptr;
  size_t size = 0;
};

// What a written bundle keeps for rewriting its verdict files: the model
// they are written from (the snapshot is gone once the bundle is written).
struct BundleBuild {
  model::Bundle model;
  const char* symbolizer = "";
  std::vector<std::string> names;  // the files, for the manifest
};

}  // namespace gpumemrec
