#include "shim/record/live_table.h"

#include <sys/mman.h>

namespace gpumemrec {
namespace {

constexpr uint64_t kFirstCapacity = 64;
constexpr uint64_t kNotFound = ~uint64_t(0);
// Old slots moved per insert/remove while a home grows: the old table is
// gone after capacity/kMoveStep updates of the home, long before the new one
// (twice as large, 5/16 full when growth starts) reaches its own limit.
constexpr uint64_t kMoveStep = 32;

bool over_limit(uint64_t live, uint64_t capacity) { return live * 8 > capacity * 5; }

// Bytes of a retired table unmapped per update of its home (32 pages: a
// few microseconds; a 1M-slot table is gone after ~450 updates).
constexpr size_t kReleaseStep = size_t(128) << 10;

size_t table_bytes(uint64_t capacity) { return capacity * (sizeof(uint64_t) + sizeof(LiveEntry)); }

}  // namespace

LiveTable::~LiveTable() {
  for (auto& s : homes_) {
    unmap_table(s.keys, s.capacity);
    unmap_table(s.old_keys, s.old_capacity);
    if (s.retired) munmap(s.retired, s.retired_bytes);
  }
  if (scratch_) munmap(scratch_, scratch_slots_ * sizeof(uint32_t));
}

uint64_t* LiveTable::map_table(uint64_t capacity) {
  size_t bytes = capacity * (sizeof(uint64_t) + sizeof(LiveEntry));
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return p == MAP_FAILED ? nullptr : static_cast<uint64_t*>(p);
}

void LiveTable::unmap_table(uint64_t* keys, uint64_t capacity) {
  if (keys) munmap(keys, table_bytes(capacity));
}

LiveTable::Retired::~Retired() {
  if (step) munmap(step, step_bytes);
  if (rest) munmap(rest, rest_bytes);
}

// The next step of the home's retired table into *done (unmapped after
// the lock; the mapping starts on a page and steps are whole pages, so
// each step is a valid munmap range; the kernel rounds the last one up).
void LiveTable::release_step(Home& s, Retired* done) {
  if (!s.retired) return;
  const size_t n = s.retired_bytes < kReleaseStep ? s.retired_bytes : kReleaseStep;
  done->step = s.retired;
  done->step_bytes = n;
  s.retired += n;
  s.retired_bytes -= n;
  if (s.retired_bytes == 0) s.retired = nullptr;
}

// Index of `key` in the table, or kNotFound. Empty slots end a probe; moved
// slots (old table only) do not.
uint64_t LiveTable::slot_of(const uint64_t* keys, uint64_t capacity, uint64_t key, uint64_t h) {
  if (!keys) return kNotFound;
  uint64_t mask = capacity - 1;
  for (uint64_t i = h & mask, n = 0; n < capacity; i = (i + 1) & mask, ++n) {
    if (keys[i] == key) return i;
    if (keys[i] == 0) return kNotFound;
  }
  return kNotFound;
}

// Stores `e` (not in the table yet) in the first free slot of its probe.
// The caller keeps the table below its load limit, so there is one.
void LiveTable::place(uint64_t* keys, uint64_t capacity, const LiveEntry& e, uint64_t h) {
  uint64_t mask = capacity - 1;
  uint64_t i = h & mask;
  while (keys[i] != 0) i = (i + 1) & mask;
  keys[i] = e.key;
  entries(keys, capacity)[i] = e;
}

// Backward-shift deletion (Knuth, TAOCP vol. 3, 6.4 algorithm R): every
// entry after the hole whose home slot is not between the hole and itself
// moves back into the hole, so probes never meet a tombstone.
void LiveTable::erase_shift(uint64_t* keys, uint64_t capacity, uint64_t i) {
  uint64_t mask = capacity - 1;
  LiveEntry* vals = entries(keys, capacity);
  for (uint64_t j = (i + 1) & mask; keys[j] != 0; j = (j + 1) & mask) {
    uint64_t home = hash(keys[j]) & mask;
    // Stays when home lies cyclically in (i, j].
    bool stays = i <= j ? (i < home && home <= j) : (i < home || home <= j);
    if (stays) continue;
    keys[i] = keys[j];
    vals[i] = vals[j];
    i = j;
  }
  keys[i] = 0;
}

// Moves up to `slots` old slots into the current table; when all are moved,
// the old table is retired (release_step gives it back a step per update;
// one still retired then, rare, goes to *done whole, unmapped after the
// home's lock is released: other threads need not wait).
void LiveTable::move_some(Home& s, uint64_t slots, Retired* done) {
  if (!s.old_keys) return;
  LiveEntry* vals = entries(s.old_keys, s.old_capacity);
  // `slots` may be ~0 ("all": start_growth): cursor + slots would wrap
  // below the cursor whenever a move was under way, and the slots not
  // moved yet went with the old table.
  const uint64_t end = slots < s.old_capacity - s.cursor ? s.cursor + slots : s.old_capacity;
  for (; s.cursor < end; ++s.cursor) {
    uint64_t k = s.old_keys[s.cursor];
    if (k == 0 || k == kMoved) continue;
    place(s.keys, s.capacity, vals[s.cursor], hash(k));
    s.old_keys[s.cursor] = kMoved;
  }
  if (s.cursor == s.old_capacity) {
    if (s.retired) {
      done->rest = s.retired;  // rare: an earlier table not given back yet
      done->rest_bytes = s.retired_bytes;
    }
    s.retired = reinterpret_cast<char*>(s.old_keys);
    s.retired_bytes = table_bytes(s.old_capacity);
    s.old_keys = nullptr;
    s.old_capacity = 0;
    s.cursor = 0;
  }
}

// Makes the current table the old one and starts an empty one twice as
// large. False when no memory is left.
bool LiveTable::start_growth(Home& s, Retired* done) {
  move_some(s, ~uint64_t(0), done);  // a previous growth not finished yet (rare)
  // Full of tombstones (left by a hold) rather than of entries: the same size.
  const bool same = s.capacity && !over_limit(live_of(s) + 1, s.capacity);
  uint64_t cap = !s.capacity ? kFirstCapacity : same ? s.capacity : s.capacity * 2;
  uint64_t* keys = map_table(cap);
  if (!keys) return false;
  s.tombs = 0;  // they stay behind in the table being moved out
  s.old_keys = s.keys;
  s.old_capacity = s.capacity;
  s.cursor = 0;
  s.keys = keys;
  s.capacity = cap;
  if (!s.old_keys) s.old_capacity = 0;
  return true;
}

// Into home `s` (the caller holds its lock; *done is destroyed after the
// caller's guard): the newer allocation wins over an entry already there
// with the key.
// While the home is held (live_table.h, "The hold") each change is logged
// first and nothing moves: no incremental move, no growth (the home is
// copied by this thread first: stash_home), tombstones for removals.
bool LiveTable::home_insert(Home& s, const LiveEntry& e, uint64_t h, Retired* done) {
  release_step(s, done);
  if (!s.held) move_some(s, kMoveStep, done);
  uint64_t i = slot_of(s.keys, s.capacity, e.key, h);
  if (i != kNotFound) {
    LiveEntry& held = entries(s.keys, s.capacity)[i];
    if (newer_or_same(e, held)) {
      if (__builtin_expect(s.held, 0)) log_update(s, e.key, &held);
      held = e;
    }
    return true;
  }
  uint64_t live = live_of(s);
  uint64_t o = slot_of(s.old_keys, s.old_capacity, e.key, h);
  if (o != kNotFound) {
    LiveEntry& old = entries(s.old_keys, s.old_capacity)[o];
    if (!newer_or_same(e, old)) return true;
    if (__builtin_expect(s.held, 0)) log_update(s, e.key, &old);
    s.old_keys[o] = kMoved;
    --live;
  } else if (__builtin_expect(s.held, 0)) {
    log_update(s, e.key, nullptr);
  }
  const bool full = over_limit(live + s.tombs + 1, s.capacity);
  if (full && s.held) stash_home(s);  // it must grow: its state so far is copied first
  if (full && !start_growth(s, done)) {
    // No memory for a larger table: use the slack of this one while it lasts.
    if (live + s.tombs + 1 >= s.capacity) {
      set_live(s, live);
      return false;
    }
  }
  place(s.keys, s.capacity, e, h);
  set_live(s, live + 1);
  return true;
}

// In home `s` (as home_insert).
bool LiveTable::home_lookup(Home& s, uint64_t key, uint64_t h, LiveEntry* out, bool take, Retired* done) {
  if (take) {
    release_step(s, done);
    if (!s.held) move_some(s, kMoveStep, done);
  }
  uint64_t i = slot_of(s.keys, s.capacity, key, h);
  if (i != kNotFound) {
    if (out) *out = entries(s.keys, s.capacity)[i];
    if (take) {
      if (__builtin_expect(s.held, 0)) log_update(s, key, &entries(s.keys, s.capacity)[i]);
      if (s.held) {
        s.keys[i] = kMoved;  // held: nothing moves (a tombstone until the next growth)
        ++s.tombs;
      } else {
        erase_shift(s.keys, s.capacity, i);
      }
      set_live(s, live_of(s) - 1);
    }
    return true;
  }
  uint64_t o = slot_of(s.old_keys, s.old_capacity, key, h);
  if (o == kNotFound) return false;
  if (out) *out = entries(s.old_keys, s.old_capacity)[o];
  if (take) {
    if (__builtin_expect(s.held, 0)) log_update(s, key, &entries(s.old_keys, s.old_capacity)[o]);
    s.old_keys[o] = kMoved;
    set_live(s, live_of(s) - 1);
  }
  return true;
}

}  // namespace gpumemrec
