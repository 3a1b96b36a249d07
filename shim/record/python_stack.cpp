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
//      frame on it): one marker word, kPythonNativeThread.
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
// Dump time needs no interpreter at all: ids map to the copied strings.
#include "shim/record/python_stack.h"

#include <dlfcn.h>
#include <pthread.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "shim/base/hook_table.h"
#include "shim/base/log.h"
#include "shim/record/python_code_table.h"
#include "shim/record/python_layout.h"

namespace gpumemrec {

namespace {

#define GM_PY_TLS __thread __attribute__((tls_model("initial-exec")))

using pylayout::FrameKind;
using pylayout::Layout;
using pylayout::load_i32;
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
  bool tstate_thread_local = false;
  int major = 0, minor = 0;
  bool free_threaded = false;
};

std::atomic<bool> g_enabled{false};
std::atomic<bool> g_found{false};
std::atomic<bool> g_find_busy{false};
PythonApi g_api;  // written once before g_found is set (release)
GM_PY_TLS uint32_t t_find_calls = 0;

constexpr uint64_t kLineMask = 0xFFFFFF;
constexpr int kIdShift = 24;
constexpr uint64_t kIdMask = (1ull << 39) - 1;

void atfork_child() {
  // The child's only thread is the one that forked: no one else can be
  // inside these locks any more.
  pycode::code_table_atfork_child();
  g_find_busy.store(false, std::memory_order_relaxed);
}

inline uint64_t frame_word(uint32_t id, int32_t line) {
  uint64_t l = line < 0 ? 0 : (uint64_t(line) > kLineMask ? kLineMask : uint64_t(line));
  return kPythonFrameTag | (uint64_t(id) << kIdShift) | l;
}

// r null: the table is full or out of memory.
inline uint64_t word_of(const pycode::CodeRef* r, int32_t unit) {
  if (__builtin_expect(r == nullptr, 0)) return frame_word(0, 0);
  int32_t line = (unit >= 0 && uint32_t(unit) < r->units) ? r->lines[unit] : r->first_line;
  return frame_word(r->id, line);
}

// The frames of the calling thread, whose own state is `ts`. Whether it
// holds the GIL or released it (it is then blocked in native code, in this
// hook), the chain cannot change while we read it; only this thread pushes
// and pops its frames.
uint32_t walk_frames(const char* ts, uint64_t* out, uint32_t max) {
  const Layout& L = *g_api.layout;
  const pycode::Interp in{g_api.layout, g_api.unicode_type};
  pycode::CaptureMemo memo;
  const char* frame = load_ptr(ts + L.tstate_frame);
  if (frame && L.cframe_current >= 0) frame = load_ptr(frame + L.cframe_current);
  uint32_t n = 0;
  if (L.frame_kind == FrameKind::kFrameObject) {
    for (uint32_t guard = 0; frame && n < max && guard < 100000; ++guard) {
      const char* code = load_ptr(frame + L.frame_code);
      if (code) out[n++] = word_of(pycode::code_ref_for(code, in, memo), load_i32(frame + L.frame_instr));
      frame = load_ptr(frame + L.frame_previous);
    }
    return n;
  }
  // 3.13+: f_executable may be None (or, 3.14, any object); 3.14: tagged.
  const bool check_type = L.frame_kind != FrameKind::kInterpPrevInstr;
  const uintptr_t untag = L.frame_kind == FrameKind::kInterpStackRef ? ~pylayout::kStackRefTagMask : ~uintptr_t(0);
  for (uint32_t guard = 0; frame && n < max && guard < 100000; ++guard, frame = load_ptr(frame + L.frame_previous)) {
    char owner = frame[L.frame_owner];
    if (owner >= pylayout::kFirstOwnerWithoutCode) continue;
    const char* code = reinterpret_cast<const char*>(reinterpret_cast<uintptr_t>(load_ptr(frame + L.frame_code)) & untag);
    if (!code) continue;
    // A code object already looked up in this capture (it passed the type
    // check then) is answered by the memo without reading it again.
    const pycode::CodeRef* r = pycode::code_ref_memo(code, memo);
    if (!r) {
      if (check_type && load_ptr(code + pylayout::kObType) != g_api.code_type) continue;
      r = pycode::code_ref_add(code, in, memo);
    }
    const char* first = code + L.code_adaptive;
    const char* ip = load_ptr(frame + L.frame_instr);
    // Incomplete frame (being set up, or running its prologue): CPython
    // itself hides these (_PyFrame_IsIncomplete).
    int32_t traceable = r ? r->first_traceable : load_i32(code + L.code_firsttraceable);
    if (owner != pylayout::kOwnedByGenerator && ip < first + int64_t(traceable) * pylayout::kCodeUnit) continue;
    int64_t unit = (ip - first) / pylayout::kCodeUnit;
    out[n++] = word_of(r, unit < 0 || unit > INT32_MAX ? -1 : int32_t(unit));
  }
  return n;
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
  uint32_t n = ts ? walk_frames(ts, out, max) : 0;
  // Finalization deletes the thread states of daemon threads that are still
  // in native code; it clears the initialized flag first. Frames read while
  // it happened are dropped (see docs/design.md for the window).
  if (n > 0 && !api.is_initialized()) return 0;
  if (n > 0) return n;
  out[0] = kPythonNativeThread;  // no Python frame of its own
  return 1;
}

const char* python_status(const uint64_t* frames, uint32_t n) {
  if (!g_enabled.load(std::memory_order_relaxed)) return "disabled";
  for (uint32_t i = 0; i < n; ++i) {
    if (frames[i] == kPythonNoGil) return "no_gil";
    if (frames[i] == kPythonNativeThread) return "native_thread";
    if (is_python_word(frames[i])) return "captured";
  }
  return "not_python";
}

bool describe_python_frame(uint64_t word, PythonFrameInfo* out) {
  if (!is_python_word(word) || is_python_marker(word)) return false;
  uint64_t id = (word >> kIdShift) & kIdMask;
  out->line = int(word & kLineMask);
  const pycode::CodeEntry* e = pycode::code_entry_by_id(id);
  out->file = e && e->file && e->file->utf8 ? e->file->utf8 : "?";
  out->function = e && e->name ? e->name : "?";
  return true;
}

}  // namespace gpumemrec
