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
  const uint64_t h = hash(e.key);
  Retired done;  // unmapped after the guard
  SpinGuard g(s.lock);
  return home_insert(s, e, h, &done);
}

// Another home's `live` is read without its lock: an entry inserted there
// before this lookup began is counted in what this thread reads (the
// program handed the address over after the allocation returned), and it
// leaves that home only by a removal, so a zero means it is not there.
bool LiveTable::lookup(uint64_t key, LiveEntry* out, bool take) {
  if (key == 0 || key == kMoved) return false;
  Home& own = own_home();
  const uint64_t h = hash(key);
  {
    Retired done;
    SpinGuard g(own.lock);
    if (home_lookup(own, key, h, out, take, &done)) return true;
  }
  for (Home& s : homes_) {
    if (&s == &own || live_of(s) == 0) continue;
    Retired done;
    SpinGuard g(s.lock);
    if (home_lookup(s, key, h, out, take, &done)) return true;
  }
  return false;
}

}  // namespace gpumemrec
