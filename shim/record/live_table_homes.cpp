// The live table's two public entry points that pick a home: insert (into
// this thread's home) and lookup (this thread's home, then every other
// home that holds anything). Why and the rules: live_table.h.
#include "shim/record/live_table.h"

#include "shim/base/tls.h"

namespace gpumemrec {

namespace {

std::atomic<unsigned> g_next_home{0};  // written once per thread
// This thread's home index + 1 (0: not picked yet), the same in every
// table. A forked child's thread keeps it.
GM_TLS unsigned t_home = 0;

}  // namespace

LiveTable::Home& LiveTable::own_home() {
  if (__builtin_expect(t_home == 0, 0)) t_home = g_next_home.fetch_add(1, std::memory_order_relaxed) % kHomes + 1;
  return homes_[t_home - 1];
}

bool LiveTable::insert(const LiveEntry& e) {
  if (e.key == 0 || e.key == kMoved) return false;
  Home& s = own_home();
  const uint64_t bit = uint64_t(1) << (&s - homes_);
  if (!(used_.load(std::memory_order_relaxed) & bit)) used_.fetch_or(bit, std::memory_order_relaxed);
  const uint64_t h = hash(e.key);
  Retired done;  // unmapped after the guard
  SpinGuard g(s.lock);
  return home_insert(s, e, h, &done);
}

// Another home's bit in `used_` and its `live` are read without its lock:
// an entry inserted there before this lookup began is counted in what this
// thread reads (the program handed the address over after the allocation
// returned; the bit was set before the insert), and it leaves that home
// only by a removal, so a clear bit or a zero means it is not there.
bool LiveTable::lookup(uint64_t key, LiveEntry* out, bool take) {
  if (key == 0 || key == kMoved) return false;
  Home& own = own_home();
  const uint64_t h = hash(key);
  if (live_of(own) != 0) {  // a thread that only frees others' allocations takes no lock of its own
    Retired done;
    SpinGuard g(own.lock);
    if (home_lookup(own, key, h, out, take, &done)) return true;
  }
  for (uint64_t used = used_.load(std::memory_order_relaxed); used; used &= used - 1) {
    Home& s = homes_[__builtin_ctzll(used)];
    if (&s == &own || live_of(s) == 0) continue;
    Retired done;
    SpinGuard g(s.lock);
    if (home_lookup(s, key, h, out, take, &done)) return true;
  }
  return false;
}

}  // namespace gpumemrec
