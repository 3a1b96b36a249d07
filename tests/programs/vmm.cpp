// vmm: PyTorch expandable_segments-style allocator on the CUDA virtual memory
// management API (links -lcuda).
//
//   vmm [api] [chunk_bytes] [reserve_bytes]
//     api: cuMemCreate (the only one)
//     chunk_bytes: default 67108864, rounded up to the allocation granularity
//     reserve_bytes: VA reserved up front, default 274877906944 (256 GiB)
//
// cuMemAddressReserve one big range, then repeatedly cuMemCreate a chunk,
// cuMemMap it at the end of the segment and cuMemSetAccess it, until
// cuMemCreate fails with CUDA_ERROR_OUT_OF_MEMORY. After the 3rd chunk it
// unmaps and releases chunk #1 (the hole stays). Physical handles are the
// allocations (ALLOC ptr = handle value, like the fake ledger's address).
// Extra output:
//   RESERVE va=0x<hex> size=<b> rc=<rc>
//   MAP va=0x<hex> handle=0x<hex> size=<b> rc=<rc>
//   UNMAP va=0x<hex> size=<b> rc=<rc>
#include <cuda.h>

#include "prog_common.h"

namespace {
LiveSet g_live;  // ptr = handle, aux = VA it is mapped at
CUdeviceptr g_base = 0;
uint64_t g_reserved = 0;
uint64_t g_next_offset = 0;
CUmemAllocationProp g_prop{};

const char* err_name(CUresult r) {
  const char* s = nullptr;
  return cuGetErrorName(r, &s) == CUDA_SUCCESS && s ? s : "?";
}
}  // namespace

extern "C" PROG_NOINLINE void reserve_address_space_vmm(uint64_t reserve) {
  const CUresult r = cuMemAddressReserve(&g_base, reserve, 0, 0, 0);
  printf("RESERVE va=0x%llx size=%" PRIu64 " rc=%d\n", static_cast<unsigned long long>(g_base), reserve,
         static_cast<int>(r));
  if (r != CUDA_SUCCESS) prog_fail("cuMemAddressReserve", r);
  g_reserved = reserve;
}

// Creates one physical chunk and maps it at the end of the segment.
extern "C" PROG_NOINLINE CUresult map_chunk_vmm(uint64_t chunk) {
  if (g_next_offset + chunk > g_reserved) prog_fail("reserved VA exhausted before OOM", 0);
  CUmemGenericAllocationHandle handle = 0;
  CUresult r = cuMemCreate(&handle, chunk, &g_prop, 0);
  if (r != CUDA_SUCCESS) return r;
  prog_print_alloc("cuMemCreate", handle, chunk);
  const CUdeviceptr va = g_base + g_next_offset;
  r = cuMemMap(va, chunk, 0, handle, 0);
  printf("MAP va=0x%llx handle=0x%llx size=%" PRIu64 " rc=%d\n", static_cast<unsigned long long>(va),
         static_cast<unsigned long long>(handle), chunk, static_cast<int>(r));
  if (r != CUDA_SUCCESS) prog_fail("cuMemMap", r);
  CUmemAccessDesc access{};
  access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  access.location.id = 0;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  r = cuMemSetAccess(va, chunk, &access, 1);
  if (r != CUDA_SUCCESS) prog_fail("cuMemSetAccess", r);
  g_live.add(handle, chunk, va);
  g_next_offset += chunk;
  return CUDA_SUCCESS;
}

extern "C" PROG_NOINLINE void shrink_segment_vmm() {
  if (g_live.items.size() < 2) return;
  LiveAlloc a = g_live.take(1);
  CUresult r = cuMemUnmap(a.aux, a.size);
  printf("UNMAP va=0x%llx size=%" PRIu64 " rc=%d\n", static_cast<unsigned long long>(a.aux), a.size,
         static_cast<int>(r));
  if (r != CUDA_SUCCESS) prog_fail("cuMemUnmap", r);
  r = cuMemRelease(a.ptr);
  prog_print_free("cuMemRelease", a.ptr, a.size, r);
  if (r != CUDA_SUCCESS) prog_fail("cuMemRelease", r);
}

extern "C" PROG_NOINLINE CUresult grow_segment_vmm(uint64_t chunk) {
  for (int i = 0; i < kMaxIterations; ++i) {
    const CUresult r = map_chunk_vmm(chunk);
    if (r != CUDA_SUCCESS) {
      prog_print_oom("cuMemCreate", chunk, r, err_name(r), g_live);
      return r;
    }
    if (i == 2) shrink_segment_vmm();
  }
  prog_fail("no out-of-memory reached", 0);
}

int main(int argc, char** argv) {
  prog_init_stdout();
  const char* api_name = argc > 1 ? argv[1] : "cuMemCreate";
  uint64_t chunk = prog_parse_size(argc > 2 ? argv[2] : nullptr, 64ull << 20);
  const uint64_t reserve_arg = prog_parse_size(argc > 3 ? argv[3] : nullptr, 256ull << 30);
  if (strcmp(api_name, "cuMemCreate") != 0) {
    fprintf(stderr, "usage: vmm [cuMemCreate] [chunk_bytes] [reserve_bytes]\n");
    return 2;
  }
  CUresult r = cuInit(0);
  if (r != CUDA_SUCCESS) prog_fail("cuInit", r);
  CUdevice dev = 0;
  CUcontext ctx = nullptr;
  if ((r = cuDeviceGet(&dev, 0)) != CUDA_SUCCESS) prog_fail("cuDeviceGet", r);
  if ((r = cuDevicePrimaryCtxRetain(&ctx, dev)) != CUDA_SUCCESS) prog_fail("cuDevicePrimaryCtxRetain", r);
  if ((r = cuCtxSetCurrent(ctx)) != CUDA_SUCCESS) prog_fail("cuCtxSetCurrent", r);

  g_prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  g_prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  g_prop.location.id = dev;
  size_t gran = 0;
  if ((r = cuMemGetAllocationGranularity(&gran, &g_prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED)) != CUDA_SUCCESS)
    prog_fail("cuMemGetAllocationGranularity", r);
  chunk = (chunk + gran - 1) / gran * gran;
  const uint64_t reserve = (reserve_arg + gran - 1) / gran * gran;
  printf("START prog=vmm api=cuMemCreate chunk=%" PRIu64 " granularity=%zu\n", chunk, gran);

  reserve_address_space_vmm(reserve);
  r = grow_segment_vmm(chunk);
  if (r != CUDA_ERROR_OUT_OF_MEMORY) prog_fail("unexpected allocation error", r);
  size_t free_b = 0, total_b = 0;
  r = cuMemGetInfo(&free_b, &total_b);
  printf("MEMINFO free=%zu total=%zu rc=%d\n", free_b, total_b, static_cast<int>(r));
  prog_print_done(g_live);
  return 0;
}
