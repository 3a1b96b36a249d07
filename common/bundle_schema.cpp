#include "common/bundle_schema.h"

namespace gpumemrec {

namespace {

// One table per enum: the value and its name in the files.
template <typename E>
struct Named {
  E value;
  const char* name;
};

constexpr Named<EventKind> kEventKinds[] = {
    {EventKind::kAlloc, "allocation"},        {EventKind::kFree, "deallocation"},
    {EventKind::kOom, "oom"},                 {EventKind::kAllocFailed, "allocation_failed"},
    {EventKind::kFreeFailed, "deallocation_failed"}, {EventKind::kMap, "map"},
    {EventKind::kUnmap, "unmap"},
};

constexpr Named<MemoryType> kMemoryTypes[] = {
    {MemoryType::kDevice, "device"},
    {MemoryType::kManaged, "managed"},
    {MemoryType::kPhysical, "physical"},
    {MemoryType::kMapping, "mapping"},
};

constexpr Named<FrameKind> kFrameKinds[] = {{FrameKind::kPython, "python"}, {FrameKind::kNative, "native"}};

constexpr char kOtherName[] = "other";

// The tables are in value order from 0, so a known value is found at once
// (events.json names every event's kind and memory type).
template <typename E, size_t N>
const char* name_of(const Named<E> (&table)[N], E v) {
  if (size_t(v) < N && table[size_t(v)].value == v) return table[size_t(v)].name;
  for (const Named<E>& n : table)
    if (n.value == v) return n.name;
  return kOtherName;
}

template <typename E, size_t N>
E value_of(const Named<E> (&table)[N], std::string_view name, E other) {
  for (const Named<E>& n : table)
    if (name == n.name) return n.value;
  return other;
}

}  // namespace

bool api_destroys_context(std::string_view api) {
  static constexpr std::string_view kApis[] = {
      "cudaDeviceReset",           "cuDevicePrimaryCtxReset",      "cuDevicePrimaryCtxReset_v2",
      "cuDevicePrimaryCtxRelease", "cuDevicePrimaryCtxRelease_v2", "hipDeviceReset",
      "hipDevicePrimaryCtxReset"};
  for (std::string_view a : kApis)
    if (api == a) return true;
  return api_destroys_created_context(api);
}

bool api_destroys_created_context(std::string_view api) {
  return api == "cuCtxDestroy" || api == "cuCtxDestroy_v2" || api == "cuCtxDetach";
}

const char* event_type_name(EventKind k) { return name_of(kEventKinds, k); }
EventKind event_kind_from_name(std::string_view n) { return value_of(kEventKinds, n, EventKind::kOther); }
const char* memory_type_name(MemoryType t) { return name_of(kMemoryTypes, t); }
MemoryType memory_type_from_name(std::string_view n) { return value_of(kMemoryTypes, n, MemoryType::kOther); }
const char* frame_kind_name(FrameKind k) { return name_of(kFrameKinds, k); }
FrameKind frame_kind_from_name(std::string_view n) { return value_of(kFrameKinds, n, FrameKind::kOther); }

// HIP is "rocm" as Stormlog/gpumemprof name it (gpumemprof/tracker.py:
// `backend in {"cuda", "rocm"}`; gpumemprof/telemetry.py maps "rocm" to its
// rocm collector), so their loaders do not read our HIP bundles as CUDA. The
// API names (hipMalloc...) are unchanged.
const char* backend_name(Backend b) { return b == Backend::kHip ? "rocm" : "cuda"; }

}  // namespace gpumemrec
