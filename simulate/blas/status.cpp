#include "blas/status.h"

namespace sim::blas {
namespace {

struct StatusText {
  int value;
  const char* name;
  const char* text;
};

constexpr StatusText kStatus[] = {
    {0, "CUBLAS_STATUS_SUCCESS", "success"},
    {1, "CUBLAS_STATUS_NOT_INITIALIZED", "the library was not initialized"},
    {3, "CUBLAS_STATUS_ALLOC_FAILED", "the resource allocation failed"},
    {7, "CUBLAS_STATUS_INVALID_VALUE", "an unsupported value or parameter was passed to the function"},
    {8, "CUBLAS_STATUS_ARCH_MISMATCH", "the function requires an architectural feature absent from the device"},
    {11, "CUBLAS_STATUS_MAPPING_ERROR", "an access to GPU memory space failed"},
    {13, "CUBLAS_STATUS_EXECUTION_FAILED", "the function failed to launch on the GPU"},
    {14, "CUBLAS_STATUS_INTERNAL_ERROR", "an internal operation failed"},
    {15, "CUBLAS_STATUS_NOT_SUPPORTED", "the requested functionality is not supported"},
    {16, "CUBLAS_STATUS_LICENSE_ERROR", "the license check failed"},
};
constexpr const char* kUnknown = "unrecognized status";

const StatusText* find(int status) {
  for (const StatusText& s : kStatus)
    if (s.value == status) return &s;
  return nullptr;
}

}  // namespace

const char* status_name(int status) {
  const StatusText* s = find(status);
  return s != nullptr ? s->name : kUnknown;
}

const char* status_string(int status) {
  const StatusText* s = find(status);
  return s != nullptr ? s->text : kUnknown;
}

}  // namespace sim::blas
