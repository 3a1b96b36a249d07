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
#include <cstdint>

namespace gpumemrec {

// Copies n bytes from src; false (and dst unspecified) when any of them
// could not be read.
bool safe_read(void* dst, const void* src, size_t n);
// Whether process_vm_readv works in this process (false once refused).
bool safe_read_available();
// The child of fork(): a new process id.
void safe_read_atfork_child();

// Whole pages copied with safe_read for one walk: a read inside a page
// already copied costs no system call (one process_vm_readv costs ~1.1 us
// here, whatever its size up to a page). A page is mapped or not as a whole,
// so copying all of it never fails where the bytes asked for would not.
// The copies are a snapshot: a caller that must see memory as it is now
// reads it with safe_read.
class SafePages {
 public:
  static constexpr size_t kPage = 4096;
  static constexpr size_t kPages = 16;
  void clear();
  bool read(void* dst, const void* src, size_t n);

 private:
  const char* page(uintptr_t base);
  uintptr_t base_[kPages] = {};  // 0 = empty
  uint32_t next_ = 0;
  alignas(64) char data_[kPages][kPage];
};

}  // namespace gpumemrec
