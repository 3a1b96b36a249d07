#include "common/event.h"

namespace gpumemrec {

const char* event_type_name(EventKind k) {
  switch (k) {
    case EventKind::kAlloc: return "allocation";
    case EventKind::kFree: return "deallocation";
    case EventKind::kOom: return "oom";
    case EventKind::kAllocFailed: return "allocation_failed";
    case EventKind::kFreeFailed: return "deallocation_failed";
    case EventKind::kMap: return "map";
    case EventKind::kUnmap: return "unmap";
  }
  return "unknown";
}

const char* memory_type_name(MemoryType t) {
  switch (t) {
    case MemoryType::kDevice: return "device";
    case MemoryType::kManaged: return "managed";
    case MemoryType::kPhysical: return "physical";
    case MemoryType::kMapping: return "mapping";
  }
  return "unknown";
}

// HIP is "rocm" as Stormlog/gpumemprof name it (gpumemprof/tracker.py:
// `backend in {"cuda", "rocm"}`; gpumemprof/telemetry.py maps "rocm" to its
// rocm collector), so their loaders do not read our HIP bundles as CUDA. The
// API names (hipMalloc...) are unchanged.
const char* backend_name(Backend b) { return b == Backend::kHip ? "rocm" : "cuda"; }

}  // namespace gpumemrec
