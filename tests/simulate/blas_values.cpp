// simulate.cublas_headers: every value simulate/blas/enums.h lists, and the
// version in simulate/blas/version.h, are NVIDIA's (cublas_api.h, cublasLt.h).
#include "blas/types.h"
#include "blas/enums.h"
#include "blas/version.h"
#define SIM_SAME(name, value) static_assert(name == (value), #name " differs from NVIDIA's header");
SIM_CUBLAS_STATUS(SIM_SAME) SIM_CUBLAS_FILL_MODE(SIM_SAME) SIM_CUBLAS_DIAG_TYPE(SIM_SAME)
SIM_CUBLAS_SIDE_MODE(SIM_SAME) SIM_CUBLAS_OPERATION(SIM_SAME) SIM_CUBLAS_POINTER_MODE(SIM_SAME)
SIM_CUBLAS_ATOMICS_MODE(SIM_SAME) SIM_CUBLAS_GEMM_ALGO(SIM_SAME) SIM_CUBLAS_MATH(SIM_SAME)
SIM_CUBLAS_COMPUTE_TYPE(SIM_SAME) SIM_CUBLASLT_MATRIX_LAYOUT_ATTRIBUTE(SIM_SAME)
SIM_CUBLASLT_MATMUL_DESC_ATTRIBUTE(SIM_SAME) SIM_CUBLASLT_MATMUL_PREFERENCE_ATTRIBUTE(SIM_SAME)
SIM_CUBLASLT_ALGO_CONFIG_ATTRIBUTE(SIM_SAME) SIM_CUBLASLT_ORDER(SIM_SAME) SIM_CUBLASLT_EPILOGUE(SIM_SAME)
SIM_CUBLASLT_SEARCH(SIM_SAME) SIM_CUBLASLT_REDUCTION_SCHEME(SIM_SAME)
static_assert(sim::blas::kVerMajor == CUBLAS_VER_MAJOR && sim::blas::kVerMinor == CUBLAS_VER_MINOR &&
              sim::blas::kVerPatch == CUBLAS_VER_PATCH && sim::blas::kVerBuild == CUBLAS_VER_BUILD &&
              sim::blas::kVersion == CUBLAS_VERSION, "version.h differs from cublas_api.h");
