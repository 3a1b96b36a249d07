// Memory for the dump path when the host is short of memory.
//
// An emergency arena is reserved (mmap, MAP_NORESERVE) when the recorder
// starts. While a thread writes a bundle (DumpMemoryScope), the shim's own
// operator new (shim_operator_new.cpp, linked into libgpumemrec.so only)
// falls back to this arena when malloc fails. Arena memory is never given
// back (operator delete ignores it), so nothing can dangle; it is only ever
// used once malloc has already failed.
#pragma once
#include <cstddef>

namespace gpumemrec {

constexpr size_t kDumpArenaBytes = 8u << 20;

bool dump_memory_init(size_t bytes);         // from dumper_init
void* dump_memory_alloc(size_t bytes);       // nullptr when not in a dump or the arena is spent
bool dump_memory_owns(const void* p);
bool dump_memory_active();                   // this thread is writing a bundle
size_t dump_memory_used();

class DumpMemoryScope {
 public:
  DumpMemoryScope();
  ~DumpMemoryScope();
  DumpMemoryScope(const DumpMemoryScope&) = delete;
  DumpMemoryScope& operator=(const DumpMemoryScope&) = delete;

 private:
  bool prev_;
};

}  // namespace gpumemrec
