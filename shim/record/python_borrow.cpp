// The walk described in python_borrow.h. Only runs for an allocation on a
// thread with no Python frame of its own (rare: PyTorch's caching allocator
// calls cudaMalloc only for a new segment); its cost is measured by
// python.borrow_cost (docs/performance.md).
#include "shim/record/python_borrow.h"

#include <atomic>
#include <cstring>
#include <string_view>

#include "shim/base/safe_read.h"
#include "shim/record/python_stack.h"

namespace gpumemrec {

// The Python functions of PyTorch that call the autograd engine
// (torch._C._ImperativeEngine.run_backward, which releases the GIL with
// pybind11::gil_scoped_release before Engine::execute and waits there for
// the engine threads: torch/csrc/autograd/python_engine.cpp,
// THPEngine_run_backward):
//  - torch/autograd/graph.py `_engine_run_backward`, called by
//    torch.autograd.backward and torch.autograd.grad (and so by
//    Tensor.backward) in newer releases (pytorch/pytorch @
//    1a5f2e5079238e645bbe42ba6ad1f8b27c148ac0);
//  - torch/autograd/__init__.py `backward`, `grad` and grad's nested `vjp`
//    (is_grads_batched), which called
//    Variable._execution_engine.run_backward themselves before graph.py's
//    helper existed (pytorch/pytorch @ 00daa10a66ec6b7930d1247fd1c497c835d10eb1).
// Names are code objects' names: qualified on 3.11+ ("grad.<locals>.vjp"),
// plain on 3.10 ("vjp").
const BorrowEntry kBackwardEntries[] = {
    {"torch/autograd/graph.py", "_engine_run_backward"},
    {"torch/autograd/__init__.py", "backward"},
    {"torch/autograd/__init__.py", "grad"},
    {"torch/autograd/__init__.py", "grad.<locals>.vjp"},
    {"torch/autograd/__init__.py", "vjp"},
};
const uint32_t kBackwardEntryCount = sizeof kBackwardEntries / sizeof kBackwardEntries[0];

bool is_backward_entry(std::string_view file, std::string_view name) {
  for (const BorrowEntry& e : kBackwardEntries) {
    const std::string_view suffix(e.file_suffix);
    if (name != e.function || file.size() < suffix.size()) continue;
    if (file.substr(file.size() - suffix.size()) != suffix) continue;
    if (file.size() == suffix.size() || file[file.size() - suffix.size() - 1] == '/') return true;
  }
  return false;
}

namespace {

using pylayout::Layout;
using pylayout::load_ptr;

constexpr uint32_t kFileTail = 256;  // last characters of a file name compared
constexpr uint32_t kNameMax = 64;    // longer names are no entry's
constexpr uint32_t kTstateBufBytes = 256;
constexpr int kListRetries = 3;

// Reads of other threads' memory: through the walk's page copies when it
// has them (python_borrow.h: one walk at a time uses them), else one system
// call per read.
struct Mem {
  SafePages* pages;
  bool read(void* dst, const void* src, size_t n) const {
    return pages ? pages->read(dst, src, n) : safe_read(dst, src, n);
  }
  bool ptr(const char* at, const char** v) const { return read(v, at, sizeof *v); }
};

SafePages g_pages;
std::atomic<bool> g_pages_busy{false};

// The page copies for this walk, or none when another thread's walk has them.
class PagesLease {
 public:
  PagesLease() : mine_(!g_pages_busy.exchange(true, std::memory_order_acquire)) {
    if (mine_) g_pages.clear();
  }
  ~PagesLease() {
    if (mine_) g_pages_busy.store(false, std::memory_order_release);
  }
  Mem mem() const { return Mem{mine_ ? &g_pages : nullptr}; }

 private:
  bool mine_;
};

// Bytes of a thread state the walk reads.
uint32_t tstate_read_bytes(const Layout& L) {
  int end = L.tstate_frame + 8;
  for (int off : {L.tstate_next, L.tstate_interp, L.tstate_native_tid})
    if (off + 8 > end) end = off + 8;
  return uint32_t(end);
}

// The last characters (at most cap) of a str object with one byte per
// character, copied to buf; false when unreadable or wider.
bool read_str_tail(const Mem& m, const char* obj, const pywalk::Env& env, char* buf, uint32_t cap,
                   std::string_view* out) {
  const Layout& L = *env.layout;
  char head[64];  // str_view reads only the header fields of PyASCIIObject
  static_assert(sizeof head >= 48, "sizeof(PyASCIIObject) of every layout");
  if (!obj || !m.read(head, obj, uint32_t(L.ascii_size))) return false;
  const pylayout::StrView v = pylayout::str_view(head, L, env.unicode_type);
  if (v.kind != 1) return false;
  const char* data = obj + (reinterpret_cast<const char*>(v.data) - head);
  const uint32_t take = v.length < int64_t(cap) ? uint32_t(v.length) : cap;
  if (!m.read(buf, data + (v.length - take), take)) return false;
  *out = std::string_view(buf, take);
  return true;
}

bool frame_is_backward_entry(const Mem& m, const char* frame, const pywalk::Env& env) {
  const Layout& L = *env.layout;
  const char *code, *type, *file_obj, *name_obj;
  if (!m.ptr(frame + L.frame_code, &code) || !(code = pylayout::code_of_word(L.frame_kind, code)) ||
      !m.ptr(code + pylayout::kObType, &type) ||
      type != env.code_type)
    return false;
  if (!m.ptr(code + L.code_filename, &file_obj) || !m.ptr(code + L.code_name, &name_obj)) return false;
  char name_buf[kNameMax + 1], file_buf[kFileTail];
  std::string_view name, file;
  if (!read_str_tail(m, name_obj, env, name_buf, sizeof name_buf, &name) || name.size() > kNameMax) return false;
  return read_str_tail(m, file_obj, env, file_buf, sizeof file_buf, &file) && is_backward_entry(file, name);
}

// The innermost frame holding Python code of a thread state copied in ts:
// 3.12+ entry frames (owned by the C stack; 3.14, also the interpreter's) are skipped.
const char* innermost_frame(const Mem& m, const Layout& L, const char* ts) {
  const char* f = load_ptr(ts + L.tstate_frame);
  if (f && L.cframe_current >= 0 && !m.ptr(f + L.cframe_current, &f)) return nullptr;
  for (int i = 0; f && L.frame_owner >= 0 && i < 4; ++i) {
    char owner = 0;
    if (!m.read(&owner, f + L.frame_owner, 1)) return nullptr;
    if (!pylayout::owner_without_code(owner)) break;
    if (!m.ptr(f + L.frame_previous, &f)) return nullptr;
  }
  return f;
}

struct Lender {
  bool complete = false;  // the whole list was read
  uint32_t count = 0;     // threads waiting in backward (stops at 2)
  const char* ts = nullptr;
  const char* frame = nullptr;
  uint32_t tid = 0;
  char frame_bytes[pywalk::kFrameBufBytes];  // the innermost frame as first read
};

// The other threads' states, from the interpreter's list (main interpreter).
Lender find_lender(const Mem& m, const pywalk::Env& env, const PythonThreadsApi& api, const char* own_ts) {
  const Layout& L = *env.layout;
  Lender l;
  const char* interp = static_cast<const char*>(api.interp_main());
  if (!interp) return l;
  const char* ts = static_cast<const char*>(api.thread_head(const_cast<char*>(interp)));
  char copy[kTstateBufBytes];
  const uint32_t bytes = tstate_read_bytes(L);
  const uint32_t fbytes = pywalk::frame_read_bytes(L);
  for (uint32_t i = 0; ts; ++i) {
    // A state freed under us, or a list that changed: not complete.
    if (i == kMaxBorrowThreads || !m.read(copy, ts, bytes) || load_ptr(copy + L.tstate_interp) != interp) return l;
    const char* f = ts == own_ts ? nullptr : innermost_frame(m, L, copy);
    if (f && frame_is_backward_entry(m, f, env) && ++l.count == 1) {
      l.ts = ts;
      l.frame = f;
      l.tid = L.tstate_native_tid >= 0 ? uint32_t(pylayout::load_i64(copy + L.tstate_native_tid)) : 0;
      if (!m.read(l.frame_bytes, f, fbytes)) return l;
    }
    if (l.count > 1) break;
    ts = load_ptr(copy + L.tstate_next);
  }
  l.complete = true;
  return l;
}

// Whether the lender is still in the same call: its innermost frame is the
// same frame, with the same code, caller and instruction (read now, not
// from the walk's page copies).
bool still_waiting(const pywalk::Env& env, const Lender& l) {
  const Layout& L = *env.layout;
  const Mem now_mem{nullptr};
  char copy[kTstateBufBytes], now[pywalk::kFrameBufBytes];
  const uint32_t fbytes = pywalk::frame_read_bytes(L);
  if (!safe_read(copy, l.ts, tstate_read_bytes(L)) || innermost_frame(now_mem, L, copy) != l.frame) return false;
  return safe_read(now, l.frame, fbytes) && std::memcmp(now, l.frame_bytes, fbytes) == 0;
}

// Another thread's chain: every frame is copied, every code object's type
// checked, before the walk reads them.
struct LentReader {
  Mem m;
  uint32_t bytes;
  const char* frame(const char* f, char* buf) const { return m.read(buf, f, bytes) ? buf : nullptr; }
  bool is_code(const char* code, const pywalk::Env& env, bool /*must_check*/) const {
    const char* type = nullptr;
    return m.ptr(code + pylayout::kObType, &type) && type == env.code_type;
  }
  int32_t i32(const char* p) const {
    int32_t v = 0;
    return m.read(&v, p, sizeof v) ? v : 0;
  }
};

}  // namespace

void python_borrow_atfork_child() { g_pages_busy.store(false, std::memory_order_relaxed); }

BorrowResult borrow_python_frames(const pywalk::Env& env, const PythonThreadsApi& api, const char* own_ts,
                                  uint64_t* out, uint32_t max, uint32_t* n) {
  *n = 0;
  if (max < 2 || !api.interp_main || !api.thread_head) return BorrowResult::kNone;
  // A list that changed under the walk (a thread ended) is walked again, a
  // few times at most, each time from fresh page copies.
  PagesLease lease;
  Lender l;
  for (int walk = 0; walk <= kListRetries && !l.complete; ++walk) {
    if (walk > 0 && lease.mem().pages) lease.mem().pages->clear();
    l = find_lender(lease.mem(), env, api, own_ts);
  }
  if (!l.complete) return BorrowResult::kUnknown;
  if (l.count == 0) return BorrowResult::kNone;
  if (l.count > 1) return BorrowResult::kAmbiguous;
  const LentReader reader{lease.mem(), pywalk::frame_read_bytes(*env.layout)};
  const uint32_t got = pywalk::walk_frames(l.frame, env, reader, out + 1, max - 1);
  // Backward returned while the frames were read: they may be another call's.
  if (got == 0 || !still_waiting(env, l)) return BorrowResult::kUnknown;
  out[0] = python_borrowed_marker(l.tid);
  *n = got + 1;
  return BorrowResult::kBorrowed;
}

}  // namespace gpumemrec
