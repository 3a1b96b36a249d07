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
//   1. Does this thread hold the GIL? 3.12+: the current thread state is a
//      thread-local that is non-null exactly while this thread holds its
//      interpreter's GIL. 3.10/3.11: the current thread state is the global
//      "GIL holder" and is compared (pointers only, never dereferenced) with
//      this thread's own state from PyGILState_GetThisThreadState().
//      Neither call takes a lock, allocates or runs Python code.
//      Not holding it: one marker word, kPythonNoGil.
//   2. Walk the frame chain (PyFrameObject on 3.10, _PyInterpreterFrame on
//      3.11+), reading memory only: no frame object is materialised, so the
//      garbage collector (and with it __del__) can never run from here.
//   3. Each code object is interned on first sight: a lock-free
//      open-addressing map code* -> id. New entries (under the GIL this
//      thread already holds, plus a spin lock for sub-interpreters) copy the
//      file name and qualified name as UTF-8, decode the line table into one
//      line per instruction word, and Py_IncRef the code object so its
//      address can never be reused for another one.
//   4. The frame word is kPythonFrameTag | id << 24 | line: the line is
//      looked up per instruction offset (an array index), so two events on
//      the same line share one stack id.
// Dump time needs no interpreter at all: ids map to the copied strings.
#include "shim/record/python_stack.h"

#include <dlfcn.h>
#include <pthread.h>
#include <sys/mman.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "shim/base/hook_table.h"
#include "shim/base/log.h"
#include "shim/record/python_layout.h"
#include "shim/record/python_linetable.h"

namespace gpumemrec {

namespace {

#define GM_PY_TLS __thread __attribute__((tls_model("initial-exec")))

using pylayout::FrameKind;
using pylayout::Layout;

using IntFn = int (*)();
using PtrFn = void* (*)();
using IncRefFn = void (*)(void*);
using StrFn = const char* (*)();

struct PythonApi {
  IntFn is_initialized = nullptr;
  PtrFn current_tstate = nullptr;  // _PyThreadState_UncheckedGet / PyThreadState_GetUnchecked
  PtrFn gilstate_this = nullptr;   // PyGILState_GetThisThreadState (3.10, 3.11)
  IncRefFn incref = nullptr;
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

// ---------------------------------------------------------------------------
// Interned code objects
// ---------------------------------------------------------------------------

struct CodeEntry {
  const char* file;
  const char* name;
  int32_t first_line;
  uint32_t units;
  int32_t* lines;  // line of each code unit (-1: none)
};

// One cache line holds two slots; a hit needs nothing else to make the word.
struct Slot {
  std::atomic<uintptr_t> key;  // code object address; 0 = empty
  uint32_t id;
  int32_t first_line;
  uint32_t units;
  uint32_t pad;
  const int32_t* lines;
};

constexpr uint32_t kMaxCodes = 1u << 17;  // ids 1 .. kMaxCodes-1
constexpr uint32_t kSlotBits = 18;
constexpr uint32_t kSlots = 1u << kSlotBits;
constexpr uint32_t kMaxUnits = 1u << 22;
constexpr uint32_t kMaxNameChars = 4096;
constexpr uint64_t kLineMask = 0xFFFFFF;
constexpr int kIdShift = 24;
constexpr uint64_t kIdMask = (1ull << 39) - 1;

Slot* g_slots = nullptr;
CodeEntry* g_entries = nullptr;
std::atomic<uint32_t> g_next_code{1};
std::atomic<bool> g_intern_lock{false};

void intern_lock() {
  for (int spins = 0;; ++spins) {
    if (!g_intern_lock.load(std::memory_order_relaxed) && !g_intern_lock.exchange(true, std::memory_order_acquire))
      return;
    if (spins > 64) sched_yield();
    else __builtin_ia32_pause();
  }
}
void intern_unlock() { g_intern_lock.store(false, std::memory_order_release); }

void atfork_child() {
  // The child's only thread is the one that forked: no one else can be
  // inside these locks any more.
  g_intern_lock.store(false, std::memory_order_relaxed);
  g_find_busy.store(false, std::memory_order_relaxed);
}

inline const char* load_ptr(const char* p) {
  const char* v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline int32_t load_i32(const char* p) {
  int32_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline int64_t load_i64(const char* p) {
  int64_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

inline uint32_t slot_of(uintptr_t code) {
  return uint32_t(((code >> 4) * 0x9E3779B97F4A7C15ull) >> (64 - kSlotBits));
}

// Null when not interned yet.
inline const Slot* lookup_code(uintptr_t code) {
  uint32_t s = slot_of(code);
  for (uint32_t probes = 0; probes < kSlots; ++probes, s = (s + 1) & (kSlots - 1)) {
    uintptr_t k = g_slots[s].key.load(std::memory_order_acquire);
    if (k == code) return &g_slots[s];
    if (k == 0) return nullptr;
  }
  return nullptr;
}

void append_utf8(char*& o, uint32_t c) {
  if (c < 0x80) {
    *o++ = char(c);
  } else if (c < 0x800) {
    *o++ = char(0xC0 | (c >> 6));
    *o++ = char(0x80 | (c & 63));
  } else if (c < 0x10000) {
    if (c >= 0xD800 && c <= 0xDFFF) c = 0xFFFD;  // lone surrogate
    *o++ = char(0xE0 | (c >> 12));
    *o++ = char(0x80 | ((c >> 6) & 63));
    *o++ = char(0x80 | (c & 63));
  } else {
    if (c > 0x10FFFF) c = 0xFFFD;
    *o++ = char(0xF0 | (c >> 18));
    *o++ = char(0x80 | ((c >> 12) & 63));
    *o++ = char(0x80 | ((c >> 6) & 63));
    *o++ = char(0x80 | (c & 63));
  }
}

// A malloc'ed UTF-8 copy of a str object, read from its compact
// representation (no interpreter call: PyUnicode_AsUTF8 may allocate).
char* copy_str(const char* obj, const Layout& L) {
  if (!obj) return nullptr;
  if (g_api.unicode_type && load_ptr(obj + pylayout::kObType) != g_api.unicode_type) return nullptr;
  uint32_t state = uint32_t(load_i32(obj + pylayout::kStrState));
  uint32_t kind = (state >> 2) & 7, compact = (state >> 5) & 1, ascii = (state >> 6) & 1;
  if (!compact) return nullptr;  // legacy string: not used for code objects
  int64_t len = load_i64(obj + pylayout::kStrLength);
  if (len < 0) return nullptr;
  if (len > kMaxNameChars) len = kMaxNameChars;
  const char* data = obj + (ascii ? L.ascii_size : L.compact_size);
  if (ascii) kind = 1;
  if (kind != 1 && kind != 2 && kind != 4) return nullptr;
  char* out = static_cast<char*>(std::malloc(size_t(len) * 4 + 1));
  if (!out) return nullptr;
  char* o = out;
  for (int64_t i = 0; i < len; ++i) {
    uint32_t c;
    if (kind == 1) c = uint8_t(data[i]);
    else if (kind == 2) { uint16_t v; std::memcpy(&v, data + 2 * i, 2); c = v; }
    else std::memcpy(&c, data + 4 * i, 4);
    append_utf8(o, c);
  }
  *o = 0;
  return out;
}

// First sight of a code object: the calling thread holds the GIL. Null
// when the table is full.
const Slot* intern_code(const char* code) {
  const Layout& L = *g_api.layout;
  intern_lock();
  if (const Slot* known = lookup_code(uintptr_t(code))) {
    intern_unlock();
    return known;
  }
  uint32_t id = g_next_code.load(std::memory_order_relaxed);
  if (id >= kMaxCodes) {
    intern_unlock();
    return nullptr;
  }
  CodeEntry e{};
  e.file = copy_str(load_ptr(code + L.code_filename), L);
  e.name = copy_str(load_ptr(code + L.code_name), L);
  e.first_line = load_i32(code + L.code_firstlineno);
  int64_t units;
  if (L.code_code >= 0) {  // 3.10: co_code is a bytes object
    const char* bytecode = load_ptr(code + L.code_code);
    units = bytecode ? load_i64(bytecode + pylayout::kObSize) / pylayout::kCodeUnit : 0;
  } else {  // 3.11+: Py_SIZE(code) code units inline
    units = load_i64(code + pylayout::kObSize);
  }
  if (units < 0) units = 0;
  if (units > kMaxUnits) units = kMaxUnits;
  const char* table = load_ptr(code + L.code_linetable);
  if (units > 0) {
    e.lines = static_cast<int32_t*>(std::malloc(size_t(units) * sizeof(int32_t)));
    if (e.lines) {
      e.units = uint32_t(units);
      int64_t tlen = table ? load_i64(table + pylayout::kObSize) : 0;
      decode_python_line_table(
          L.line_table == pylayout::LineTable::kPep626 ? PyLineTableFormat::kPep626 : PyLineTableFormat::kLocations,
          table && tlen > 0 ? reinterpret_cast<const uint8_t*>(table + pylayout::kBytesData) : nullptr,
          tlen > 0 ? size_t(tlen) : 0, e.first_line, e.lines, e.units);
    }
  }
  g_api.incref(const_cast<char*>(code));  // keep it alive: its address stays its own
  g_entries[id] = e;
  g_next_code.store(id + 1, std::memory_order_release);
  uint32_t s = slot_of(uintptr_t(code));
  while (g_slots[s].key.load(std::memory_order_relaxed) != 0) s = (s + 1) & (kSlots - 1);
  Slot& slot = g_slots[s];
  slot.id = id;
  slot.first_line = e.first_line;
  slot.units = e.units;
  slot.lines = e.lines;
  slot.key.store(uintptr_t(code), std::memory_order_release);  // publishes the fields above
  intern_unlock();
  return &slot;
}

inline uint64_t frame_word(uint32_t id, int32_t line) {
  uint64_t l = line < 0 ? 0 : (uint64_t(line) > kLineMask ? kLineMask : uint64_t(line));
  return kPythonFrameTag | (uint64_t(id) << kIdShift) | l;
}

inline uint64_t word_for(const char* code, int32_t unit) {
  const Slot* e = lookup_code(uintptr_t(code));
  if (__builtin_expect(e == nullptr, 0)) {
    e = intern_code(code);
    if (!e) return frame_word(0, 0);
  }
  int32_t line = (unit >= 0 && uint32_t(unit) < e->units) ? e->lines[unit] : e->first_line;
  return frame_word(e->id, line);
}

// The frames of the thread whose state is `ts` (it holds the GIL: the
// chain cannot change under us).
uint32_t walk_frames(const char* ts, uint64_t* out, uint32_t max) {
  const Layout& L = *g_api.layout;
  const char* frame = load_ptr(ts + L.tstate_frame);
  if (frame && L.cframe_current >= 0) frame = load_ptr(frame + L.cframe_current);
  uint32_t n = 0;
  if (L.frame_kind == FrameKind::kFrameObject) {
    for (uint32_t guard = 0; frame && n < max && guard < 100000; ++guard) {
      const char* code = load_ptr(frame + L.frame_code);
      if (code) out[n++] = word_for(code, load_i32(frame + L.frame_instr));
      frame = load_ptr(frame + L.frame_previous);
    }
    return n;
  }
  const bool check_type = L.frame_kind == FrameKind::kInterpInstrPtr;  // f_executable may be None
  for (uint32_t guard = 0; frame && n < max && guard < 100000; ++guard, frame = load_ptr(frame + L.frame_previous)) {
    char owner = frame[L.frame_owner];
    if (owner == pylayout::kOwnedByCStack) continue;
    const char* code = load_ptr(frame + L.frame_code);
    if (!code) continue;
    if (check_type && load_ptr(code + pylayout::kObType) != g_api.code_type) continue;
    const char* first = code + L.code_adaptive;
    const char* ip = load_ptr(frame + L.frame_instr);
    // Incomplete frame (being set up, or running its prologue): CPython
    // itself hides these.
    if (owner != pylayout::kOwnedByGenerator &&
        ip < first + int64_t(load_i32(code + L.code_firsttraceable)) * pylayout::kCodeUnit)
      continue;
    int64_t unit = (ip - first) / pylayout::kCodeUnit;
    out[n++] = word_for(code, unit < 0 || unit > INT32_MAX ? -1 : int32_t(unit));
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
  api.incref = reinterpret_cast<IncRefFn>(dls(RTLD_DEFAULT, "Py_IncRef"));
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
  else if (!api.current_tstate || !api.incref || !api.code_type) why = "interpreter symbols are missing";
  else if (api.minor < 12 && !api.gilstate_this) why = "PyGILState_GetThisThreadState is missing";
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
  if (!g_slots) {
    void* slots = mmap(nullptr, sizeof(Slot) * kSlots, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    void* entries = mmap(nullptr, sizeof(CodeEntry) * kMaxCodes, PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (slots == MAP_FAILED || entries == MAP_FAILED) {
      GM_WARN("cannot reserve memory for Python code objects; Python stacks are off");
      if (slots != MAP_FAILED) munmap(slots, sizeof(Slot) * kSlots);
      if (entries != MAP_FAILED) munmap(entries, sizeof(CodeEntry) * kMaxCodes);
      return;
    }
    g_slots = static_cast<Slot*>(slots);
    g_entries = static_cast<CodeEntry*>(entries);
    pthread_atfork(nullptr, nullptr, atfork_child);
  }
  g_enabled.store(true, std::memory_order_release);
  find_python();  // the executable or its libpython is usually there already
}

uint32_t capture_python_frames(uint64_t* out, uint32_t max) {
  if (!g_enabled.load(std::memory_order_relaxed) || max == 0) return 0;
  if (__builtin_expect(!g_found.load(std::memory_order_acquire), 0)) {
    if ((t_find_calls++ & 63) != 0 || !find_python()) return 0;
  }
  const PythonApi& api = g_api;
  if (!api.is_initialized()) return 0;
  if (max > kMaxPythonFrames) max = kMaxPythonFrames;
  if (api.layout) {
    const char* ts = static_cast<const char*>(api.current_tstate());
    if (ts && (api.tstate_thread_local || ts == api.gilstate_this())) {
      uint32_t n = walk_frames(ts, out, max);
      if (n > 0) return n;
    }
  }
  out[0] = kPythonNoGil;
  return 1;
}

const char* python_status(const uint64_t* frames, uint32_t n) {
  if (!g_enabled.load(std::memory_order_relaxed)) return "disabled";
  for (uint32_t i = 0; i < n; ++i) {
    if (frames[i] == kPythonNoGil) return "no_gil";
    if (is_python_word(frames[i])) return "captured";
  }
  return "not_python";
}

bool describe_python_frame(uint64_t word, PythonFrameInfo* out) {
  if (!is_python_word(word) || word == kPythonNoGil) return false;
  uint64_t id = (word >> kIdShift) & kIdMask;
  out->line = int(word & kLineMask);
  if (id == 0 || id >= g_next_code.load(std::memory_order_acquire) || !g_entries) {
    out->file = "?";
    out->function = "?";
    return true;
  }
  const CodeEntry& e = g_entries[id];
  out->file = e.file ? e.file : "?";
  out->function = e.name ? e.name : "?";
  return true;
}

}  // namespace gpumemrec
