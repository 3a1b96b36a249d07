// Stream capture and CUDA graphs. A capture records that the stream is
// capturing (PyTorch's caching allocator asks before every new segment and
// puts a capture's blocks in a private pool) but keeps no nodes: launching
// the graph does nothing, as every launch does here. User objects a graph
// retains are released, and their destructors run, when their count drops
// to zero (PyTorch ties its graph's memory pool to one).
#include <atomic>
#include <mutex>
#include <vector>

#include "runtime/internal.h"
#include "runtime/kept_bytes.h"
#include "runtime/stream_state.h"

using rt::ensure_ctx;
using rt::record;

namespace rt {
namespace {

struct UserObject {
  void* ptr;
  cudaHostFn_t destroy;
  std::atomic<unsigned> refs;
};

struct Graph {
  std::mutex mu;
  std::vector<std::pair<UserObject*, unsigned>> retained;
};

struct GraphExec {
  int unused = 0;
};

std::atomic<unsigned long long> g_capture_ids{1};

void release(UserObject* o, unsigned count) {
  if (o->refs.fetch_sub(count) == count) {
    if (o->destroy != nullptr) o->destroy(o->ptr);
    delete o;
  }
}

}  // namespace
}  // namespace rt

SIM_EXPORT cudaError_t CUDARTAPI cudaStreamBeginCapture(cudaStream_t stream, enum cudaStreamCaptureMode mode) {
  if (cudaError_t e = ensure_ctx()) return record(e);
  if (stream == nullptr || stream == cudaStreamLegacy) return record(cudaErrorStreamCaptureUnsupported);
  cudaError_t err = cudaSuccess;
  if (!rt::with_stream(stream, [&](rt::StreamState& s) {
        if (s.capture != cudaStreamCaptureStatusNone) {
          err = cudaErrorIllegalState;
          return;
        }
        s.capture = cudaStreamCaptureStatusActive;
        s.capture_id = rt::g_capture_ids.fetch_add(1);
        s.capture_graph = new rt::Graph();
      }))
    return record(cudaErrorInvalidResourceHandle);
  return err == cudaSuccess ? cudaSuccess : record(err);
}

SIM_EXPORT cudaError_t CUDARTAPI cudaStreamBeginCaptureToGraph(cudaStream_t stream, cudaGraph_t graph,
                                                               const cudaGraphNode_t* dependencies,
                                                               const cudaGraphEdgeData* dependencyData,
                                                               size_t numDependencies,
                                                               enum cudaStreamCaptureMode mode) {
  if (graph == nullptr) return record(cudaErrorInvalidValue);
  if (cudaError_t e = cudaStreamBeginCapture(stream, mode)) return e;
  rt::with_stream(stream, [&](rt::StreamState& s) {
    delete static_cast<rt::Graph*>(s.capture_graph);
    s.capture_graph = graph;
  });
  return cudaSuccess;
}

SIM_EXPORT cudaError_t CUDARTAPI cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t* pGraph) {
  if (pGraph == nullptr) return record(cudaErrorInvalidValue);
  cudaError_t err = cudaSuccess;
  void* graph = nullptr;
  if (!rt::with_stream(stream, [&](rt::StreamState& s) {
        if (s.capture == cudaStreamCaptureStatusNone) {
          err = cudaErrorIllegalState;
          return;
        }
        graph = s.capture_graph;
        s.capture = cudaStreamCaptureStatusNone;
        s.capture_graph = nullptr;
      }))
    return record(cudaErrorInvalidResourceHandle);
  if (err != cudaSuccess) return record(err);
  *pGraph = static_cast<cudaGraph_t>(graph);
  return cudaSuccess;
}

SIM_EXPORT cudaError_t CUDARTAPI cudaStreamIsCapturing(cudaStream_t stream,
                                                       enum cudaStreamCaptureStatus* pCaptureStatus) {
  if (pCaptureStatus == nullptr) return record(cudaErrorInvalidValue);
  cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
  if (!rt::with_stream(stream, [&](rt::StreamState& s) { st = s.capture; }))
    return record(cudaErrorInvalidResourceHandle);
  *pCaptureStatus = st;
  return cudaSuccess;
}

SIM_EXPORT cudaError_t CUDARTAPI cudaStreamGetCaptureInfo(cudaStream_t stream,
                                                          enum cudaStreamCaptureStatus* captureStatus_out,
                                                          unsigned long long* id_out, cudaGraph_t* graph_out,
                                                          const cudaGraphNode_t** dependencies_out,
                                                          const cudaGraphEdgeData** edgeData_out,
                                                          size_t* numDependencies_out) {
  if (captureStatus_out == nullptr) return record(cudaErrorInvalidValue);
  rt::StreamState copy;
  if (!rt::with_stream(stream, [&](rt::StreamState& s) { copy = s; })) return record(cudaErrorInvalidResourceHandle);
  *captureStatus_out = copy.capture;
  if (id_out != nullptr) *id_out = copy.capture_id;
  if (graph_out != nullptr) *graph_out = static_cast<cudaGraph_t>(copy.capture_graph);
  if (dependencies_out != nullptr) *dependencies_out = nullptr;
  if (edgeData_out != nullptr) *edgeData_out = nullptr;
  if (numDependencies_out != nullptr) *numDependencies_out = 0;
  return cudaSuccess;
}

SIM_EXPORT cudaError_t CUDARTAPI cudaStreamUpdateCaptureDependencies(cudaStream_t stream,
                                                                     cudaGraphNode_t* dependencies,
                                                                     const cudaGraphEdgeData* dependencyData,
                                                                     size_t numDependencies, unsigned int flags) {
  return cudaSuccess;
}

// Per thread, as NVIDIA's runtime keeps it: returns the previous mode.
SIM_EXPORT cudaError_t CUDARTAPI cudaThreadExchangeStreamCaptureMode(enum cudaStreamCaptureMode* mode) {
  thread_local cudaStreamCaptureMode t_mode = cudaStreamCaptureModeGlobal;
  if (mode == nullptr) return record(cudaErrorInvalidValue);
  const cudaStreamCaptureMode old = t_mode;
  t_mode = *mode;
  *mode = old;
  return cudaSuccess;
}

SIM_EXPORT cudaError_t CUDARTAPI cudaGraphCreate(cudaGraph_t* pGraph, unsigned int flags) {
  if (pGraph == nullptr || flags != 0) return record(cudaErrorInvalidValue);
  *pGraph = reinterpret_cast<cudaGraph_t>(new rt::Graph());
  return cudaSuccess;
}

SIM_EXPORT cudaError_t CUDARTAPI cudaGraphDestroy(cudaGraph_t graph) {
  if (graph == nullptr) return record(cudaErrorInvalidValue);
  rt::Graph* g = reinterpret_cast<rt::Graph*>(graph);
  for (auto& r : g->retained) rt::release(r.first, r.second);
  delete g;
  return cudaSuccess;
}

SIM_EXPORT cudaError_t CUDARTAPI cudaGraphGetNodes(cudaGraph_t graph, cudaGraphNode_t* nodes, size_t* numNodes) {
  if (graph == nullptr || numNodes == nullptr) return record(cudaErrorInvalidValue);
  *numNodes = 0;
  return cudaSuccess;
}

SIM_EXPORT cudaError_t CUDARTAPI cudaGraphAddNode(cudaGraphNode_t* pGraphNode, cudaGraph_t graph,
                                                  const cudaGraphNode_t* pDependencies,
                                                  const cudaGraphEdgeData* dependencyData, size_t numDependencies,
                                                  struct cudaGraphNodeParams* nodeParams) {
  if (pGraphNode == nullptr || graph == nullptr) return record(cudaErrorInvalidValue);
  static char node;
  *pGraphNode = reinterpret_cast<cudaGraphNode_t>(&node);
  return cudaSuccess;
}

SIM_EXPORT cudaError_t CUDARTAPI cudaGraphNodeGetDependencies(cudaGraphNode_t node, cudaGraphNode_t* pDependencies,
                                                              cudaGraphEdgeData* edgeData,
                                                              size_t* pNumDependencies) {
  if (pNumDependencies == nullptr) return record(cudaErrorInvalidValue);
  *pNumDependencies = 0;
  return cudaSuccess;
}

SIM_EXPORT cudaError_t CUDARTAPI cudaGraphConditionalHandleCreate(cudaGraphConditionalHandle* pHandle_out,
                                                                  cudaGraph_t graph, unsigned int defaultLaunchValue,
                                                                  unsigned int flags) {
  static std::atomic<unsigned long long> next{1};
  if (pHandle_out == nullptr || graph == nullptr) return record(cudaErrorInvalidValue);
  *pHandle_out = next.fetch_add(1);
  return cudaSuccess;
}

SIM_EXPORT cudaError_t CUDARTAPI cudaGraphInstantiateWithFlags(cudaGraphExec_t* pGraphExec, cudaGraph_t graph,
                                                               unsigned long long flags) {
  if (pGraphExec == nullptr || graph == nullptr) return record(cudaErrorInvalidValue);
  *pGraphExec = reinterpret_cast<cudaGraphExec_t>(new rt::GraphExec());
  return cudaSuccess;
}

SIM_EXPORT cudaError_t CUDARTAPI cudaGraphInstantiate(cudaGraphExec_t* pGraphExec, cudaGraph_t graph,
                                                      unsigned long long flags) {
  return cudaGraphInstantiateWithFlags(pGraphExec, graph, flags);
}

SIM_EXPORT cudaError_t CUDARTAPI cudaGraphLaunch(cudaGraphExec_t graphExec, cudaStream_t stream) {
  if (graphExec == nullptr) return record(cudaErrorInvalidValue);
  if (cudaError_t e = ensure_ctx()) return record(e);
  rt::kept::kernel_ran();  // its kernels' writes are not followed (kept_bytes.h)
  return cudaSuccess;
}

SIM_EXPORT cudaError_t CUDARTAPI cudaGraphExecDestroy(cudaGraphExec_t graphExec) {
  if (graphExec == nullptr) return record(cudaErrorInvalidValue);
  delete reinterpret_cast<rt::GraphExec*>(graphExec);
  return cudaSuccess;
}

SIM_EXPORT cudaError_t CUDARTAPI cudaUserObjectCreate(cudaUserObject_t* object_out, void* ptr, cudaHostFn_t destroy,
                                                      unsigned int initialRefcount, unsigned int flags) {
  if (object_out == nullptr || initialRefcount == 0 || flags != cudaUserObjectNoDestructorSync)
    return record(cudaErrorInvalidValue);
  *object_out = reinterpret_cast<cudaUserObject_t>(new rt::UserObject{ptr, destroy, {initialRefcount}});
  return cudaSuccess;
}

SIM_EXPORT cudaError_t CUDARTAPI cudaUserObjectRetain(cudaUserObject_t object, unsigned int count) {
  if (object == nullptr || count == 0) return record(cudaErrorInvalidValue);
  reinterpret_cast<rt::UserObject*>(object)->refs.fetch_add(count);
  return cudaSuccess;
}

SIM_EXPORT cudaError_t CUDARTAPI cudaUserObjectRelease(cudaUserObject_t object, unsigned int count) {
  if (object == nullptr || count == 0) return record(cudaErrorInvalidValue);
  rt::release(reinterpret_cast<rt::UserObject*>(object), count);
  return cudaSuccess;
}

// The graph takes `count` references (cudaGraphUserObjectMove: the caller's),
// given back when the graph is destroyed.
SIM_EXPORT cudaError_t CUDARTAPI cudaGraphRetainUserObject(cudaGraph_t graph, cudaUserObject_t object,
                                                           unsigned int count, unsigned int flags) {
  if (graph == nullptr || object == nullptr || count == 0) return record(cudaErrorInvalidValue);
  rt::UserObject* o = reinterpret_cast<rt::UserObject*>(object);
  if (!(flags & cudaGraphUserObjectMove)) o->refs.fetch_add(count);
  rt::Graph* g = reinterpret_cast<rt::Graph*>(graph);
  std::lock_guard<std::mutex> lock(g->mu);
  g->retained.emplace_back(o, count);
  return cudaSuccess;
}
