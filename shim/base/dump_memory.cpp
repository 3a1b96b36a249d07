#include "shim/base/dump_memory.h"

#include <sys/mman.h>

#include <atomic>
#include <cstdint>

namespace gpumemrec {

namespace {
char* g_arena = nullptr;
size_t g_arena_size = 0;
std::atomic<size_t> g_arena_used{0};
__thread bool t_in_dump __attribute__((tls_model("initial-exec"))) = false;
}  // namespace

bool dump_memory_init(size_t bytes) {
  if (g_arena) return true;
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return false;
  g_arena = static_cast<char*>(p);
  g_arena_size = bytes;
  return true;
}

void* dump_memory_alloc(size_t bytes) {
  if (!t_in_dump || !g_arena) return nullptr;
  const size_t need = (bytes + 15) & ~size_t(15);
  size_t cur = g_arena_used.load(std::memory_order_relaxed);
  do {
    if (need > g_arena_size - cur) return nullptr;
  } while (!g_arena_used.compare_exchange_weak(cur, cur + need, std::memory_order_relaxed));
  return g_arena + cur;
}

bool dump_memory_owns(const void* p) {
  const char* c = static_cast<const char*>(p);
  return g_arena && c >= g_arena && c < g_arena + g_arena_size;
}

bool dump_memory_active() { return t_in_dump; }
size_t dump_memory_used() { return g_arena_used.load(std::memory_order_relaxed); }

DumpMemoryScope::DumpMemoryScope() : prev_(t_in_dump) { t_in_dump = true; }
DumpMemoryScope::~DumpMemoryScope() { t_in_dump = prev_; }

}  // namespace gpumemrec
