// Native stack capture on the hot path.
//
// libunwind's unw_backtrace (which caches frame descriptions per return
// address) is loaded with dlopen(RTLD_LOCAL) at start-up instead of being
// linked: libunwind.so.8 exports _Unwind_* and even `backtrace`, and as a
// dependency of a preloaded library it would interpose those for the whole
// program (its C++ exceptions included). Loaded locally, it serves only us.
// The system's libunwind.so.8 is tried first (a program or a library it
// loads later that needs libunwind.so.8 then shares it, as without us), then
// the copy installed beside libgpumemrec.so (with liblzma.so.5, which it
// needs, where the system has none). Without either we fall back to glibc's
// backtrace(), with a warning: it costs about ten times as much per frame.
// GPUMEMREC_UNWINDER picks one (common/config.h).
//
// Capture runs outside every lock of ours; frames inside libgpumemrec.so are
// dropped so a stack starts at the program's call into the GPU API.
#pragma once
#include <cstdint>

#include "common/config.h"

namespace gpumemrec {

void stack_capture_init(Unwinder which);
// "libunwind (bundled)", "libunwind", "glibc backtrace", "none" (bundles:
// environment.json config.unwinder).
const char* stack_capture_backend();

// fork (unwind_guard.h): another thread of ours may have been inside
// libunwind, holding one of its locks, at the fork. The prepare handler
// makes sure every thread's call into libunwind is either visible or not
// started; the child keeps libunwind when none was inside, and unwinds with
// glibc's backtrace() from then on when one was (or when the guard is off).
void stack_capture_before_fork();
void stack_capture_after_fork_parent();
void stack_capture_after_fork();  // in the child

// Writes at most `depth` return addresses (innermost first) to out.
uint32_t capture_native_stack(uint64_t* out, int depth);

}  // namespace gpumemrec
