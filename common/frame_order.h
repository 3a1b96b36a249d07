// Where the Python frames of a stack go among its native frames.
//
// A stack is captured as native return addresses (innermost first) plus the
// interpreter's Python frames (innermost first). Written one list after the
// other, a flame graph reads the Python frames as callees of the GPU API
// (`<module>` called by `ffi_call`). PyTorch's own snapshots keep the native
// frames innermost and insert the Python frames where the interpreter's
// evaluation loop runs: torch/csrc/profiler/combined_traceback.cpp
// (pytorch/pytorch, symbolize()) walks the C++ frames innermost first and,
// before each frame whose name contains "PyEval_EvalFrame", emits the next
// Python frame; Python frames left over go after the outermost C++ frame.
//
// Our rule (docs/bundle-format.md, stacks.json):
//  - The evaluation loop is `_PyEval_EvalFrameDefault` (also with a
//    compiler suffix such as `.cold`): the one real function through which
//    CPython 3.10 to 3.13 runs Python code (Python/ceval.c). `_PyEval_EvalFrame`
//    is a static inline in Include/internal/pycore_ceval.h that calls it (or a
//    PEP 523 eval_frame hook, which in turn calls it); `PyEval_EvalFrameEx`
//    and `PyEval_EvalCode` are entry points that call it. Matching only the
//    loop itself counts each entry into it once (PyTorch's substring match
//    would also count `PyEval_EvalFrameEx` called by Cython code above the
//    loop it enters).
//  - K loops found, N Python frames, K >= N: one Python frame per loop,
//    innermost Python frame at the innermost loop (CPython 3.10 enters the
//    loop once per Python call; K > N when the Python frames were cut at
//    their limit, which keeps the innermost ones).
//  - 0 < K < N: CPython 3.11+ runs Python-to-Python calls inside one loop,
//    so which frames belong to which loop cannot be told: all Python frames
//    go at the outermost loop (also when the native stack was cut at its
//    depth limit before the outer loops).
//  - K = 0 (a stripped interpreter, or a native stack cut before any loop):
//    at the innermost frame of the interpreter's own module (`python3.x`,
//    `libpython3.x.so`), so that the extension and driver frames stay
//    innermost; failing that, after the outermost native frame.
// In every case a Python frame is placed on the innermost side of the native
// frame it is attached to: the loop calls the Python function, which calls
// the native frames further in.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "common/bundle_model.h"

namespace gpumemrec {

struct NativeFrameName {
  std::string_view function;  // symbol name, "" when unknown
  std::string_view module;    // path of the loaded object, "" when unknown
};

struct FrameSlot {
  bool python;     // index into the Python frames, else into the native frames
  uint32_t index;
};

// True for the CPython evaluation loop's symbol (see above).
bool is_python_eval_loop(std::string_view function);
// True when the module's file name is the interpreter's (python3.12,
// libpython3.12.so.1.0, python3.10d...).
bool is_python_interpreter_module(std::string_view module);

// The merged order, innermost first: every native and every Python frame
// exactly once, each kind in its given order.
std::vector<FrameSlot> interleave_python_frames(const std::vector<NativeFrameName>& native, size_t python_count);

// A bundle stack's frames in that order (what every tool shows). Bundles
// written before this rule listed the Python frames first; reordering them
// gives the same list as a bundle written with it (the rule depends only on
// the order within each kind).
std::vector<const model::Frame*> ordered_frames(const model::Stack& s);

}  // namespace gpumemrec
