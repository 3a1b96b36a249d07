#include "blas/version.h"

namespace sim::blas {

cublasStatus_t library_property(libraryPropertyType type, int* value) {
  if (value == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  switch (type) {
    case MAJOR_VERSION: *value = kVerMajor; return CUBLAS_STATUS_SUCCESS;
    case MINOR_VERSION: *value = kVerMinor; return CUBLAS_STATUS_SUCCESS;
    case PATCH_LEVEL: *value = kVerPatch; return CUBLAS_STATUS_SUCCESS;
    default: return CUBLAS_STATUS_INVALID_VALUE;
  }
}

}  // namespace sim::blas
