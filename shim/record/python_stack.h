// Python frames for the stack of an event (issue: Python call stacks).
//
// Frame words appended after the native frames of a stack:
//   kPythonFrameTag | code_id << 24 | line   one Python frame (innermost first)
//   kPythonNoGil                             Python is running but no Python
//                                            stack was available: this thread
//                                            does not hold the GIL (native
//                                            thread, call through ctypes.CDLL,
//                                            autograd threads), has no Python
//                                            frame, or the interpreter's
//                                            version/build is not supported
// code_id is the interned code object (1 .. 2^17-1; 0 = table full), line
// the line of the frame's current instruction (24 bits, 0 = unknown).
// A stack with neither was taken in a process without Python (or with
// GPUMEMREC_PYTHON_STACKS=0).
#pragma once
#include <cstdint>
#include <string>

namespace gpumemrec {

constexpr uint32_t kMaxPythonFrames = 64;
constexpr uint64_t kPythonFrameTag = 1ull << 63;
constexpr uint64_t kPythonNoGil = 0xFFFFFFFFFFFFFF01ull;

inline bool is_python_word(uint64_t w) { return (w & kPythonFrameTag) != 0; }

// Called from the library constructor; finds the interpreter if loaded.
void python_stack_init(bool enabled);
// Appends Python frame words (at most max) for the calling thread; returns
// how many were written. Never takes the GIL, never runs Python code.
uint32_t capture_python_frames(uint64_t* out, uint32_t max);
// "captured", "no_gil", "not_python" or "disabled" for a stack's words.
const char* python_status(const uint64_t* frames, uint32_t n);

struct PythonFrameInfo {
  std::string file;
  std::string function;
  int line = 0;
};
// Dump time: resolves a Python frame word.
bool describe_python_frame(uint64_t word, PythonFrameInfo* out);

}  // namespace gpumemrec
