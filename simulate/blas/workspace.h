// The device memory NVIDIA's cuBLAS takes by itself: its default workspace.
//
// Sources (cuBLAS documentation, CUDA 13.x, docs.nvidia.com/cuda/cublas):
// - cublasSetWorkspace(): "If the cuBLAS library workspace is not set, all
//   kernels will use the default workspace pool"; cublasSetStream()
//   "unconditionally resets the cuBLAS library workspace back to the default
//   workspace pool"; setting a workspace, even of 0 bytes, "will prevent the
//   cuBLAS library from utilizing the default workspace". Its table of
//   recommended sizes is "based on the cuBLAS default workspace pool size
//   which is GPU architecture dependent": 32 MiB on Hopper (sm90) and
//   Blackwell (sm10x, sm12x), 4 MiB on every other architecture.
// - CUDA Graphs Support: "cuBLAS routines can create memory nodes through the
//   use of stream-ordered allocation APIs, cudaMallocAsync and
//   cudaFreeAsync" -- since CUDA 12.2 the default workspace is stream-ordered
//   memory taken when a routine runs (PyTorch #113994, by NVIDIA:
//   "cuBLAS should be using cudaMallocAsync in CUDA 12.2+"; PyTorch #124250:
//   it "will allocate memory dynamically ... outside PyTorch's CUDA caching
//   allocator" and can fail with out-of-memory).
// No public source gives what cublasCreate itself leaves on the device, or
// which routines need workspace; the simulation models that: a GEMM-family
// routine (gemm, gemmBatched, gemmStridedBatched, GemmEx,
// GemmStridedBatchedEx, SgemmEx) with work to do, on a handle without a
// workspace of the caller's, takes the default pool's size with
// cuMemAllocAsync on the handle's stream and gives it back with
// cuMemFreeAsync (the driver's pool keeps it until a synchronization).
// cublasCreate takes nothing. PyTorch always sets its own workspace
// (CublasHandlePool.cpp, setWorkspaceForHandle), so under PyTorch the
// library takes nothing.
#pragma once

#include <cstddef>

#include "blas/cublas_context.h"

namespace sim::blas {

// The default workspace pool of the simulated card (its compute capability:
// core/profile.h; no profile, the tests' Fake GPU: "other", 4 MiB).
size_t default_pool_bytes();

// Called by a GEMM-family routine whose arguments are valid and that has work
// to do: with no workspace of the caller's, takes and returns the default
// pool on the handle's stream. CUBLAS_STATUS_ALLOC_FAILED when the device
// has not that much free ("Resource allocation failed inside the cuBLAS
// library", cublasStatus_t); CUBLAS_STATUS_NOT_INITIALIZED without a driver.
cublasStatus_t run_with_workspace(const Call& call);

}  // namespace sim::blas
