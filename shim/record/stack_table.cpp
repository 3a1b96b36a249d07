#include "shim/record/stack_table.h"

#include <sys/mman.h>

#include <cstddef>
#include <cstring>

namespace gpumemrec {

namespace {

void* reserve(uint64_t bytes) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  return p == MAP_FAILED ? nullptr : p;
}

}  // namespace

bool StackTable::init(uint32_t max_stacks, uint64_t arena_bytes) {
  uint64_t slots = 1;
  while (slots < uint64_t(max_stacks) * 2) slots <<= 1;
  index_bytes_ = slots * sizeof(std::atomic<uint32_t>);
  offsets_bytes_ = (uint64_t(max_stacks) + 1) * sizeof(std::atomic<uint64_t>);
  index_ = static_cast<std::atomic<uint32_t>*>(reserve(index_bytes_));
  offsets_ = static_cast<std::atomic<uint64_t>*>(reserve(offsets_bytes_));
  // Shrink the arena until the reservation fits (RLIMIT_AS, small hosts).
  for (uint64_t a = arena_bytes; a >= (1u << 20) && !arena_; a /= 2) {
    arena_ = static_cast<char*>(reserve(a));
    if (arena_) arena_bytes_ = a;
  }
  if (!index_ || !offsets_ || !arena_) return false;
  index_slots_ = slots;
  max_stacks_ = max_stacks;
  return true;
}

StackTable::~StackTable() {
  // Deliberately not unmapped: threads may still intern during exit.
}

uint64_t StackTable::hash(const uint64_t* frames, uint32_t n) {
  // Four independent lanes (frame i goes to lane i % 4), folded at the end:
  // one lane's multiply-xorshift chain over a 32-frame stack is serial
  // (~6 cycles a frame) and was most of intern()'s cost on the hot path.
  constexpr uint64_t kMul = 0xff51afd7ed558ccdull;
  uint64_t h0 = 0x9E3779B97F4A7C15ull ^ n, h1 = 0xC2B2AE3D27D4EB4Full, h2 = 0x165667B19E3779F9ull,
           h3 = 0x27D4EB2F165667C5ull;
  uint32_t i = 0;
  for (; i + 4 <= n; i += 4) {
    h0 ^= frames[i];
    h1 ^= frames[i + 1];
    h2 ^= frames[i + 2];
    h3 ^= frames[i + 3];
    h0 *= kMul;
    h1 *= kMul;
    h2 *= kMul;
    h3 *= kMul;
    h0 ^= h0 >> 32;
    h1 ^= h1 >> 32;
    h2 ^= h2 >> 32;
    h3 ^= h3 >> 32;
  }
  for (; i < n; ++i) {
    h0 ^= frames[i];
    h0 *= kMul;
    h0 ^= h0 >> 32;
  }
  const uint64_t lanes[3] = {h1, h2, h3};
  uint64_t h = h0;
  for (uint64_t lane : lanes) {
    h ^= lane;
    h *= kMul;
    h ^= h >> 32;
  }
  return h ? h : 1;
}

const StackTable::Record* StackTable::record(uint32_t id) const {
  if (id == 0 || id > max_stacks_) return nullptr;
  uint64_t off = offsets_[id].load(std::memory_order_acquire);
  if (off == 0) return nullptr;
  return reinterpret_cast<const Record*>(arena_ + off - 1);
}

uint32_t StackTable::intern(const uint64_t* frames, uint32_t n) {
  if (n == 0 || !arena_) return 0;
  const uint64_t h = hash(frames, n);
  const uint64_t mask = index_slots_ - 1;
  uint64_t i = h & mask;
  for (uint64_t probes = 0; probes < index_slots_; ++probes, i = (i + 1) & mask) {
    uint32_t id = index_[i].load(std::memory_order_acquire);
    if (id == 0) {
      // Not present: append a record, then try to claim this slot.
      uint32_t new_id = next_id_.fetch_add(1, std::memory_order_relaxed);
      if (new_id > max_stacks_) {
        next_id_.store(max_stacks_ + 1, std::memory_order_relaxed);
        return kFull;
      }
      uint64_t bytes = (offsetof(Record, frames) + n * sizeof(uint64_t) + 7) & ~uint64_t(7);
      uint64_t off = arena_used_.fetch_add(bytes, std::memory_order_relaxed);
      if (off + bytes > arena_bytes_) return kFull;
      auto* rec = reinterpret_cast<Record*>(arena_ + off);
      rec->hash = h;
      rec->n = n;
      std::memcpy(rec->frames, frames, n * sizeof(uint64_t));
      offsets_[new_id].store(off + 1, std::memory_order_release);
      uint32_t expected = 0;
      if (index_[i].compare_exchange_strong(expected, new_id, std::memory_order_acq_rel)) return new_id;
      id = expected;  // someone else took the slot: compare with theirs
    }
    const Record* r = record(id);
    if (r && r->hash == h && r->n == n && std::memcmp(r->frames, frames, n * sizeof(uint64_t)) == 0) return id;
  }
  return kFull;
}

bool StackTable::get(uint32_t id, const uint64_t** frames, uint32_t* n) const {
  const Record* r = record(id);
  if (!r) return false;
  *frames = r->frames;
  *n = r->n;
  return true;
}

}  // namespace gpumemrec
