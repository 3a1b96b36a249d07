// One walk of a Python frame chain, for the calling thread's own chain
// (record/python_stack.cpp: plain loads) and for a chain lent by another
// thread (record/python_borrow.cpp: every frame copied and every code
// object's type checked with safe_read, so a chain that changed under the
// walk can never fault). The reader is a template parameter: the own-thread
// walk compiles to the plain loads it always was.
#pragma once
#include <cstdint>

#include "shim/record/python_code_table.h"
#include "shim/record/python_layout.h"

namespace gpumemrec {
namespace pywalk {

constexpr uint64_t kFrameTag = 1ull << 63;  // python_stack.h kPythonFrameTag
constexpr uint64_t kLineMask = 0xFFFFFF;
constexpr int kIdShift = 24;
constexpr uint64_t kIdMask = (1ull << 39) - 1;

// What a walk needs of the interpreter.
struct Env {
  const pylayout::Layout* layout = nullptr;
  const void* code_type = nullptr;
  const void* unicode_type = nullptr;
};

inline uint64_t frame_word(uint32_t id, int32_t line) {
  uint64_t l = line < 0 ? 0 : (uint64_t(line) > kLineMask ? kLineMask : uint64_t(line));
  return kFrameTag | (uint64_t(id) << kIdShift) | l;
}

// r null: the table is full or out of memory.
inline uint64_t word_of(const pycode::CodeRef* r, int32_t unit) {
  if (__builtin_expect(r == nullptr, 0)) return frame_word(0, 0);
  int32_t line = (unit >= 0 && uint32_t(unit) < r->units) ? r->lines[unit] : r->first_line;
  return frame_word(r->id, line);
}

// Bytes of a frame the walk reads (the highest field it reads, inclusive).
inline uint32_t frame_read_bytes(const pylayout::Layout& L) {
  int end = L.frame_code + 8;
  if (L.frame_previous + 8 > end) end = L.frame_previous + 8;
  const int instr_end = L.frame_instr + (L.frame_kind == pylayout::FrameKind::kFrameObject ? 4 : 8);
  if (instr_end > end) end = instr_end;
  if (L.frame_owner >= 0 && L.frame_owner + 1 > end) end = L.frame_owner + 1;
  return uint32_t(end);
}
constexpr uint32_t kFrameBufBytes = 128;  // >= frame_read_bytes of every layout

// The calling thread's own chain: nothing on it can change while it is in
// this hook, and every code object on it is alive.
struct OwnReader {
  // The frame's fields, read in place.
  const char* frame(const char* f, char* /*buf*/) const { return f; }
  // must_check: f_executable may be something else than a code object (3.13).
  bool is_code(const char* code, const Env& env, bool must_check) const {
    return !must_check || pylayout::load_ptr(code + pylayout::kObType) == env.code_type;
  }
  int32_t i32(const char* p) const { return pylayout::load_i32(p); }
};

// Appends the frame words of the chain starting at `frame` (innermost
// first); returns how many.
template <class Reader>
uint32_t walk_frames(const char* frame, const Env& env, const Reader& rd, uint64_t* out, uint32_t max) {
  using pylayout::FrameKind;
  const pylayout::Layout& L = *env.layout;
  const pycode::Interp in{env.layout, env.unicode_type};
  pycode::CaptureMemo memo;
  char buf[kFrameBufBytes];
  uint32_t n = 0;
  const bool interp_frames = L.frame_kind != FrameKind::kFrameObject;
  // 3.13+: f_executable may be None (or, 3.14, any object).
  const bool check_type = L.frame_kind == FrameKind::kInterpInstrPtr || L.frame_kind == FrameKind::kInterpStackRef;
  for (uint32_t guard = 0; frame && n < max && guard < 100000; ++guard) {
    const char* f = rd.frame(frame, buf);
    if (!f) break;
    frame = pylayout::load_ptr(f + L.frame_previous);
    if (interp_frames && pylayout::owner_without_code(f[L.frame_owner])) continue;
    const char* code = pylayout::code_of_word(L.frame_kind, pylayout::load_ptr(f + L.frame_code));
    if (!code) continue;
    // A code object already looked up in this capture (it passed the type
    // check then) is answered by the memo without reading it again.
    const pycode::CodeRef* r = pycode::code_ref_memo(code, memo);
    if (!r) {
      if (!rd.is_code(code, env, check_type)) continue;
      r = pycode::code_ref_add(code, in, memo);
    }
    if (!interp_frames) {
      out[n++] = word_of(r, pylayout::load_i32(f + L.frame_instr));
      continue;
    }
    const char* first = code + L.code_adaptive;
    const char* ip = pylayout::load_ptr(f + L.frame_instr);
    // Incomplete frame (being set up, or running its prologue): CPython
    // itself hides these (_PyFrame_IsIncomplete).
    int32_t traceable = r ? r->first_traceable : rd.i32(code + L.code_firsttraceable);
    const bool generator = f[L.frame_owner] == pylayout::kOwnedByGenerator;
    if (!generator && ip < first + int64_t(traceable) * pylayout::kCodeUnit) continue;
    int64_t unit = (ip - first) / pylayout::kCodeUnit;
    out[n++] = word_of(r, unit < 0 || unit > INT32_MAX ? -1 : int32_t(unit));
  }
  return n;
}

}  // namespace pywalk
}  // namespace gpumemrec
