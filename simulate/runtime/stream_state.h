// What the runtime keeps per stream (stream.cpp), and how the capture code
// (graph.cpp) reads and changes it.
#pragma once

#include <cuda_runtime_api.h>

#include <functional>

namespace rt {

struct StreamState {
  unsigned flags = 0;
  int priority = 0;
  int device = -1;
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  unsigned long long capture_id = 0;
  void* capture_graph = nullptr;  // the graph a capture adds to (graph.cpp)
};

// Runs fn on the stream's state under the streams' lock; false for a
// stream this runtime never made (an invalid handle).
bool with_stream(cudaStream_t s, const std::function<void(StreamState&)>& fn);

}  // namespace rt
