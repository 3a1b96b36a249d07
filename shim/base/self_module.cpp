#include "shim/base/self_module.h"

#include <dlfcn.h>
#include <link.h>

#include <atomic>
#include <cstdint>

namespace gpumemrec {

namespace {

std::atomic<uint64_t> g_start{0}, g_end{0};
std::atomic<bool> g_known{false};

struct Range {
  uint64_t self, lo, hi;
};

int find_self(struct dl_phdr_info* info, size_t, void* data) {
  auto* r = static_cast<Range*>(data);
  bool mine = false;
  uint64_t lo = UINT64_MAX, hi = 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD) continue;
    uint64_t start = info->dlpi_addr + ph.p_vaddr, end = start + ph.p_memsz;
    if (r->self >= start && r->self < end) mine = true;
    if (start < lo) lo = start;
    if (end > hi) hi = end;
  }
  if (!mine) return 0;
  r->lo = lo;
  r->hi = hi;
  return 1;
}

}  // namespace

void self_module_init() {
  if (g_known.load(std::memory_order_acquire)) return;
  Range r{reinterpret_cast<uint64_t>(&self_module_init), 0, 0};
  if (dl_iterate_phdr(find_self, &r) == 0) return;
  g_start.store(r.lo, std::memory_order_relaxed);
  g_end.store(r.hi, std::memory_order_relaxed);
  g_known.store(true, std::memory_order_release);
}

bool address_in_self(uint64_t addr) {
  if (!g_known.load(std::memory_order_acquire)) self_module_init();
  return addr >= g_start.load(std::memory_order_relaxed) && addr < g_end.load(std::memory_order_relaxed);
}

std::string self_module_dir() {
  Dl_info info;
  if (dladdr(reinterpret_cast<void*>(&self_module_init), &info) == 0 || !info.dli_fname) return "";
  const std::string lib = info.dli_fname;
  const size_t slash = lib.rfind('/');
  return slash == std::string::npos ? "" : lib.substr(0, slash);
}

}  // namespace gpumemrec
