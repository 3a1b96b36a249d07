// The version queries: what the library is (cuDNN 9.24.0 for CUDA 13), and the
// sub-libraries' version checks, which pass (the simulation is one library).
#include "dnn/api.h"

namespace {

// CUDNN_MAX_DEVICE_VERSION of cudnn_version_v9.h: compute capability 12.1.
constexpr size_t kMaxDeviceVersion = 1210;
// The CUDA runtime NVIDIA's cu13 build links statically: 13.0, the version
// the simulated libcudart.so.13 reports (cudaRuntimeGetVersion).
constexpr size_t kCudartVersion = 13000;

}  // namespace

SIM_EXPORT size_t cudnnGetVersion(void) { return sim::dnn::kVersion; }
SIM_EXPORT size_t cudnnGetMaxDeviceVersion(void) { return kMaxDeviceVersion; }
SIM_EXPORT size_t cudnnGetCudartVersion(void) { return kCudartVersion; }

SIM_EXPORT cudnnStatus_t cudnnGetProperty(libraryPropertyType type, int* value) {
  if (value == nullptr) return sim::dnn::fail(CUDNN_STATUS_BAD_PARAM, "cudnnGetProperty: value is NULL");
  switch (type) {
    case MAJOR_VERSION: *value = sim::dnn::kMajor; return CUDNN_STATUS_SUCCESS;
    case MINOR_VERSION: *value = sim::dnn::kMinor; return CUDNN_STATUS_SUCCESS;
    case PATCH_LEVEL: *value = sim::dnn::kPatch; return CUDNN_STATUS_SUCCESS;
    default: return sim::dnn::fail(CUDNN_STATUS_BAD_PARAM, "cudnnGetProperty: unknown property type");
  }
}

SIM_EXPORT cudnnStatus_t cudnnGraphVersionCheck(void) { return CUDNN_STATUS_SUCCESS; }
SIM_EXPORT cudnnStatus_t cudnnOpsVersionCheck(void) { return CUDNN_STATUS_SUCCESS; }
SIM_EXPORT cudnnStatus_t cudnnCnnVersionCheck(void) { return CUDNN_STATUS_SUCCESS; }
SIM_EXPORT cudnnStatus_t cudnnAdvVersionCheck(void) { return CUDNN_STATUS_SUCCESS; }
SIM_EXPORT cudnnStatus_t cudnnSubquadraticOpsVersionCheck(void) { return CUDNN_STATUS_SUCCESS; }
