// The types of cuBLAS's and cuBLASLt's API, as NVIDIA's headers declare them.
//
// NVIDIA's cublas_api.h and cublasLt.h are not in the CUDA toolkit's base
// headers this project builds against (only in the nvidia-cublas wheel), so
// the few types the simulation needs are declared here with the same names,
// values (enums.h) and layouts. The check simulate.cublas_headers compiles
// every source of simulate/blas/ with SIM_BLAS_REAL_HEADERS against the
// wheel's headers instead: a signature or type that differs from NVIDIA's is
// a compile error there.
#pragma once

#include <cuComplex.h>
#include <driver_types.h>
#include <library_types.h>

#include <cstddef>
#include <cstdint>

#if defined(SIM_BLAS_REAL_HEADERS)
#include <cublasLt.h>  // includes cublas_api.h
#else
#include "blas/enums.h"

#define SIM_ENUMERATOR(name, value) name = value,

extern "C" {
typedef enum { SIM_CUBLAS_STATUS(SIM_ENUMERATOR) } cublasStatus_t;
typedef enum { SIM_CUBLAS_FILL_MODE(SIM_ENUMERATOR) } cublasFillMode_t;
typedef enum { SIM_CUBLAS_DIAG_TYPE(SIM_ENUMERATOR) } cublasDiagType_t;
typedef enum { SIM_CUBLAS_SIDE_MODE(SIM_ENUMERATOR) } cublasSideMode_t;
typedef enum { SIM_CUBLAS_OPERATION(SIM_ENUMERATOR) } cublasOperation_t;
typedef enum { SIM_CUBLAS_POINTER_MODE(SIM_ENUMERATOR) } cublasPointerMode_t;
typedef enum { SIM_CUBLAS_ATOMICS_MODE(SIM_ENUMERATOR) } cublasAtomicsMode_t;
typedef enum { SIM_CUBLAS_GEMM_ALGO(SIM_ENUMERATOR) } cublasGemmAlgo_t;
typedef enum { SIM_CUBLAS_MATH(SIM_ENUMERATOR) } cublasMath_t;
typedef enum { SIM_CUBLAS_COMPUTE_TYPE(SIM_ENUMERATOR) } cublasComputeType_t;

struct cublasContext;
typedef struct cublasContext* cublasHandle_t;
struct cublasLtContext;
typedef struct cublasLtContext* cublasLtHandle_t;

typedef enum { SIM_CUBLASLT_MATRIX_LAYOUT_ATTRIBUTE(SIM_ENUMERATOR) } cublasLtMatrixLayoutAttribute_t;
typedef enum { SIM_CUBLASLT_MATMUL_DESC_ATTRIBUTE(SIM_ENUMERATOR) } cublasLtMatmulDescAttributes_t;
typedef enum { SIM_CUBLASLT_MATMUL_PREFERENCE_ATTRIBUTE(SIM_ENUMERATOR) } cublasLtMatmulPreferenceAttributes_t;
typedef enum { SIM_CUBLASLT_ALGO_CONFIG_ATTRIBUTE(SIM_ENUMERATOR) } cublasLtMatmulAlgoConfigAttributes_t;
typedef enum { SIM_CUBLASLT_ORDER(SIM_ENUMERATOR) } cublasLtOrder_t;
typedef enum { SIM_CUBLASLT_EPILOGUE(SIM_ENUMERATOR) } cublasLtEpilogue_t;
typedef enum { SIM_CUBLASLT_SEARCH(SIM_ENUMERATOR) } cublasLtMatmulSearch_t;
typedef enum { SIM_CUBLASLT_REDUCTION_SCHEME(SIM_ENUMERATOR) } cublasLtReductionScheme_t;

// Semi-opaque descriptors: the caller may own their storage (the *Init
// functions), so a descriptor's whole state lives inside them.
typedef struct { uint64_t data[8]; } cublasLtMatrixLayoutOpaque_t;
typedef cublasLtMatrixLayoutOpaque_t* cublasLtMatrixLayout_t;
typedef struct { uint64_t data[8]; } cublasLtMatmulAlgo_t;
typedef struct { uint64_t data[32]; } cublasLtMatmulDescOpaque_t;
typedef cublasLtMatmulDescOpaque_t* cublasLtMatmulDesc_t;
typedef struct { uint64_t data[8]; } cublasLtMatmulPreferenceOpaque_t;
typedef cublasLtMatmulPreferenceOpaque_t* cublasLtMatmulPreference_t;

typedef struct {
  cublasLtMatmulAlgo_t algo;
  size_t workspaceSize;
  cublasStatus_t state;
  float wavesCount;
  int reserved[4];
} cublasLtMatmulHeuristicResult_t;
}  // extern "C"

#undef SIM_ENUMERATOR
#endif  // SIM_BLAS_REAL_HEADERS

// cublasLt.h's layouts (checked against NVIDIA's header by simulate.cublas_headers).
static_assert(sizeof(cublasLtMatmulHeuristicResult_t) == 96, "cublasLt.h's layout");
static_assert(sizeof(cublasLtMatmulDescOpaque_t) == 256, "cublasLt.h's layout");
static_assert(sizeof(cublasLtMatrixLayoutOpaque_t) == 64, "cublasLt.h's layout");
static_assert(sizeof(cublasLtMatmulPreferenceOpaque_t) == 64, "cublasLt.h's layout");
static_assert(sizeof(cublasLtMatmulAlgo_t) == 64, "cublasLt.h's layout");
static_assert(sizeof(cublasStatus_t) == 4 && sizeof(cublasComputeType_t) == 4, "int-sized enums");

// Exported functions of the simulated libraries.
#define SIM_BLAS_API extern "C" __attribute__((visibility("default")))
