// Cost of the Python part of a stack, measured in-process: this library
// holds its own copy of shim/python_stack.cpp (the recorder's hot path for
// Python frames) and is loaded with ctypes.PyDLL (the GIL stays held), from
// Python code N frames deep (cases/pystack_cost.py). No recorder, no driver:
// only capture_python_frames() is timed, beside its floor: a bare walk of
// the same frames (gmr_bench_walk: the thread state, then every frame's code
// object and previous frame, nothing looked up), timed the same way in the
// same process.
#include <dlfcn.h>
#include <pthread.h>
#include <time.h>

#include <cstdint>

#include "shim/base/hook_table.h"
#include "shim/base/log.h"
#include "shim/record/python_code_table.h"
#include "shim/record/python_layout.h"
#include "shim/record/python_stack.h"

namespace gpumemrec {
// Stand-ins for the rest of the shim.
DlsymFn real_dlsym() { return &dlsym; }
spdlog::logger* log_get() { return nullptr; }
void log_init(const std::string&) {}
}  // namespace gpumemrec

namespace {
uint64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

using ThisThreadFn = void* (*)();
const gpumemrec::pylayout::Layout* g_layout = nullptr;
ThisThreadFn g_this_thread = nullptr;  // PyGILState_GetThisThreadState

// The floor: the frames of the calling thread, their code objects only (the
// least any capture reads). The same frames as walk_frames in
// python_stack.cpp takes, less the incomplete-frame check.
uint32_t bare_walk(uint64_t* out, uint32_t max) {
  using namespace gpumemrec::pylayout;
  const Layout& L = *g_layout;
  const char* ts = static_cast<const char*>(g_this_thread());
  const char* frame = ts ? load_ptr(ts + L.tstate_frame) : nullptr;
  if (frame && L.cframe_current >= 0) frame = load_ptr(frame + L.cframe_current);
  uint32_t n = 0;
  for (; frame && n < max; frame = load_ptr(frame + L.frame_previous)) {
    if (L.frame_owner >= 0 && frame[L.frame_owner] >= kFirstOwnerWithoutCode) continue;
    if (const char* code = load_ptr(frame + L.frame_code)) out[n++] = uint64_t(uintptr_t(code));
  }
  return n;
}

// Best of 25 rounds of `iters` calls of fn, ns per call.
template <typename Fn>
double best_of_rounds(int iters, uint32_t* n, Fn fn) {
  uint64_t words[gpumemrec::kMaxPythonFrames + 1];
  double best = 1e30;
  for (int round = 0; round < 25; ++round) {
    uint64_t t0 = now_ns();
    for (int i = 0; i < iters; ++i) {
      *n = fn(words, gpumemrec::kMaxPythonFrames + 1);
      __asm__ __volatile__("" : : "r"(words) : "memory");
    }
    double per = double(now_ns() - t0) / iters;
    if (per < best) best = per;
  }
  return best;
}
}  // namespace

extern "C" {

__attribute__((visibility("default"))) void gmr_bench_init(int enabled, int minor) {
  gpumemrec::python_stack_init(enabled != 0);
  g_layout = gpumemrec::pylayout::layout_for(minor);
  g_this_thread = reinterpret_cast<ThisThreadFn>(dlsym(RTLD_DEFAULT, "PyGILState_GetThisThreadState"));
}

// Captures the caller's Python stack `iters` times per round; returns the
// best (of 25 rounds: the machine is shared, the best round is the one least
// disturbed) ns per capture and writes the frame count of the last one.
__attribute__((visibility("default"))) double gmr_bench_capture(int iters, int* frames_out) {
  uint32_t n = 0;
  double best = best_of_rounds(iters, &n, gpumemrec::capture_python_frames);
  if (frames_out) *frames_out = int(n);
  return best;
}

// The floor, timed the same way: a bare walk of the same frames; -1 when
// this version has no layout.
__attribute__((visibility("default"))) double gmr_bench_walk(int iters, int* frames_out) {
  if (!g_layout || !g_this_thread) return -1;
  uint32_t n = 0;
  double best = best_of_rounds(iters, &n, bare_walk);
  if (frames_out) *frames_out = int(n);
  return best;
}

// The status of one capture ("captured", "no_gil", ...) and its first word
// resolved, to check that the copy under test works.
__attribute__((visibility("default"))) const char* gmr_bench_status(char* func, int func_len, int* line) {
  uint64_t words[gpumemrec::kMaxPythonFrames + 1];
  uint32_t n = gpumemrec::capture_python_frames(words, gpumemrec::kMaxPythonFrames + 1);
  gpumemrec::PythonFrameInfo info;
  if (n > 0 && gpumemrec::describe_python_frame(words[0], &info)) {
    snprintf(func, size_t(func_len), "%s", info.function.c_str());
    *line = info.line;
  }
  return gpumemrec::python_status(words, n);
}

namespace {
struct BorrowJob {
  int iters;
  uint32_t frames;
  double ns;
  char status[32];
};

void* borrow_thread(void* arg) {
  auto* job = static_cast<BorrowJob*>(arg);
  job->ns = best_of_rounds(job->iters, &job->frames, gpumemrec::capture_python_frames);
  uint64_t words[gpumemrec::kMaxPythonFrames + 1];
  uint32_t n = gpumemrec::capture_python_frames(words, gpumemrec::kMaxPythonFrames + 1);
  snprintf(job->status, sizeof job->status, "%s", gpumemrec::python_status(words, n));
  return nullptr;
}
}  // namespace

// A borrowed capture (record/python_borrow.h): a new native thread (no
// Python frame of its own) captures `iters` times per round while the
// caller waits in C, called from a function shaped like PyTorch's
// _engine_run_backward (cases/pystack_cost.py) with the GIL released.
// Returns the best ns per capture; writes the words of the last one
// (marker + frames) and its status.
__attribute__((visibility("default"))) double gmr_bench_borrow(int iters, int* words_out, char* status, int status_len) {
  BorrowJob job{iters, 0, -1, ""};
  pthread_t t;
  if (pthread_create(&t, nullptr, borrow_thread, &job) != 0) return -1;
  pthread_join(t, nullptr);
  if (words_out) *words_out = int(job.frames);
  snprintf(status, size_t(status_len), "%s", job.status);
  return job.ns;
}

// Code objects interned so far (each re-intern after an address reuse
// makes a new one).
__attribute__((visibility("default"))) unsigned gmr_bench_code_entries() {
  return gpumemrec::pycode::code_entry_count();
}

}  // extern "C"
