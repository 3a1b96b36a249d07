// fw_app: a program whose GPU memory is taken by two "framework" libraries
// between it and the CUDA runtime and driver: a caching allocator
// (libc10_fakecuda.so, fw_cache_lib.cpp, over cudaMalloc) and a
// communication library (libnccl_fake.so.2, fw_nccl_lib.cpp, over
// cuMemCreate/cuMemMap like NCCL). The recorder must name each allocation
// site by the program's function that called the library (train_step,
// setup_communicator) and the owning library by the .so.
//
//   fw_app [steps=3] [block=1048576] [comm=4194304] [oom=0] [release=0]
//
// setup_communicator takes one `comm` buffer through ncclMemAlloc;
// train_step takes `block` bytes through the cache each step and keeps them
// (activations that stay live). oom=1 makes a last train_step ask for more
// than the device holds: the cache's cudaMalloc fails. release=1 then gives
// every train_step block back and empties the cache (cudaFree each) before
// it exits, as a CUDA program that frees on its way out does: the writer
// reads NVML after that (the card accounting must not count the frees).
// release=2 gives the blocks back without emptying the cache. With
// PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync the library allocates with
// cudaMallocAsync and frees with cudaFreeAsync (fw_cache_lib.cpp).
// Output: START, ALLOC lines (api=cache|nccl), OOM (oom=1), DONE.
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "prog_common.h"

extern "C" void* fw_cache_malloc(size_t size);
extern "C" void fw_cache_free(void* p, size_t size);
extern "C" void fw_cache_empty_cache();
extern "C" int ncclMemAlloc(void** ptr, size_t size);

namespace {

uint64_t arg_u64(int argc, char** argv, const char* key, uint64_t def) {
  const size_t n = strlen(key);
  for (int i = 1; i < argc; ++i)
    if (strncmp(argv[i], key, n) == 0 && argv[i][n] == '=') return strtoull(argv[i] + n + 1, nullptr, 10);
  return def;
}

LiveSet g_live;

PROG_NOINLINE void setup_communicator(uint64_t bytes) {
  void* p = nullptr;
  if (ncclMemAlloc(&p, bytes) != 0) {
    printf("ERROR ncclMemAlloc(%" PRIu64 ") failed\n", bytes);
    exit(1);
  }
  g_live.add(reinterpret_cast<uint64_t>(p), bytes);
  printf("ALLOC api=nccl ptr=%p size=%" PRIu64 " rc=0\n", p, bytes);
}

PROG_NOINLINE bool train_step(uint64_t bytes) {
  void* p = fw_cache_malloc(bytes);
  if (!p) {
    printf("OOM api=cache size=%" PRIu64 " rc=2 name=cudaErrorMemoryAllocation live_count=%zu live_bytes=%" PRIu64 "\n",
           bytes, g_live.items.size(), g_live.bytes);
    return false;
  }
  g_live.add(reinterpret_cast<uint64_t>(p), bytes);
  printf("ALLOC api=cache ptr=%p size=%" PRIu64 " rc=0\n", p, bytes);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  setvbuf(stdout, nullptr, _IOLBF, 0);
  const uint64_t steps = arg_u64(argc, argv, "steps", 3), block = arg_u64(argc, argv, "block", 1 << 20);
  const uint64_t comm = arg_u64(argc, argv, "comm", 4 << 20), oom = arg_u64(argc, argv, "oom", 0);
  const uint64_t release = arg_u64(argc, argv, "release", 0);
  printf("START prog=fw_app steps=%" PRIu64 " block=%" PRIu64 " comm=%" PRIu64 "\n", steps, block, comm);
  setup_communicator(comm);
  for (uint64_t i = 0; i < steps; ++i)
    if (!train_step(block)) return 1;
  if (oom) train_step(uint64_t(1) << 50);
  if (release) {
    // The communicator's buffer (the first) stays; the activations go.
    while (g_live.items.size() > 1) {
      const LiveAlloc a = g_live.take(g_live.items.size() - 1);
      fw_cache_free(reinterpret_cast<void*>(a.ptr), a.size);
    }
    if (release == 1) fw_cache_empty_cache();
  }
  printf("DONE live_count=%zu live_bytes=%" PRIu64 "\n", g_live.items.size(), g_live.bytes);
  return 0;
}
