// cudnnGetErrorString, cudnnGetLastErrorString and cudnnQueryRuntimeError.
#include <cstring>
#include <string>

#include "dnn/api.h"
#include "dnn/enums.h"

namespace sim::dnn {
namespace {

thread_local std::string t_last_error;

}  // namespace

cudnnStatus_t fail(cudnnStatus_t status, const char* message) {
  t_last_error = std::string(cudnnGetErrorString(status)) + ": " + message;
  return status;
}

}  // namespace sim::dnn

// The enumerator's name, as NVIDIA's library answers (e.g. "CUDNN_STATUS_BAD_PARAM").
SIM_EXPORT const char* cudnnGetErrorString(cudnnStatus_t status) {
  switch (static_cast<int>(status)) {
#define SIM_STATUS_TEXT(name, value) \
  case value:                        \
    return #name;
    SIM_CUDNN_STATUS(SIM_STATUS_TEXT)
#undef SIM_STATUS_TEXT
    default:
      return "CUDNN_STATUS_UNKNOWN";
  }
}

// The message of the calling thread's last failure (cuDNN keeps one per
// thread), truncated to max_size - 1 characters and always terminated; ""
// when there was none.
SIM_EXPORT void cudnnGetLastErrorString(char* message, size_t max_size) {
  if (message == nullptr || max_size == 0) return;
  const std::string& last = sim::dnn::t_last_error;
  const size_t n = last.size() < max_size - 1 ? last.size() : max_size - 1;
  memcpy(message, last.data(), n);
  message[n] = '\0';
}

// Kernels are not run, so no kernel reports an error: success and
// CUDNN_STATUS_SUCCESS in *rstatus, for any valid mode.
SIM_EXPORT cudnnStatus_t cudnnQueryRuntimeError(cudnnHandle_t handle, cudnnStatus_t* rstatus,
                                                cudnnErrQueryMode_t mode, cudnnRuntimeTag_t* tag) {
  (void)tag;
  if (rstatus == nullptr || static_cast<int>(mode) < 0 || static_cast<int>(mode) > 2)
    return sim::dnn::fail(CUDNN_STATUS_BAD_PARAM, "cudnnQueryRuntimeError: rstatus is NULL or mode is unknown");
  if (handle == nullptr) return sim::dnn::fail(CUDNN_STATUS_BAD_PARAM, "cudnnQueryRuntimeError: NULL handle");
  *rstatus = CUDNN_STATUS_SUCCESS;
  return CUDNN_STATUS_SUCCESS;
}
