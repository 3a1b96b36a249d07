// cuDNN handles (cudnnCreate / cudnnDestroy / cudnnSetStream): the device a
// handle is tied to, its stream, and the device memory a handle holds.
#pragma once

#include "dnn/types.h"

namespace sim::dnn {

// Device memory NVIDIA's cudnnCreate takes and keeps until cudnnDestroy, in
// two cuMemAlloc_v2 calls from libcudnn_graph.so.9: 25,344 B and 4 B. From
// the real-GPU validation of 2026-11-26 (H200, docs/validation/2026-11-26,
// jax_whole_card: the bundle lists libcudnn_graph.so.9 holding 50,696 B =
// 2 x (25,344 + 4) after JAX made its cuDNN handles, the pairs made apart,
// each after a transient allocation freed at once). Read there as one pair
// per handle.
constexpr size_t kHandleBytes[] = {25344, 4};

// True for a handle cudnnCreate made and cudnnDestroy has not destroyed.
bool live_handle(cudnnHandle_t handle);

}  // namespace sim::dnn
