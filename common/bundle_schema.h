// The bundle's vocabulary (docs/bundle-format.md is the contract), shared by
// the shim, which writes bundles, and the tools, which read them: the schema
// version, the file names, the enums with their names in the files, the
// bundle-size figures; the keys are in common/bundle_keys.h. Nothing here
// allocates (the shim uses it on the dump path).
#pragma once
#include <cstdint>
#include <string_view>

#include "common/bundle_keys.h"

namespace gpumemrec {

// manifest.json "schema_version": what the shim writes and the only one the
// tools read.
constexpr int64_t kBundleSchemaVersion = 1;
// manifest.json "generator".
inline constexpr char kBundleGenerator[] = "gpumemrec 0.1.0";

// The files of a bundle.
namespace file {
inline constexpr char kManifest[] = "manifest.json";
inline constexpr char kMetadata[] = "metadata.json";
inline constexpr char kEvents[] = "events.json";
inline constexpr char kAllocations[] = "allocations.json";
inline constexpr char kStacks[] = "stacks.json";
inline constexpr char kEnvironment[] = "environment.json";
inline constexpr char kSummary[] = "summary.txt";
inline constexpr char kSnapshot[] = "snapshot.pickle";
// The framework's own view, from the Python start-up hook (docs/python-hook.md).
inline constexpr char kFramework[] = "framework.json";
inline constexpr char kPeak[] = "peak.json";
inline constexpr char kFrameworkState[] = "framework_state.pickle";
inline constexpr char kFrameworkMemoryProfile[] = "framework_memory_profile.pb.gz";
}  // namespace file

// events.json "event_type". The ring packs it into 4 bits (common/event.h):
// the values are those of the ring; kOther is a name a reader did not know.
enum class EventKind : uint8_t {
  kAlloc = 0,        // "allocation": allocation succeeded
  kFree = 1,         // "deallocation": free succeeded
  kOom = 2,          // "oom": allocation failed with the out-of-memory code
  kAllocFailed = 3,  // "allocation_failed": allocation failed with another code
  kFreeFailed = 4,   // "deallocation_failed": free returned an error
  kMap = 5,          // "map": cuMemMap / hipMemMap
  kUnmap = 6,        // "unmap": cuMemUnmap / hipMemUnmap
  kOther = 15,       // "other"
};

// Whether an event's timestamp is the moment its call started (a free, an
// unmap: the recorder reads the time before the real call, so that a freed
// address handed to another thread is freed first in time order) rather
// than the moment it returned (everything else). Bundles written before
// 2026-11-25 stamped every event at the return.
inline bool event_time_is_call_start(EventKind k) {
  return k == EventKind::kFree || k == EventKind::kFreeFailed || k == EventKind::kUnmap;
}

// events.json / allocations.json "memory_type"; 4 bits in the ring.
enum class MemoryType : uint8_t {
  kDevice = 0,    // "device"
  kManaged = 1,   // "managed"
  kPhysical = 2,  // "physical": VMM handle (cuMemCreate / hipMemCreate), counted by handle
  kMapping = 3,   // "mapping": a cuMemMap range; never counted (the handle is)
  kOther = 15,    // "other"
};

// "backend" (manifest, metadata, events) and the bundle name's backend field.
enum class Backend : uint8_t { kCuda = 0, kHip = 1 };

// stacks.json frame "kind".
enum class FrameKind : uint8_t { kPython, kNative, kOther };

// A "deallocation" (or "unmap") whose api is one of these is an allocation
// the driver freed with a destroyed context: a primary context's
// (cudaDeviceReset, cuDevicePrimaryCtxReset(_v2), cuDevicePrimaryCtxRelease(_v2)
// (the last reference), hipDeviceReset, hipDevicePrimaryCtxReset) or one made
// by cuCtxCreate (cuCtxDestroy(_v2), the last cuCtxDetach:
// api_destroys_created_context).
bool api_destroys_context(std::string_view api);
bool api_destroys_created_context(std::string_view api);

const char* event_type_name(EventKind k);    // "allocation", "deallocation", "oom", ..., "other"
EventKind event_kind_from_name(std::string_view name);
const char* memory_type_name(MemoryType t);  // "device", "managed", "physical", "mapping", "other"
MemoryType memory_type_from_name(std::string_view name);
const char* backend_name(Backend b);         // "cuda", "rocm"
const char* frame_kind_name(FrameKind k);    // "python", "native", "other"
FrameKind frame_kind_from_name(std::string_view name);

// What a bundle takes on disk, measured with bench/oom_bench.py
// (docs/performance-log.md, "Out-of-memory path"; 100,000 live allocations from
// 10,000 call sites, cudaMalloc/cudaFree events, rank 0 of 1):
//  - events.json per event (385 measured; a rank and job id add ~50);
//  - snapshot.pickle, written when the ring holds at most kSnapshotMaxEvents
//    events: per event (120-140 measured) plus what it holds for the live
//    allocations and their frames (21 MB);
//  - allocations.json and stacks.json (17 + 31 MB) and the small files.
// The last two grow with the live allocations and call sites, which are not
// known at start-up: an allowance. Used by the start-up retention check
// (shim/dump/place/retention_check.h).
// Rings bigger than this, or live sets bigger than this, get no
// snapshot.pickle at dump time (it would dominate the dump's time and memory:
// 2.1M live allocations took 3.7 s of an 8.7 s dump, for a 230 MB pickle, on
// a loaded 2-core machine); `gpumemrec export` converts any bundle.
constexpr uint64_t kSnapshotMaxEvents = 200000;
constexpr uint64_t kSnapshotMaxLive = 200000;
constexpr uint64_t kEventJsonBytesPerEvent = 390;
constexpr uint64_t kPickleBytesPerEvent = 140;
constexpr uint64_t kPickleFixedBytes = uint64_t(24) << 20;
constexpr uint64_t kOtherFilesBytes = uint64_t(48) << 20;

struct BundleEstimate {
  uint64_t events_json = 0;
  uint64_t pickle = 0;  // 0 when the ring is too big for snapshot.pickle
  uint64_t other = 0;
  uint64_t total() const { return events_json + pickle + other; }
};

// What a plain bundle of a full ring of `ring_events` takes on disk, about
// (the start-up retention check; GPUMEMREC_COMPRESS=auto).
inline BundleEstimate estimate_bundle(uint64_t ring_events) {
  BundleEstimate e;
  e.events_json = ring_events * kEventJsonBytesPerEvent;
  if (ring_events <= kSnapshotMaxEvents) e.pickle = ring_events * kPickleBytesPerEvent + kPickleFixedBytes;
  e.other = kOtherFilesBytes;
  return e;
}

}  // namespace gpumemrec
