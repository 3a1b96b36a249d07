// Native stack capture on the hot path.
//
// libunwind's unw_backtrace (which caches frame descriptions per return
// address) is loaded with dlopen(RTLD_LOCAL) at start-up instead of being
// linked: libunwind.so.8 exports _Unwind_* and even `backtrace`, and as a
// dependency of a preloaded library it would interpose those for the whole
// program (its C++ exceptions included). Loaded locally, it serves only us.
// Without libunwind we fall back to glibc's backtrace().
//
// Capture runs outside every lock of ours; frames inside libgpumemrec.so are
// dropped so a stack starts at the program's call into the GPU API.
#pragma once
#include <cstdint>

namespace gpumemrec {

void stack_capture_init();
const char* stack_capture_backend();  // "libunwind", "glibc backtrace", "none"

// In a forked child: another thread of the parent may have held one of
// libunwind's internal locks (its memory pool, its caches) at the fork, and
// no atfork handler of ours can take those. The child therefore unwinds with
// glibc's backtrace() from then on.
void stack_capture_after_fork();

// Writes at most `depth` return addresses (innermost first) to out.
uint32_t capture_native_stack(uint64_t* out, int depth);

}  // namespace gpumemrec
