// Borrowed Python frames: the Python line that started the work of a
// native thread (see docs/design.md, "Borrowed Python frames").
//
// PyTorch's autograd runs backward on its own engine threads: the caching
// allocator's cudaMalloc for a CUDA backward runs on a thread with no Python
// frame. The Python thread that asked for the backward is blocked in C
// inside Engine::execute with the GIL released, its frame chain frozen
// until backward returns. When the allocating thread has no Python frame of
// its own, the interpreter's thread list is walked for a thread whose
// innermost Python frame is one of kBackwardEntries below; exactly one such
// thread lends its frames. Two or more: ambiguous, nothing is borrowed.
//
// Every read of another thread's structures goes through safe_read
// (base/safe_read.h): a thread state or frame freed while the list is walked
// answers "nothing to borrow", never a fault. Each thread state must point
// back at the interpreter being walked; the walk stops after kMaxThreads.
// The reads go through whole-page copies (SafePages, one set shared by the
// process and taken with a try-lock: a walk that finds it taken reads page
// by page without it), so a walk costs about one system call per page.
// After the lender's frames are read its innermost frame is read again; if
// it changed (backward returned) nothing is borrowed.
#pragma once
#include <cstdint>
#include <string_view>

#include "shim/record/python_frame_walk.h"

namespace gpumemrec {

// The interpreter functions the walk calls (exported by libpython; each is
// one load of a field, no lock, no GIL needed).
struct PythonThreadsApi {
  void* (*interp_main)() = nullptr;          // PyInterpreterState_Main
  void* (*thread_head)(void*) = nullptr;     // PyInterpreterState_ThreadHead
};

// A Python function that waits in C while another thread does the work it
// started: the Python file's path ends in `file_suffix` (after a '/') and
// the code object's name (3.11+: qualified name) is `function`.
struct BorrowEntry {
  const char* file_suffix;
  const char* function;
};
extern const BorrowEntry kBackwardEntries[];
extern const uint32_t kBackwardEntryCount;

constexpr uint32_t kMaxBorrowThreads = 4096;

enum class BorrowResult : uint8_t {
  kNone,       // the whole list was read: no other thread waits in backward
  kUnknown,    // the list changed under every walk, or the lender left backward
  kBorrowed,   // out[0] = the borrowed marker with the lender's tid, then its frames
  kAmbiguous,  // two or more threads wait in backward
};

// own_ts: the calling thread's own thread state (skipped), or null. Writes
// at most max words; returns the result and, for kBorrowed, *n words.
BorrowResult borrow_python_frames(const pywalk::Env& env, const PythonThreadsApi& api, const char* own_ts,
                                  uint64_t* out, uint32_t max, uint32_t* n);

// The child of fork(): a walk that held the page copies at the fork is gone.
void python_borrow_atfork_child();

// Whether a code object is one of kBackwardEntries: file_tail is its file
// name or the name's last characters (enough for the suffix and the '/'
// before it), name its name. Exposed for the tests.
bool is_backward_entry(std::string_view file_tail, std::string_view name);

}  // namespace gpumemrec
