// The NCCL API types, as NCCL 2.30.7's nccl.h declares them (the
// nvidia-nccl-cu13 wheel PyTorch 2.14.1 installs; the header is not part of
// the CUDA toolkit, so the few types the simulation needs are declared here;
// tests/simulate/check_nccl_header.py compiles these sources against
// NVIDIA's nccl.h and checks every value below).
#pragma once

#include <cuda_runtime_api.h>

#include <climits>
#include <cstddef>
#include <cstdint>

#define NCCL_SIM_MAJOR 2
#define NCCL_SIM_MINOR 30
#define NCCL_SIM_PATCH 7
// NCCL_VERSION(X,Y,Z) = X*10000 + Y*100 + Z from 2.9 on (nccl.h).
#define NCCL_SIM_VERSION_CODE (NCCL_SIM_MAJOR * 10000 + NCCL_SIM_MINOR * 100 + NCCL_SIM_PATCH)

// The enumerations' values, as X(name, value) lists: types.h makes the enums
// from them, and tests/simulate/check_nccl_header.py asserts each against
// NVIDIA's nccl.h.
#define SIM_NCCL_RESULTS(X)                                                                             \
  X(ncclSuccess, 0) X(ncclUnhandledCudaError, 1) X(ncclSystemError, 2) X(ncclInternalError, 3)         \
  X(ncclInvalidArgument, 4) X(ncclInvalidUsage, 5) X(ncclRemoteError, 6) X(ncclInProgress, 7)          \
  X(ncclTimeout, 8) X(ncclNumResults, 9)
#define SIM_NCCL_RED_OPS(X) X(ncclSum, 0) X(ncclProd, 1) X(ncclMax, 2) X(ncclMin, 3) X(ncclAvg, 4) X(ncclNumOps, 5)
#define SIM_NCCL_DATA_TYPES(X)                                                                          \
  X(ncclInt8, 0) X(ncclUint8, 1) X(ncclInt32, 2) X(ncclUint32, 3) X(ncclInt64, 4) X(ncclUint64, 5)     \
  X(ncclFloat16, 6) X(ncclFloat32, 7) X(ncclFloat64, 8) X(ncclBfloat16, 9) X(ncclFloat8e4m3, 10)       \
  X(ncclFloat8e5m2, 11) X(ncclNumTypes, 12)
#define SIM_NCCL_SCALARS(X) X(ncclScalarDevice, 0) X(ncclScalarHostImmediate, 1)
#define SIM_NCCL_MEM_STATS(X)                                                                           \
  X(ncclStatGpuMemSuspend, 0) X(ncclStatGpuMemSuspended, 1) X(ncclStatGpuMemPersist, 2) X(ncclStatGpuMemTotal, 3)
#define SIM_NCCL_CONSTANTS(X)                                                                           \
  X(NCCL_UNIQUE_ID_BYTES, 128) X(NCCL_CONFIG_UNDEF_INT, INT_MIN) X(NCCL_SPLIT_NOCOLOR, -1)               \
  X(NCCL_API_MAGIC, 0xcafebeef) X(NCCL_MAJOR, NCCL_SIM_MAJOR) X(NCCL_MINOR, NCCL_SIM_MINOR)               \
  X(NCCL_PATCH, NCCL_SIM_PATCH) X(NCCL_VERSION_CODE, NCCL_SIM_VERSION_CODE)
#define SIM_NCCL_ENUMERATOR(name, value) name = (value),

#if defined(SIM_NCCL_REAL_HEADER)
#include <nccl.h>  // NVIDIA's (the check of check_nccl_header.py)
#else
extern "C" {

typedef struct ncclComm* ncclComm_t;
typedef struct ncclWindow_vidmem* ncclWindow_t;

#define NCCL_UNIQUE_ID_BYTES 128
typedef struct {
  char internal[NCCL_UNIQUE_ID_BYTES];
} ncclUniqueId;

typedef enum { SIM_NCCL_RESULTS(SIM_NCCL_ENUMERATOR) } ncclResult_t;

#define NCCL_CONFIG_UNDEF_INT INT_MIN
#define NCCL_SPLIT_NOCOLOR -1
#define NCCL_API_MAGIC 0xcafebeef

// ncclConfig_v23000: the fields are read only up to config->size, so a
// program built against an older header (a shorter struct) is understood.
typedef struct ncclConfig_v23000 {
  size_t size;
  unsigned int magic;
  unsigned int version;
  int blocking;
  int cgaClusterSize;
  int minCTAs;
  int maxCTAs;
  const char* netName;
  int splitShare;
  int trafficClass;
  const char* commName;
  int collnetEnable;
  int CTAPolicy;
  int shrinkShare;
  int nvlsCTAs;
  int nChannelsPerNetPeer;
  int nvlinkCentricSched;
  int graphUsageMode;
  int numRmaCtx;
  int maxP2pPeers;
  int graphStreamOrdering;
} ncclConfig_t;

typedef enum { ncclNumOps_dummy = 5 } ncclRedOp_dummy_t;
typedef enum {
  SIM_NCCL_RED_OPS(SIM_NCCL_ENUMERATOR) ncclMaxRedOp = 0x7fffffff >> (32 - 8 * sizeof(ncclRedOp_dummy_t))
} ncclRedOp_t;

typedef enum { SIM_NCCL_DATA_TYPES(SIM_NCCL_ENUMERATOR) } ncclDataType_t;

typedef enum { SIM_NCCL_SCALARS(SIM_NCCL_ENUMERATOR) } ncclScalarResidence_t;

typedef enum { SIM_NCCL_MEM_STATS(SIM_NCCL_ENUMERATOR) } ncclCommMemStat_t;

}  // extern "C"
#endif

static_assert(sizeof(ncclUniqueId) == 128, "ncclUniqueId is 128 bytes");
static_assert(sizeof(ncclConfig_t) == 96, "ncclConfig_v23000 layout");

// NVIDIA's libnccl.so.2 exports each function twice: pnccl<Name> (the
// profiling interface, GLOBAL) and nccl<Name>, a WEAK alias at the same
// address (readelf --dyn-syms of the wheel's library), so that a profiler
// can interpose nccl<Name> and call pnccl<Name>. NCCL_SIM_API defines both the
// same way: `NCCL_SIM_API(ncclResult_t, AllReduce, (args...))` followed by the
// function body defines pncclAllReduce and the weak alias ncclAllReduce.
#define NCCL_SIM_API(ret, name, args)                                                                         \
  extern "C" __attribute__((visibility("default"))) ret pnccl##name args;                                    \
  extern "C" __attribute__((visibility("default"), weak, alias("pnccl" #name))) ret nccl##name args; \
  extern "C" __attribute__((visibility("default"))) ret pnccl##name args
