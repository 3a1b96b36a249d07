// Streams and synchronization: nothing runs, so all work is done when it
// is queued.
#include <mutex>
#include <set>

#include "driver/internal.h"

namespace {
std::mutex g_streams_mu;
std::set<void*>* g_streams = new std::set<void*>();  // never destroyed
}  // namespace

using namespace drv;

FAKE_EXPORT CUresult CUDAAPI cuCtxSynchronize(void) {
  pools_released_at_sync();
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult CUDAAPI cuStreamCreate(CUstream* phStream, unsigned int Flags) {
  if (phStream == nullptr) return CUDA_ERROR_INVALID_VALUE;
  void* h = new char[16];
  {
    std::lock_guard<std::mutex> lock(g_streams_mu);
    g_streams->insert(h);
  }
  *phStream = reinterpret_cast<CUstream>(h);
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult CUDAAPI cuStreamDestroy_v2(CUstream hStream) {
  void* h = reinterpret_cast<void*>(hStream);
  {
    std::lock_guard<std::mutex> lock(g_streams_mu);
    if (g_streams->erase(h) == 0) return CUDA_ERROR_INVALID_HANDLE;
  }
  delete[] static_cast<char*>(h);
  return CUDA_SUCCESS;
}

// A synchronization is where a pool gives back what exceeds its release
// threshold (CUDA Driver API, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD).
FAKE_EXPORT CUresult CUDAAPI cuStreamSynchronize(CUstream hStream) {
  pools_released_at_sync();
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult CUDAAPI cuStreamSynchronize_ptsz(CUstream hStream) { return cuStreamSynchronize(hStream); }

FAKE_EXPORT CUresult CUDAAPI cuStreamQuery(CUstream hStream) { return CUDA_SUCCESS; }
