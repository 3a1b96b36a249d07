// hip_linked: a HIP program linked against libamdhip64 (the fake, SONAME
// libamdhip64.so.6; found through RUNPATH).
//
//   hip_linked [api] [chunk_bytes]
//     api: hipMalloc (default) | hipExtMallocWithFlags | hipMallocManaged |
//          hipMallocAsync | hipMallocFromPoolAsync | hipMallocPitch | hipMemCreate |
//          hipDeviceReset (hipMalloc; after the 4th chunk hipDeviceReset instead
//          of two frees: every chunk is printed as a FREE of api=hipDeviceReset)
//     chunk_bytes: default 67108864 (64 MiB); rounded up to the granularity
//                  for hipMemCreate
//
// Allocates 1 MiB of host memory with hipHostMalloc first (never device
// memory), then chunks with <api>; after the 4th frees chunks #1 and #3
// (hipFree / hipFreeAsync / hipMemRelease) and allocates until
// hipErrorOutOfMemory. hipMallocPitch: width=1000 bytes, height=chunk/1024
// (ALLOC size = pitch*rows, OOM size = width*height). hipMemCreate ALLOC ptr
// is the handle value.
#include <hip/hip_runtime_api.h>

#include "prog_common.h"

namespace {

enum Api { kMalloc, kExt, kManaged, kAsync, kFromPool, kPitch, kMemCreate, kReset };
constexpr int kApis = 8;
const char* const kModeNames[] = {"hipMalloc",     "hipExtMallocWithFlags", "hipMallocManaged", "hipMallocAsync",
                                  "hipMallocFromPoolAsync", "hipMallocPitch", "hipMemCreate", "hipDeviceReset"};
// The allocating call of each mode (ALLOC and OOM lines).
const char* const kApiNames[] = {"hipMalloc",     "hipExtMallocWithFlags", "hipMallocManaged", "hipMallocAsync",
                                 "hipMallocFromPoolAsync", "hipMallocPitch", "hipMemCreate", "hipMalloc"};
const char* const kFreeNames[] = {"hipFree",      "hipFree",        "hipFree",      "hipFreeAsync",
                                  "hipFreeAsync", "hipFree",        "hipMemRelease", "hipDeviceReset"};

LiveSet g_live;
hipStream_t g_stream = nullptr;
hipMemPool_t g_pool = nullptr;
hipMemAllocationProp g_prop{};

}  // namespace

extern "C" PROG_NOINLINE void reserve_pinned_staging_hip() {
  void* h = nullptr;
  const hipError_t e = hipHostMalloc(&h, 1 << 20, 0);
  printf("HOST api=hipHostMalloc ptr=%p size=%d rc=%d\n", h, 1 << 20, static_cast<int>(e));
  if (e != hipSuccess) prog_fail("hipHostMalloc", e);
}

extern "C" PROG_NOINLINE hipError_t allocate_weights_hip(int api, uint64_t chunk, uint64_t* out, uint64_t* accounted) {
  void* p = nullptr;
  hipError_t e = hipErrorInvalidValue;
  *accounted = chunk;
  switch (api) {
    case kMalloc: case kReset: e = hipMalloc(&p, chunk); break;
    case kExt: e = hipExtMallocWithFlags(&p, chunk, hipDeviceMallocDefault); break;
    case kManaged: e = hipMallocManaged(&p, chunk, hipMemAttachGlobal); break;
    case kAsync: e = hipMallocAsync(&p, chunk, g_stream); break;
    case kFromPool: e = hipMallocFromPoolAsync(&p, chunk, g_pool, g_stream); break;
    case kPitch: {
      size_t pitch = 0;
      const size_t rows = chunk / 1024 ? chunk / 1024 : 1;
      e = hipMallocPitch(&p, &pitch, 1000, rows);
      *accounted = static_cast<uint64_t>(pitch) * rows;
      break;
    }
    case kMemCreate: {
      hipMemGenericAllocationHandle_t h = nullptr;
      e = hipMemCreate(&h, chunk, &g_prop, 0);
      p = reinterpret_cast<void*>(h);
      break;
    }
  }
  *out = reinterpret_cast<uintptr_t>(p);
  return e;
}

// hipDeviceReset: every allocation of the device is gone.
extern "C" PROG_NOINLINE void reset_device_hip() {
  const hipError_t e = hipDeviceReset();
  while (!g_live.items.empty()) {
    const LiveAlloc a = g_live.take(0);
    prog_print_free("hipDeviceReset", a.ptr, a.size, e);
  }
  if (e != hipSuccess) prog_fail("hipDeviceReset", e);
}

extern "C" PROG_NOINLINE void release_some_hip(int api) {
  if (api == kReset) return reset_device_hip();
  for (size_t idx : {size_t{3}, size_t{1}}) {
    if (idx >= g_live.items.size()) continue;
    LiveAlloc a = g_live.take(idx);
    void* p = reinterpret_cast<void*>(static_cast<uintptr_t>(a.ptr));
    hipError_t e;
    if (api == kMemCreate) e = hipMemRelease(reinterpret_cast<hipMemGenericAllocationHandle_t>(p));
    else if (api == kAsync || api == kFromPool) e = hipFreeAsync(p, g_stream);
    else e = hipFree(p);
    prog_print_free(kFreeNames[api], a.ptr, a.size, e);
    if (e != hipSuccess) prog_fail(kFreeNames[api], e);
  }
}

extern "C" PROG_NOINLINE hipError_t grow_activations_hip(int api, uint64_t chunk) {
  for (int i = 0; i < kMaxIterations; ++i) {
    uint64_t p = 0, accounted = 0;
    const hipError_t e = allocate_weights_hip(api, chunk, &p, &accounted);
    if (e != hipSuccess) {
      const uint64_t logical = api == kPitch ? 1000ull * (chunk / 1024 ? chunk / 1024 : 1) : chunk;
      prog_print_oom(kApiNames[api], logical, e, hipGetErrorName(e), g_live);
      return e;
    }
    g_live.add(p, accounted);
    prog_print_alloc(kApiNames[api], p, accounted);
    if (i == 3) release_some_hip(api);
  }
  prog_fail("no out-of-memory reached", 0);
}

int main(int argc, char** argv) {
  prog_init_stdout();
  const char* api_name = argc > 1 ? argv[1] : "hipMalloc";
  uint64_t chunk = prog_parse_size(argc > 2 ? argv[2] : nullptr, 64ull << 20);
  int api = -1;
  for (int i = 0; i < kApis; ++i)
    if (strcmp(api_name, kModeNames[i]) == 0) api = i;
  if (api < 0) {
    fprintf(stderr, "usage: hip_linked [hipMalloc|hipExtMallocWithFlags|hipMallocManaged|hipMallocAsync|"
                    "hipMallocFromPoolAsync|hipMallocPitch|hipMemCreate|hipDeviceReset] [chunk_bytes]\n");
    return 2;
  }
  int count = 0, rt = 0;
  hipError_t e = hipGetDeviceCount(&count);
  if (e != hipSuccess) prog_fail("hipGetDeviceCount", e);
  if ((e = hipRuntimeGetVersion(&rt)) != hipSuccess) prog_fail("hipRuntimeGetVersion", e);
  char name[64] = {0};
  if ((e = hipDeviceGetName(name, sizeof name, 0)) != hipSuccess) prog_fail("hipDeviceGetName", e);

  g_prop.type = hipMemAllocationTypePinned;
  g_prop.location.type = hipMemLocationTypeDevice;
  g_prop.location.id = 0;
  if (api == kMemCreate) {
    size_t gran = 0;
    if ((e = hipMemGetAllocationGranularity(&gran, &g_prop, hipMemAllocationGranularityRecommended)) != hipSuccess)
      prog_fail("hipMemGetAllocationGranularity", e);
    chunk = (chunk + gran - 1) / gran * gran;
  }
  printf("START prog=hip_linked api=%s chunk=%" PRIu64 "\n", kModeNames[api], chunk);
  printf("DEVICE count=%d name=\"%s\" runtime=%d\n", count, name, rt);

  reserve_pinned_staging_hip();
  if ((e = hipStreamCreate(&g_stream)) != hipSuccess) prog_fail("hipStreamCreate", e);
  if ((e = hipDeviceGetDefaultMemPool(&g_pool, 0)) != hipSuccess) prog_fail("hipDeviceGetDefaultMemPool", e);

  e = grow_activations_hip(api, chunk);
  if (e != hipErrorOutOfMemory) prog_fail("unexpected allocation error", e);
  const hipError_t last = hipGetLastError();
  printf("LASTERROR rc=%d name=%s after_reset=%d\n", static_cast<int>(last), hipGetErrorName(last),
         static_cast<int>(hipGetLastError()));
  size_t free_b = 0, total_b = 0;
  e = hipMemGetInfo(&free_b, &total_b);
  printf("MEMINFO free=%zu total=%zu rc=%d\n", free_b, total_b, static_cast<int>(e));
  if ((e = hipDeviceSynchronize()) != hipSuccess) prog_fail("hipDeviceSynchronize", e);
  prog_print_done(g_live);
  return 0;
}
