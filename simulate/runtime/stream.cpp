// Streams and events. Nothing runs on the device, so all work is complete
// the moment it is queued: queries say ready, synchronizations return at
// once, a host callback runs when it is queued. An event keeps the host time
// of its record; cudaEventElapsedTime gives the host time between two
// records (there is no device time to measure).
#include <chrono>
#include <mutex>
#include <unordered_map>

#include "runtime/internal.h"
#include "runtime/stream_state.h"

using rt::ensure_ctx;
using rt::ensure_init;
using rt::g_drv;
using rt::map_drv;
using rt::record;

namespace rt {
namespace {

std::mutex g_mu;
std::unordered_map<cudaStream_t, StreamState>* g_streams = new std::unordered_map<cudaStream_t, StreamState>();

struct Event {
  unsigned flags = 0;
  bool recorded = false;
  double ms = 0;  // host time of the last record
};

double now_ms() {
  using namespace std::chrono;
  return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count();
}

Event* event_of(cudaEvent_t e) { return reinterpret_cast<Event*>(e); }

cudaError_t create_stream(cudaStream_t* out, unsigned flags, int priority) {
  if (out == nullptr) return record(cudaErrorInvalidValue);
  if (cudaError_t e = ensure_ctx()) return record(e);
  if (g_drv.cuStreamCreate == nullptr) return record(cudaErrorCallRequiresNewerDriver);
  const CUresult r = g_drv.cuStreamCreate(reinterpret_cast<CUstream*>(out), flags);
  if (r != CUDA_SUCCESS) return record(map_drv(r));
  if (priority > 0) priority = 0;
  if (priority < -5) priority = -5;
  std::lock_guard<std::mutex> lock(g_mu);
  (*g_streams)[*out] = StreamState{flags, priority, current_device(), cudaStreamCaptureStatusNone, 0};
  return cudaSuccess;
}

}  // namespace

// The state of a stream; the legacy and per-thread default streams are
// known without being created.
bool with_stream(cudaStream_t s, const std::function<void(StreamState&)>& fn) {
  static StreamState default_state{};
  std::lock_guard<std::mutex> lock(g_mu);
  if (s == nullptr || s == cudaStreamLegacy || s == cudaStreamPerThread) {
    fn(default_state);
    return true;
  }
  auto it = g_streams->find(s);
  if (it == g_streams->end()) return false;
  fn(it->second);
  return true;
}

}  // namespace rt

SIM_EXPORT cudaError_t CUDARTAPI cudaStreamCreate(cudaStream_t* pStream) {
  return rt::create_stream(pStream, cudaStreamDefault, 0);
}

SIM_EXPORT cudaError_t CUDARTAPI cudaStreamCreateWithFlags(cudaStream_t* pStream, unsigned int flags) {
  return rt::create_stream(pStream, flags, 0);
}

SIM_EXPORT cudaError_t CUDARTAPI cudaStreamCreateWithPriority(cudaStream_t* pStream, unsigned int flags,
                                                              int priority) {
  return rt::create_stream(pStream, flags, priority);
}

SIM_EXPORT cudaError_t CUDARTAPI cudaStreamDestroy(cudaStream_t stream) {
  if (cudaError_t e = ensure_ctx()) return record(e);
  if (g_drv.cuStreamDestroy == nullptr) return record(cudaErrorCallRequiresNewerDriver);
  {
    std::lock_guard<std::mutex> lock(rt::g_mu);
    rt::g_streams->erase(stream);
  }
  return record(map_drv(g_drv.cuStreamDestroy(stream)));
}

SIM_EXPORT cudaError_t CUDARTAPI cudaStreamQuery(cudaStream_t stream) {
  if (cudaError_t e = ensure_ctx()) return record(e);
  return cudaSuccess;
}

SIM_EXPORT cudaError_t CUDARTAPI cudaStreamSynchronize(cudaStream_t stream) {
  if (cudaError_t e = ensure_ctx()) return record(e);
  if (g_drv.cuStreamSynchronize != nullptr) return record(map_drv(g_drv.cuStreamSynchronize(stream)));
  return cudaSuccess;
}

SIM_EXPORT cudaError_t CUDARTAPI cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags) {
  if (event == nullptr) return record(cudaErrorInvalidResourceHandle);
  if (cudaError_t e = ensure_ctx()) return record(e);
  return cudaSuccess;
}

SIM_EXPORT cudaError_t CUDARTAPI cudaStreamGetPriority(cudaStream_t hStream, int* priority) {
  if (priority == nullptr) return record(cudaErrorInvalidValue);
  int p = 0;
  if (!rt::with_stream(hStream, [&](rt::StreamState& s) { p = s.priority; }))
    return record(cudaErrorInvalidResourceHandle);
  *priority = p;
  return cudaSuccess;
}

SIM_EXPORT cudaError_t CUDARTAPI cudaStreamGetFlags(cudaStream_t hStream, unsigned int* flags) {
  if (flags == nullptr) return record(cudaErrorInvalidValue);
  unsigned f = 0;
  if (!rt::with_stream(hStream, [&](rt::StreamState& s) { f = s.flags; })) return record(cudaErrorInvalidResourceHandle);
  *flags = f;
  return cudaSuccess;
}

SIM_EXPORT cudaError_t CUDARTAPI cudaStreamGetDevice(cudaStream_t hStream, int* device) {
  if (device == nullptr) return record(cudaErrorInvalidValue);
  int d = rt::current_device();
  if (!rt::with_stream(hStream, [&](rt::StreamState& s) {
        if (s.device >= 0) d = s.device;
      }))
    return record(cudaErrorInvalidResourceHandle);
  *device = d;
  return cudaSuccess;
}

// The stream's work is done when the callback is queued: it runs now, on
// the calling thread (NVIDIA's runs it on a runtime thread, in order).
SIM_EXPORT cudaError_t CUDARTAPI cudaStreamAddCallback(cudaStream_t stream, cudaStreamCallback_t callback,
                                                       void* userData, unsigned int flags) {
  if (callback == nullptr || flags != 0) return record(cudaErrorInvalidValue);
  if (cudaError_t e = ensure_ctx()) return record(e);
  callback(stream, cudaSuccess, userData);
  return cudaSuccess;
}

SIM_EXPORT cudaError_t CUDARTAPI cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void* userData) {
  if (fn == nullptr) return record(cudaErrorInvalidValue);
  if (cudaError_t e = ensure_ctx()) return record(e);
  fn(userData);
  return cudaSuccess;
}

SIM_EXPORT cudaError_t CUDARTAPI cudaEventCreate(cudaEvent_t* event) {
  if (event == nullptr) return record(cudaErrorInvalidValue);
  if (cudaError_t e = ensure_ctx()) return record(e);
  *event = reinterpret_cast<cudaEvent_t>(new rt::Event{});
  return cudaSuccess;
}

SIM_EXPORT cudaError_t CUDARTAPI cudaEventCreateWithFlags(cudaEvent_t* event, unsigned int flags) {
  const unsigned known = cudaEventBlockingSync | cudaEventDisableTiming | cudaEventInterprocess;
  if (event == nullptr || (flags & ~known) != 0) return record(cudaErrorInvalidValue);
  if ((flags & cudaEventInterprocess) && !(flags & cudaEventDisableTiming)) return record(cudaErrorInvalidValue);
  if (cudaError_t e = ensure_ctx()) return record(e);
  *event = reinterpret_cast<cudaEvent_t>(new rt::Event{flags, false, 0});
  return cudaSuccess;
}

SIM_EXPORT cudaError_t CUDARTAPI cudaEventDestroy(cudaEvent_t event) {
  if (event == nullptr) return record(cudaErrorInvalidResourceHandle);
  delete rt::event_of(event);
  return cudaSuccess;
}

SIM_EXPORT cudaError_t CUDARTAPI cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  if (event == nullptr) return record(cudaErrorInvalidResourceHandle);
  if (cudaError_t e = ensure_ctx()) return record(e);
  rt::Event* ev = rt::event_of(event);
  ev->recorded = true;
  ev->ms = rt::now_ms();
  return cudaSuccess;
}

SIM_EXPORT cudaError_t CUDARTAPI cudaEventRecordWithFlags(cudaEvent_t event, cudaStream_t stream,
                                                          unsigned int flags) {
  return cudaEventRecord(event, stream);
}

SIM_EXPORT cudaError_t CUDARTAPI cudaEventQuery(cudaEvent_t event) {
  if (event == nullptr) return record(cudaErrorInvalidResourceHandle);
  return cudaSuccess;
}

SIM_EXPORT cudaError_t CUDARTAPI cudaEventSynchronize(cudaEvent_t event) {
  if (event == nullptr) return record(cudaErrorInvalidResourceHandle);
  return cudaSuccess;
}

SIM_EXPORT cudaError_t CUDARTAPI cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  if (ms == nullptr) return record(cudaErrorInvalidValue);
  if (start == nullptr || end == nullptr) return record(cudaErrorInvalidResourceHandle);
  const rt::Event* a = rt::event_of(start);
  const rt::Event* b = rt::event_of(end);
  if ((a->flags | b->flags) & cudaEventDisableTiming) return record(cudaErrorInvalidResourceHandle);
  if (!a->recorded || !b->recorded) return record(cudaErrorInvalidResourceHandle);
  *ms = static_cast<float>(b->ms - a->ms);
  return cudaSuccess;
}
