// Reads of memory that may have been unmapped since its address was taken:
// another thread's interpreter structures (record/python_borrow.h). A read
// of an unmapped page answers false instead of a SIGSEGV.
//
// process_vm_readv(2) on this process: the kernel copies with its own
// fault handling and answers EFAULT for a page that is not mapped. Access
// to one's own process is always allowed (ptrace access checks pass for the
// same thread group: kernel/ptrace.c, __ptrace_may_access). A seccomp
// policy may still refuse the call (ENOSYS/EPERM): then every read answers
// false from then on. errno is left as it was.
#pragma once
#include <cstddef>

namespace gpumemrec {

// Copies n bytes from src; false (and dst unspecified) when any of them
// could not be read.
bool safe_read(void* dst, const void* src, size_t n);
// Whether process_vm_readv works in this process (false once refused).
bool safe_read_available();
// The child of fork(): a new process id.
void safe_read_atfork_child();

}  // namespace gpumemrec
