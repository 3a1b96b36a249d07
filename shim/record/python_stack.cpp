// Python frames for each event, read straight from the interpreter's own
// structures (see docs/design.md, "Python stacks").
//
// Finding Python: nothing is linked. The interpreter's exported functions
// are looked up with glibc's dlsym(RTLD_DEFAULT) (gpumemrec::real_dlsym, never
// our exported dlsym) at start-up and, while not found, again every 64th
// capture on each thread (libpython dlopen'ed later with RTLD_GLOBAL). The
// version comes from Py_Version (3.11+) or Py_GetVersion() and picks a row of
// python_layout.h.
//
// Hot path (the allocating thread, inside a GPU API hook):
//   1. The calling thread's OWN thread state, whether or not it holds the
//      GIL: 3.12+: the current thread state (a thread-local, non-null while
//      attached), else PyGILState_GetThisThreadState() (a TSS read: the
//      state this thread last ran Python with). 3.10/3.11: always
//      PyGILState_GetThisThreadState(). No lock, no allocation, no Python
//      code, never the GIL, never another thread's state. None (or no
//      frame on it): step 5.
//   2. Walk its frame chain (PyFrameObject on 3.10, _PyInterpreterFrame on
//      3.11+), reading memory only. A thread that released the GIL is
//      blocked in native code (this hook): its chain cannot change until it
//      returns, and every code object on it is kept alive by its frame.
//   3. Each code object is looked up in the intern table
//      (python_code_table.h), which validates the entry against the live
//      object on every lookup (the checked fields are in the code object's
//      slot: one cache line) and never touches a reference count.
//   4. The frame word is kPythonFrameTag | id << 24 | line: the line is
//      looked up per instruction offset (an array index), so two events on
//      the same line share one stack id.
//   5. No Python frame of its own (a native thread): the frames of the one
//      Python thread waiting in PyTorch's backward, read with fault-tolerant
//      reads (python_borrow.h); else one marker word. Python frames of its
//      own that a native thread entered (a gradient hook the autograd
//      engine calls: the outermost own frame is not where Python starts a
//      thread's code): the same lender's frames follow them, as their
//      callers (entered_from_native).
// Dump time needs no interpreter at all: ids map to the copied strings.
#include "shim/record/python_stack.h"

#include <dlfcn.h>
#include <pthread.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "shim/base/clock.h"
#include "shim/base/hook_table.h"
#include "shim/base/log.h"
#include "shim/base/safe_read.h"
#include "shim/record/python_borrow.h"
#include "shim/record/python_code_table.h"
#include "shim/record/python_frame_walk.h"
#include "shim/record/python_layout.h"

namespace gpumemrec {

namespace {

#define GM_PY_TLS __thread __attribute__((tls_model("initial-exec")))

using pylayout::Layout;
using pylayout::load_ptr;

using IntFn = int (*)();
using PtrFn = void* (*)();
using StrFn = const char* (*)();

struct PythonApi {
  IntFn is_initialized = nullptr;
  PtrFn current_tstate = nullptr;  // _PyThreadState_UncheckedGet / PyThreadState_GetUnchecked
  PtrFn gilstate_this = nullptr;   // PyGILState_GetThisThreadState
  const void* code_type = nullptr;
  const void* unicode_type = nullptr;
  const Layout* layout = nullptr;  // null: Python is there but not supported
  PythonThreadsApi threads;        // the thread list, for borrowed frames
  bool tstate_thread_local = false;
  int major = 0, minor = 0;
  bool free_threaded = false;
};

std::atomic<bool> g_enabled{false};
std::atomic<bool> g_found{false};
std::atomic<bool> g_find_busy{false};
PythonApi g_api;  // written once before g_found is set (release)
GM_PY_TLS uint32_t t_find_calls = 0;
// A thread whose last walk of the thread list found no thread waiting in
// backward does not walk it again for kBorrowIdleNs (python_borrow.h): an
// XLA or NCCL thread that allocates often pays at most one walk per
// millisecond; PyTorch's engine threads allocate only during backward, long
// after their previous walk.
GM_PY_TLS uint64_t t_borrow_idle_until = 0;
constexpr uint64_t kBorrowIdleNs = 1000000;

void atfork_child() {
  // The child's only thread is the one that forked: no one else can be
  // inside these locks any more.
  pycode::code_table_atfork_child();
  safe_read_atfork_child();
  python_borrow_atfork_child();
  g_find_busy.store(false, std::memory_order_relaxed);
}

pywalk::Env walk_env() { return pywalk::Env{g_api.layout, g_api.code_type, g_api.unicode_type}; }

// The calling thread's own innermost frame (ts: its own state). Whether it
// holds the GIL or released it (it is then blocked in native code, in this
// hook), the chain cannot change while we read it; only this thread pushes
// and pops its frames.
const char* own_innermost_frame(const char* ts) {
  const Layout& L = *g_api.layout;
  const char* frame = load_ptr(ts + L.tstate_frame);
  if (frame && L.cframe_current >= 0) frame = load_ptr(frame + L.cframe_current);
  return frame;
}

bool parse_version(const char* s, int* major, int* minor) {
  if (!s) return false;
  return std::sscanf(s, "%d.%d", major, minor) == 2;
}

// Looks the interpreter up; cheap to call again when it is not there.
bool find_python() {
  if (g_found.load(std::memory_order_acquire)) return true;
  if (g_find_busy.exchange(true, std::memory_order_acquire)) return false;
  DlsymFn dls = real_dlsym();
  void* init = dls ? dls(RTLD_DEFAULT, "Py_IsInitialized") : nullptr;
  if (!init) {
    g_find_busy.store(false, std::memory_order_release);
    return false;
  }
  PythonApi api;
  api.is_initialized = reinterpret_cast<IntFn>(init);
  void* cur = dls(RTLD_DEFAULT, "PyThreadState_GetUnchecked");
  if (!cur) cur = dls(RTLD_DEFAULT, "_PyThreadState_UncheckedGet");
  api.current_tstate = reinterpret_cast<PtrFn>(cur);
  api.gilstate_this = reinterpret_cast<PtrFn>(dls(RTLD_DEFAULT, "PyGILState_GetThisThreadState"));
  api.code_type = dls(RTLD_DEFAULT, "PyCode_Type");
  api.unicode_type = dls(RTLD_DEFAULT, "PyUnicode_Type");
  api.threads.interp_main = reinterpret_cast<void* (*)()>(dls(RTLD_DEFAULT, "PyInterpreterState_Main"));
  api.threads.thread_head = reinterpret_cast<void* (*)(void*)>(dls(RTLD_DEFAULT, "PyInterpreterState_ThreadHead"));
  auto get_version = reinterpret_cast<StrFn>(dls(RTLD_DEFAULT, "Py_GetVersion"));
  const char* vstring = get_version ? get_version() : nullptr;  // a static buffer; no GIL needed
  if (auto* hex = static_cast<const unsigned long*>(dls(RTLD_DEFAULT, "Py_Version"))) {
    api.major = int((*hex >> 24) & 0xFF);
    api.minor = int((*hex >> 16) & 0xFF);
  } else {
    parse_version(vstring, &api.major, &api.minor);
  }
  api.free_threaded = vstring && std::strstr(vstring, "free-threading") != nullptr;
  const Layout* layout = api.major == 3 ? pylayout::layout_for(api.minor) : nullptr;
  const char* why = nullptr;
  if (!layout) why = "this version's frame layout is not known";
  else if (api.free_threaded) why = "free-threaded builds are not supported";
  else if (!api.current_tstate || !api.gilstate_this || !api.code_type) why = "interpreter symbols are missing";
  // The code table (28 MiB of address space, MAP_NORESERVE) only for a
  // process that runs Python.
  else if (!pycode::code_table_init()) why = "no memory could be reserved for its code objects";
  if (!why) {
    api.layout = layout;
    api.tstate_thread_local = api.minor >= 12;
    GM_INFO("Python {}.{} found: recording Python stacks", api.major, api.minor);
  } else {
    GM_WARN("Python {}.{} found but {}: its events are marked no_gil", api.major, api.minor, why);
  }
  g_api = api;
  g_found.store(true, std::memory_order_release);
  return true;
}

}  // namespace

void python_stack_init(bool enabled) {
  if (!enabled) {
    g_enabled.store(false, std::memory_order_release);
    return;
  }
  static bool atfork_registered = false;
  if (!atfork_registered) {
    atfork_registered = true;
    pthread_atfork(nullptr, nullptr, atfork_child);
  }
  g_enabled.store(true, std::memory_order_release);
  find_python();  // the executable or its libpython is usually there already
}

namespace {

// The calling thread's own thread state, or null when it has none (a
// thread the interpreter never saw). Never another thread's state:
// 3.12+: the current thread state is a C thread-local, set exactly while
// this thread is attached; detached (PyEval_SaveThread), the TSS slot of
// PyGILState_GetThisThreadState() still holds the state this thread last
// attached (tstate_activate binds it; tstate_deactivate keeps it).
// 3.10/3.11: the "current" state is the global GIL holder (maybe another
// thread's), so only the TSS slot is used; it holds this thread's first
// state (set by _PyGILState_NoteThreadState for the main thread, threads of
// the threading module and PyGILState_Ensure/PyThreadState_New callers).
inline const char* own_thread_state(const PythonApi& api) {
  if (api.tstate_thread_local) {
    if (const char* ts = static_cast<const char*>(api.current_tstate())) return ts;
  }
  return static_cast<const char*>(api.gilstate_this());
}

// Where Python itself starts running a thread's code: a script's (or -c's)
// module body, runpy's entry for `python -m`, the threading module's
// bootstrap (3.11+ qualified names; 3.10 co_name).
bool is_thread_entry(const char* name) {
  for (const char* e : {"<module>", "_run_module_as_main", "Thread._bootstrap", "_bootstrap"})
    if (std::strcmp(name, e) == 0) return true;
  return false;
}

// Whether own frames words[0..n) (innermost first, complete: fewer than the
// walk's limit) were entered from native code on a thread Python did not
// start its code on: their outermost frame is no thread entry (PyTorch's
// engine thread calling a gradient hook through PyGILState_Ensure: the hook
// is outermost). A code id the table does not know (0: full) says no.
bool entered_from_native(const uint64_t* words, uint32_t n, uint32_t limit) {
  if (n == 0 || n >= limit) return false;
  const uint64_t id = (words[n - 1] >> pywalk::kIdShift) & pywalk::kIdMask;
  const pycode::CodeEntry* e = pycode::code_entry_by_id(id);
  return e && e->name && !is_thread_entry(e->name);
}

// Borrows the frames of the thread waiting in backward after out[0..*n),
// at most max words in all, unless this thread found none less than
// kBorrowIdleNs ago.
BorrowResult borrow_after(const pywalk::Env& env, const PythonApi& api, const char* ts, uint64_t* out,
                          uint32_t max, uint32_t* n) {
  const uint64_t now = monotonic_ns();
  if (now < t_borrow_idle_until || *n + 2 > max) return BorrowResult::kNone;
  uint32_t m = 0;
  const BorrowResult r = borrow_python_frames(env, api.threads, ts, out + *n, max - *n, &m);
  if (r == BorrowResult::kNone) t_borrow_idle_until = now + kBorrowIdleNs;
  if (r == BorrowResult::kBorrowed) *n += m;
  return r;
}

}  // namespace

uint32_t capture_python_frames(uint64_t* out, uint32_t max) {
  if (!g_enabled.load(std::memory_order_relaxed) || max == 0) return 0;
  if (__builtin_expect(!g_found.load(std::memory_order_acquire), 0)) {
    if ((t_find_calls++ & 63) != 0 || !find_python()) return 0;
  }
  const PythonApi& api = g_api;
  if (!api.is_initialized()) return 0;
  if (!api.layout) {
    out[0] = kPythonNoGil;  // frames cannot be read (version, build)
    return 1;
  }
  if (max > kMaxPythonFrames) max = kMaxPythonFrames;
  const char* ts = own_thread_state(api);
  const pywalk::Env env = walk_env();
  uint32_t n = ts ? pywalk::walk_frames(own_innermost_frame(ts), env, pywalk::OwnReader{}, out, max) : 0;
  // No Python frame of its own, or only frames a native thread entered: the
  // frames of the Python thread waiting in backward, when exactly one does
  // (python_borrow.h), after the own ones.
  BorrowResult borrowed = BorrowResult::kNone;
  if (n == 0 || entered_from_native(out, n, max)) borrowed = borrow_after(env, api, ts, out, max, &n);
  // Finalization deletes the thread states of daemon threads that are still
  // in native code; it clears the initialized flag first. Frames read while
  // it happened are dropped (see docs/design.md for the window).
  if (n > 0 && !api.is_initialized()) return 0;
  if (n > 0) return n;
  // No Python frame of its own, none borrowed.
  out[0] = borrowed == BorrowResult::kAmbiguous ? kPythonBorrowAmbiguous : kPythonNativeThread;
  return 1;
}

const char* python_status(const uint64_t* frames, uint32_t n) {
  if (!g_enabled.load(std::memory_order_relaxed)) return "disabled";
  for (uint32_t i = 0; i < n; ++i) {
    if (frames[i] == kPythonNoGil) return "no_gil";
    if (frames[i] == kPythonNativeThread || frames[i] == kPythonBorrowAmbiguous) return "native_thread";
    if (is_python_borrowed(frames[i])) return "borrowed";
    if (is_python_word(frames[i])) return "captured";
  }
  return "not_python";
}

bool python_lender(const uint64_t* frames, uint32_t n, uint32_t* tid) {
  for (uint32_t i = 0; i < n; ++i)
    if (is_python_borrowed(frames[i])) {
      *tid = uint32_t(frames[i] - kPythonBorrowedTag);
      return true;
    }
  return false;
}

bool python_borrow_ambiguous(const uint64_t* frames, uint32_t n) {
  for (uint32_t i = 0; i < n; ++i)
    if (frames[i] == kPythonBorrowAmbiguous) return true;
  return false;
}

bool describe_python_frame(uint64_t word, PythonFrameInfo* out) {
  if (!is_python_word(word) || is_python_marker(word)) return false;
  uint64_t id = (word >> pywalk::kIdShift) & pywalk::kIdMask;
  out->line = int(word & pywalk::kLineMask);
  const pycode::CodeEntry* e = pycode::code_entry_by_id(id);
  out->file = e && e->file && e->file->utf8 ? e->file->utf8 : "?";
  out->function = e && e->name ? e->name : "?";
  return true;
}

}  // namespace gpumemrec
