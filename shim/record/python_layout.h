// CPython interpreter structures as the Python-stack capture reads them
// (x86-64 layouts, the only processor gpumemrec builds for; default (GIL) builds).
//
// The offsets were taken with offsetof() from each version's own headers
// (include/python3.X/ and include/python3.X/internal/, Py_BUILD_CORE) and are
// exercised by the python.* tests with every installed interpreter (exact
// function names and lines). CPython keeps these layouts stable within a
// minor version (debuggers and profilers rely on it), so one row per minor
// version. A version without a row gets the kPythonNoGil marker.
#pragma once
#include <cstdint>
#include <cstring>

namespace gpumemrec {
namespace pylayout {

// How the interpreter's frames are chained.
enum class FrameKind : uint8_t {
  kFrameObject,       // 3.10: PyFrameObject, f_back, f_lasti (code units)
  kInterpPrevInstr,   // 3.11, 3.12: _PyInterpreterFrame, prev_instr
  kInterpInstrPtr,    // 3.13: _PyInterpreterFrame, instr_ptr, f_executable
  kInterpStackRef,    // 3.14: as 3.13, f_executable a tagged _PyStackRef
};

// How a line table is encoded.
enum class LineTable : uint8_t {
  kPep626,      // 3.10 co_linetable: (byte delta, signed line delta) pairs
  kLocations,   // 3.11+ co_linetable: location table (PEP 657)
};

struct Layout {
  int minor;  // 3.<minor>
  FrameKind frame_kind;
  LineTable line_table;

  // PyThreadState -> innermost frame: *(tstate + tstate_frame), then, when
  // cframe_current >= 0, *(that + cframe_current) (3.11/3.12 go through
  // tstate->cframe->current_frame).
  int tstate_frame;
  int cframe_current;

  // Frame (PyFrameObject for 3.10, _PyInterpreterFrame for 3.11+).
  int frame_code;      // f_code / f_executable
  int frame_previous;  // f_back / previous
  int frame_instr;     // f_lasti (int) / prev_instr / instr_ptr (pointer)
  int frame_owner;     // char owner; -1 for 3.10

  // PyCodeObject.
  int code_filename;
  int code_name;       // co_qualname (3.11+) or co_name (3.10)
  int code_firstlineno;
  int code_linetable;  // bytes
  int code_code;       // 3.10: co_code (bytes); -1 otherwise
  int code_adaptive;   // 3.11+: co_code_adaptive (inline array); -1 for 3.10
  int code_firsttraceable;  // 3.11+: _co_firsttraceable (int); -1 for 3.10

  // str: sizeof(PyASCIIObject) and sizeof(PyCompactUnicodeObject).
  int ascii_size;
  int compact_size;

  // PyThreadState, for the walk of the interpreter's thread list
  // (record/python_borrow.h): next, interp, native_thread_id (3.11+; -1 for
  // 3.10, which does not keep the thread's kernel id).
  int tstate_next;
  int tstate_interp;
  int tstate_native_tid;
};

// Common to every supported version.
constexpr int kObType = 8;          // PyObject.ob_type
constexpr int kObSize = 16;         // PyVarObject.ob_size
constexpr int kBytesData = 32;      // PyBytesObject.ob_sval
constexpr int kStrLength = 16;      // PyASCIIObject.length
constexpr int kStrState = 32;       // PyASCIIObject.state (bit field)
constexpr int kCodeUnit = 2;        // sizeof(_Py_CODEUNIT)

// Frame owners (3.11+).
constexpr char kOwnedByGenerator = 1;
// 3.12, 3.13: FRAME_OWNED_BY_CSTACK = 3 (entry/shim frames, no Python code);
// 3.14: FRAME_OWNED_BY_INTERPRETER = 3, FRAME_OWNED_BY_CSTACK = 4, both
// without Python code (_PyFrame_IsIncomplete: owner >= FRAME_OWNED_BY_INTERPRETER).
constexpr char kFirstOwnerWithoutCode = 3;

// 3.14 (GIL builds): a _PyStackRef's object is its bits with the
// Py_TAG_REFCNT bit cleared (Include/internal/pycore_stackref.h,
// BITS_TO_PTR_MASKED; Py_TAG_REFCNT = 1).
constexpr uintptr_t kStackRefTagMask = 1;

// The code object a frame's f_code / f_executable word names (3.14+: the
// word is a _PyStackRef, its tag bit cleared).
inline const char* code_of_word(FrameKind kind, const char* word) {
  if (kind != FrameKind::kInterpStackRef) return word;
  return reinterpret_cast<const char*>(reinterpret_cast<uintptr_t>(word) & ~kStackRefTagMask);
}
// Frames that hold no Python code (3.12+ entry/shim frames; 3.14 also the
// interpreter's own).
inline bool owner_without_code(char owner) { return owner >= kFirstOwnerWithoutCode; }

constexpr Layout kLayouts[] = {
    // minor  frames                        lines
    {10, FrameKind::kFrameObject, LineTable::kPep626,
     /*tstate_frame*/ 24, /*cframe_current*/ -1,
     /*frame code, previous, instr, owner*/ 32, 24, 96, -1,
     /*code filename, name, firstlineno, linetable, code, adaptive, firsttraceable*/ 104, 112, 40, 120, 48, -1, -1,
     /*str*/ 48, 72,
     /*tstate next, interp, native_thread_id*/ 8, 16, -1},
    {11, FrameKind::kInterpPrevInstr, LineTable::kLocations,
     56, 8,
     32, 48, 56, 69,
     112, 128, 72, 136, -1, 184, 168,
     48, 72,
     8, 16, 160},
    {12, FrameKind::kInterpPrevInstr, LineTable::kLocations,
     56, 0,
     0, 8, 56, 70,
     112, 128, 68, 136, -1, 192, 176,
     40, 56,
     8, 16, 144},
    {13, FrameKind::kInterpInstrPtr, LineTable::kLocations,
     72, -1,
     0, 8, 56, 70,
     112, 128, 68, 136, -1, 200, 184,
     40, 56,
     8, 16, 160},
    // 3.14 (Debian testing's python3.14 3.14.8 headers; CPython v3.14.0:
    // Include/internal/pycore_interpframe_structs.h adds _PyStackRef
    // *stackpointer before return_offset, moving owner to 74;
    // Include/cpython/code.h grows the code object's header by 8).
    {14, FrameKind::kInterpStackRef, LineTable::kLocations,
     72, -1,
     0, 8, 56, 74,
     112, 128, 68, 136, -1, 208, 192,
     40, 56,
     8, 16, 160},  // PyThreadState next, interp, native_thread_id (3.14.8 headers)
    // 3.15 (Debian testing's python3.15 3.15.0 headers): the same offsets,
    // the same _PyInterpreterFrame and _PyStackRef tagging as 3.14; its
    // frame owners stop at FRAME_OWNED_BY_INTERPRETER = 3.
    {15, FrameKind::kInterpStackRef, LineTable::kLocations,
     72, -1,
     0, 8, 56, 74,
     112, 128, 68, 136, -1, 208, 192,
     40, 56,
     8, 16, 184},  // native_thread_id moved (3.15.0 headers)
};

// Unaligned-safe reads of interpreter memory (no interpreter call).
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

// The characters of a compact str object as the interpreter stores them.
struct StrView {
  const uint8_t* data = nullptr;
  int64_t length = 0;  // characters
  uint8_t kind = 0;    // bytes per character: 1, 2 or 4; 0 = not readable
};
// unicode_type null: the type is not checked. Legacy (non-compact) strings,
// never used for code objects' names, are not readable.
inline StrView str_view(const char* obj, const Layout& L, const void* unicode_type) {
  StrView v;
  if (!obj || (unicode_type && load_ptr(obj + kObType) != unicode_type)) return v;
  uint32_t state = uint32_t(load_i32(obj + kStrState));
  uint32_t kind = (state >> 2) & 7, compact = (state >> 5) & 1, ascii = (state >> 6) & 1;
  int64_t len = load_i64(obj + kStrLength);
  if (!compact || len < 0) return v;
  if (ascii) kind = 1;
  if (kind != 1 && kind != 2 && kind != 4) return v;
  v.data = reinterpret_cast<const uint8_t*>(obj + (ascii ? L.ascii_size : L.compact_size));
  v.length = len;
  v.kind = uint8_t(kind);
  return v;
}

inline const Layout* layout_for(int minor) {
  for (const auto& l : kLayouts)
    if (l.minor == minor) return &l;
  return nullptr;
}

}  // namespace pylayout
}  // namespace gpumemrec
