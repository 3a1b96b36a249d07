// The shim's own operator new / delete (libgpumemrec.so only; hidden, so the
// program's allocations never come here: libstdc++ is linked statically and
// every symbol but the hooks is local). Identical to the standard ones except
// that, while this thread writes a bundle, a failed malloc falls back to the
// emergency arena (dump_memory.h) instead of throwing at once.
#include <cstdlib>
#include <new>

#include "shim/base/dump_memory.h"

void* operator new(std::size_t n) {
  if (n == 0) n = 1;
  for (;;) {
    if (void* p = std::malloc(n)) return p;
    if (void* p = gpumemrec::dump_memory_alloc(n)) return p;
    std::new_handler h = std::get_new_handler();
    if (!h) throw std::bad_alloc();
    h();
  }
}

void* operator new[](std::size_t n) { return ::operator new(n); }

void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  try {
    return ::operator new(n);
  } catch (...) {
    return nullptr;
  }
}

void* operator new[](std::size_t n, const std::nothrow_t&) noexcept {
  try {
    return ::operator new(n);
  } catch (...) {
    return nullptr;
  }
}

void operator delete(void* p) noexcept {
  if (!p || gpumemrec::dump_memory_owns(p)) return;
  std::free(p);
}
void operator delete[](void* p) noexcept { ::operator delete(p); }
void operator delete(void* p, std::size_t) noexcept { ::operator delete(p); }
void operator delete[](void* p, std::size_t) noexcept { ::operator delete(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { ::operator delete(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { ::operator delete(p); }
