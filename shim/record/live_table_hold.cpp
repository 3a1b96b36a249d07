// The hold: the live table handed over to the writer at an out-of-memory
// freeze instead of copied on the failing thread (live_table.h, "The hold";
// dump/capture/freeze.h). Copying 100,000 entries took the failing call
// 2-3 ms of CPU, and several times that in wall time on a busy machine
// (docs/performance.md, "The failing call"); a hold takes each home's lock
// once.
//
// What makes the later copy exact: from hold() until the writer has copied a
// home, every change to it first logs the entry its key had (an undo log,
// as a database's before-image), and no entry moves (a removal leaves a
// tombstone, the incremental move of a growing home pauses, a home that must
// grow is first copied by the updating thread: stash_home). So the writer
// can copy the home a chunk of slots at a time, each chunk under the lock,
// while the program goes on: an entry it read that changed is in the log,
// and each logged key is put back to what its first record says it was.
//
// Lifetime hazards: the log and a stash belong to the hold; a home's `log`,
// `stash` and `held` are read and written under its lock only, and the
// writer reads a log's records after clearing `held` (no record is added to
// it after that). The logs stay mapped between holds, their touched pages
// too (a program that fails and recovers every step would fault them in at
// each failure) until the writer's idle trim; a stash is unmapped by the
// writer that copied it (or the drop, or the forked child).
#include <sys/mman.h>

#include <algorithm>
#include <cstring>
#include <unordered_map>

#include "shim/record/live_table.h"

namespace gpumemrec {

namespace {

// Slots copied per lock by the writer: ~10 us of the home's lock at a time.
constexpr uint64_t kChunk = 1024;

size_t log_bytes() { return size_t(LiveTable::kHomes) * LiveTable::kLogSlots * sizeof(Undo); }

LiveEntry* map_entries(uint64_t n) {
  void* p = mmap(nullptr, std::max<uint64_t>(n, 1) * sizeof(LiveEntry), PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  return p == MAP_FAILED ? nullptr : static_cast<LiveEntry*>(p);
}
void unmap_entries(LiveEntry* p, uint64_t n) {
  if (p) munmap(p, std::max<uint64_t>(n, 1) * sizeof(LiveEntry));
}

// out[0, n) is a copy of a home taken while `log` was written: every key
// the log names is put back to its first record's entry (or left out), in
// out[0, room). The new count. The writer's thread: it may allocate.
uint64_t undo(LiveEntry* out, uint64_t n, uint64_t room, const Undo* log, uint32_t logged) {
  if (logged == 0) return n;
  std::unordered_map<uint64_t, uint32_t> first;  // key -> its earliest record
  first.reserve(logged);
  for (uint32_t i = 0; i < logged; ++i) first.emplace(log[i].before.key, i);
  uint64_t w = 0;
  for (uint64_t r = 0; r < n; ++r)
    if (!first.count(out[r].key)) out[w++] = out[r];
  for (const auto& [key, i] : first)
    if (log[i].present && w < room) out[w++] = log[i].before;
  return w;
}

}  // namespace

void LiveTable::log_update(Home& s, uint64_t key, const LiveEntry* before) {
  if (s.logged == kLogSlots) {
    stash_home(s);
    return;
  }
  Undo& u = s.log[s.logged++];
  if (before) {
    u.before = *before;
    u.present = 1;
  } else {
    u.before = LiveEntry{};
    u.before.key = key;
    u.present = 0;
  }
}

void LiveTable::stash_home(Home& s) {
  s.held = false;
  const uint64_t n = live_of(s);
  LiveEntry* copy = map_entries(n);
  if (!copy) {
    s.hold_lost = true;  // the writer copies the home as it is then
    return;
  }
  uint64_t k = 0;
  for_each_entry(s, [&](const LiveEntry& e) { copy[k++] = e; });
  s.stash = copy;
  s.stash_count = k;
}

bool LiveTable::hold() {
  bool expected = false;
  if (!holding_.compare_exchange_strong(expected, true, std::memory_order_acq_rel)) return false;
  if (!logs_) {
    void* p = mmap(nullptr, log_bytes(), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
      holding_.store(false, std::memory_order_release);
      return false;
    }
    logs_ = static_cast<Undo*>(p);
  }
  for (int j = 0; j < kHomes; ++j) {
    Home& s = homes_[j];
    SpinGuard g(s.lock);
    s.held = true;
    s.hold_lost = false;
    s.logged = 0;
    s.log = logs_ + size_t(j) * kLogSlots;
    s.held_live = live_of(s);
    s.stash = nullptr;
    s.stash_count = 0;
  }
  return true;
}

uint64_t LiveTable::held_bound() const {
  uint64_t n = kLogSlots;  // the home being copied: its entries at the hold and those it gained since
  for (const Home& s : homes_) n += s.held_live;  // written by hold(), before the caller's hand-over
  return n;
}

// Slots of the held home `s`, kChunk per lock, into out[n, cap): stops when
// the home is no longer held (an update stashed it) or out is full.
uint64_t LiveTable::copy_held_slots(Home& s, LiveEntry* out, uint64_t n, uint64_t cap) {
  for (int t = 0; t < 2; ++t) {
    for (uint64_t a = 0;; a += kChunk) {
      SpinGuard g(s.lock);
      if (!s.held) return n;
      uint64_t* keys = t == 0 ? s.keys : s.old_keys;  // neither changes while held
      const uint64_t capacity = t == 0 ? s.capacity : s.old_capacity;
      if (!keys || a >= capacity) break;
      const LiveEntry* vals = entries(keys, capacity);
      for (uint64_t i = a, end = std::min(a + kChunk, capacity); i < end; ++i)
        if (keys[i] != 0 && keys[i] != kMoved && n < cap) out[n++] = vals[i];
    }
  }
  return n;
}

uint64_t LiveTable::collect_home(Home& s, LiveEntry* out, uint64_t n, uint64_t cap) {
  const uint64_t start = n;
  n = copy_held_slots(s, out, n, cap);
  Undo* log;
  uint32_t logged;
  LiveEntry* stash;
  uint64_t stash_count;
  {
    SpinGuard g(s.lock);
    if (s.hold_lost) {  // no stash could be made: the home now, log undone (later changes stay)
      held_lost_.fetch_add(1, std::memory_order_relaxed);
      n = start;
      for_each_entry(s, [&](const LiveEntry& e) {
        if (n < cap) out[n++] = e;
      });
    }
    s.held = false;
    s.hold_lost = false;
    log = s.log;
    logged = s.logged;
    stash = s.stash;
    stash_count = s.stash_count;
    s.stash = nullptr;
    s.stash_count = 0;
    s.held_live = 0;
  }
  if (stash) {  // copied by an update: that copy, not the slots read around it
    n = start + std::min(stash_count, cap - start);
    std::memcpy(out + start, stash, size_t(n - start) * sizeof(LiveEntry));
    unmap_entries(stash, stash_count);
  }
  if (logged) {
    held_updates_.fetch_add(logged, std::memory_order_relaxed);
    n = start + undo(out + start, n - start, cap - start, log, logged);
    logs_dirty_ = true;  // its pages stay for the next hold (trim_hold_logs gives them back)
  }
  if (stash) held_stashes_.fetch_add(1, std::memory_order_relaxed);
  return n;
}

uint64_t LiveTable::collect_held(LiveEntry* out, uint64_t cap) {
  if (!holding_.load(std::memory_order_acquire)) return 0;
  int fullest = 0;  // first: keep_newer indexes the others
  for (int k = 1; k < kHomes; ++k)
    if (homes_[k].held_live > homes_[fullest].held_live) fullest = k;
  uint64_t n = 0, first = 0;
  for (int j = 0; j < kHomes; ++j) {
    n = collect_home(homes_[(fullest + j) % kHomes], out, n, cap);
    if (j == 0) first = n;
  }
  holding_.store(false, std::memory_order_release);
  SpinGuard one(snapshot_lock_);
  return keep_newer(out, first, n);
}

void LiveTable::drop_hold() {
  if (!holding_.load(std::memory_order_acquire)) return;
  for (Home& s : homes_) {
    LiveEntry* stash;
    uint64_t count;
    {
      SpinGuard g(s.lock);
      s.held = s.hold_lost = false;
      stash = s.stash;
      count = s.stash_count;
      s.stash = nullptr;
      s.stash_count = s.held_live = 0;
    }
    unmap_entries(stash, count);
  }
  holding_.store(false, std::memory_order_release);
}

void LiveTable::trim_hold_logs() {
  bool expected = false;
  if (!logs_ || !holding_.compare_exchange_strong(expected, true, std::memory_order_acq_rel)) return;
  if (logs_dirty_) madvise(logs_, log_bytes(), MADV_DONTNEED);
  logs_dirty_ = false;
  holding_.store(false, std::memory_order_release);
}

void LiveTable::forget_hold() {
  for (Home& s : homes_) {
    unmap_entries(s.stash, s.stash_count);
    s.held = s.hold_lost = false;
    s.stash = nullptr;
    s.stash_count = s.held_live = 0;
  }
  holding_.store(false, std::memory_order_relaxed);
}

}  // namespace gpumemrec
