// Python frames for the stack of an event (issue: Python call stacks).
//
// Frame words appended after the native frames of a stack:
//   kPythonFrameTag | code_id << 24 | line   one Python frame (innermost first)
//                                            of the calling thread, whether
//                                            it holds the GIL or released it
//   kPythonNativeThread                      Python is running but this thread
//                                            has no Python frame of its own
//                                            (a native thread: no thread
//                                            state, or no frame on it)
//   kPythonNoGil                             Python is running but its frames
//                                            cannot be read: unsupported
//                                            version or free-threaded build
//   kPythonBorrowedTag | tid, then frames    this thread has no Python frame;
//                                            the frames are those of the
//                                            Python thread (kernel id tid,
//                                            0 = unknown) waiting in PyTorch's
//                                            backward (python_borrow.h)
//   kPythonBorrowAmbiguous                   no Python frame of its own and
//                                            two or more Python threads wait
//                                            in backward: nothing borrowed
// code_id is the interned code object (1 .. 2^17-1; 0 = table full), line
// the line of the frame's current instruction (24 bits, 0 = unknown).
// A stack with none of these was taken in a process without Python (or with
// GPUMEMREC_PYTHON_STACKS=0).
#pragma once
#include <cstdint>
#include <string>

namespace gpumemrec {

constexpr uint32_t kMaxPythonFrames = 64;
constexpr uint64_t kPythonFrameTag = 1ull << 63;
constexpr uint64_t kPythonNoGil = 0xFFFFFFFFFFFFFF01ull;
constexpr uint64_t kPythonNativeThread = 0xFFFFFFFFFFFFFF02ull;
constexpr uint64_t kPythonBorrowAmbiguous = 0xFFFFFFFFFFFFFF03ull;
// Frame words carry code ids below 2^17, so they never reach this range.
constexpr uint64_t kPythonBorrowedTag = 0xFFFFFFFE00000000ull;

inline bool is_python_word(uint64_t w) { return (w & kPythonFrameTag) != 0; }
// A status marker (no_gil, native_thread, borrowed, ...), not a frame.
inline bool is_python_marker(uint64_t w) { return w >= kPythonBorrowedTag; }
inline bool is_python_borrowed(uint64_t w) { return w >= kPythonBorrowedTag && w <= kPythonBorrowedTag + 0xFFFFFFFFull; }
inline uint64_t python_borrowed_marker(uint32_t tid) { return kPythonBorrowedTag | tid; }

// Called from the library constructor; finds the interpreter if loaded.
void python_stack_init(bool enabled);
// Appends Python frame words (at most max) for the calling thread; returns
// how many were written. Never takes the GIL, never runs Python code, never
// changes a reference count. Reads another thread's frames only when the
// calling thread has none, and then only with fault-tolerant reads
// (python_borrow.h).
uint32_t capture_python_frames(uint64_t* out, uint32_t max);
// "captured", "borrowed", "native_thread", "no_gil", "not_python" or
// "disabled" for a stack's words.
const char* python_status(const uint64_t* frames, uint32_t n);
// Of a "borrowed" stack: the lending thread's kernel id (0 = unknown).
// Returns false for any other stack.
bool python_lender(const uint64_t* frames, uint32_t n, uint32_t* tid);
// Whether the stack is "native_thread" because two or more Python threads
// waited in backward.
bool python_borrow_ambiguous(const uint64_t* frames, uint32_t n);

struct PythonFrameInfo {
  std::string file;
  std::string function;
  int line = 0;
};
// Dump time: resolves a Python frame word.
bool describe_python_frame(uint64_t word, PythonFrameInfo* out);

}  // namespace gpumemrec
