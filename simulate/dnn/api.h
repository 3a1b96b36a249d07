// Internals shared by the simulated cuDNN's files (libcudnn.so.9): the export
// macro and the thread's last error message (cudnnGetLastErrorString).
#pragma once

#include "dnn/types.h"

#define SIM_EXPORT extern "C" __attribute__((visibility("default")))

extern "C" const char* cudnnGetErrorString(cudnnStatus_t status);

namespace sim::dnn {

// The version this library presents: NVIDIA's 9.24.0, the one PyTorch 2.14.1
// was compiled against (torch.backends.cudnn checks the major is equal and
// the minor not older, torch/backends/cudnn/__init__.py _init).
constexpr int kMajor = 9;
constexpr int kMinor = 24;
constexpr int kPatch = 0;
constexpr size_t kVersion = kMajor * 10000 + kMinor * 100 + kPatch;

// Records `message` as the calling thread's last error (what
// cudnnGetLastErrorString copies out) and returns `status`.
cudnnStatus_t fail(cudnnStatus_t status, const char* message);

}  // namespace sim::dnn
