#include "shim/base/symbol_cache.h"

#include <dlfcn.h>
#include <link.h>

#include <cstddef>

namespace gpumemrec {

namespace {

void* const kMissing = reinterpret_cast<void*>(uintptr_t(1));
std::atomic<uint64_t> g_unload_gen{1};

struct Counters {
  uint64_t adds = 0, subs = 0;
};

int read_counters(struct dl_phdr_info* info, size_t size, void* data) {
  auto* c = static_cast<Counters*>(data);
  if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof(info->dlpi_subs)) {
    c->adds = info->dlpi_adds;
    c->subs = info->dlpi_subs;
  }
  return 1;  // the counters are the same in every entry: stop at the first
}

Counters counters() {
  Counters c;
  dl_iterate_phdr(read_counters, &c);
  return c;
}

uint64_t object_base(void* addr) {
  Dl_info info;
  if (!addr || dladdr(addr, &info) == 0) return 0;
  return reinterpret_cast<uint64_t>(info.dli_fbase);
}

void store(SymbolSlot& slot, void* addr, uint64_t base, uint64_t adds, uint64_t gen) {
  slot.addr.store(addr, std::memory_order_relaxed);
  slot.base.store(base, std::memory_order_relaxed);
  slot.adds.store(adds, std::memory_order_relaxed);
  slot.stamp.store(gen, std::memory_order_release);
}

// A positive answer from an older generation: still inside the object it
// was found in?
bool still_loaded(SymbolSlot& slot, void* addr) {
  uint64_t base = slot.base.load(std::memory_order_relaxed);
  return base != 0 && object_base(addr) == base;
}

}  // namespace

uint64_t loader_adds() { return counters().adds; }
uint64_t loader_subs() { return counters().subs; }
uint64_t unload_generation() { return g_unload_gen.load(std::memory_order_acquire); }
void note_library_unloaded() { g_unload_gen.fetch_add(1, std::memory_order_acq_rel); }

void* cached_symbol(SymbolSlot& slot, LookupFn lookup, const void* ctx) {
  const uint64_t gen = g_unload_gen.load(std::memory_order_acquire);
  const uint64_t stamp = slot.stamp.load(std::memory_order_acquire);
  void* p = slot.addr.load(std::memory_order_relaxed);
  if (stamp == gen && p != kMissing && p) return p;  // the hot path
  if (stamp != 0 && p == kMissing && slot.adds.load(std::memory_order_relaxed) == loader_adds()) {
    if (stamp != gen) slot.stamp.store(gen, std::memory_order_release);
    return nullptr;  // nothing was loaded since the failed look-up
  }
  if (stamp != 0 && stamp != gen && p && p != kMissing && still_loaded(slot, p)) {
    slot.stamp.store(gen, std::memory_order_release);
    return p;
  }
  const uint64_t adds = loader_adds();  // before the look-up: a load during it is seen next time
  p = lookup(ctx);
  if (p) store(slot, p, object_base(p), 0, gen);
  else store(slot, kMissing, 0, adds, gen);
  return p;
}

void* adopt_symbol(SymbolSlot& slot, void* addr) {
  const uint64_t gen = g_unload_gen.load(std::memory_order_acquire);
  void* cur = slot.addr.load(std::memory_order_acquire);
  const bool valid = slot.stamp.load(std::memory_order_acquire) != 0 && cur && cur != kMissing &&
                     (slot.stamp.load(std::memory_order_relaxed) == gen || still_loaded(slot, cur));
  if (valid) return cur;
  if (!addr) return nullptr;
  if (!slot.addr.compare_exchange_strong(cur, addr, std::memory_order_acq_rel)) return adopt_symbol(slot, addr);
  store(slot, addr, object_base(addr), 0, gen);
  return addr;
}

}  // namespace gpumemrec
