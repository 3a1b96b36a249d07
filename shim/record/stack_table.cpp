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
  if (max_stacks == 0 || arena_bytes == 0) return false;
  uint64_t slots = 1;
  while (slots < uint64_t(max_stacks) * 2) slots <<= 1;
  index_slots_ = slots;
  index_bytes_ = slots * sizeof(std::atomic<uint32_t>);
  offsets_bytes_ = (uint64_t(max_stacks) + 1) * sizeof(std::atomic<uint64_t>);
  arena_bytes_ = arena_bytes < kChunkBytes * kMaxChunks ? arena_bytes : kChunkBytes * kMaxChunks;
  max_stacks_ = max_stacks;
  return true;
}

bool StackTable::map_tables() {
  if (tables_.load(std::memory_order_acquire)) return true;
  char* t = static_cast<char*>(reserve(index_bytes_ + offsets_bytes_));
  if (!t) return false;
  char* expected = nullptr;
  if (!tables_.compare_exchange_strong(expected, t, std::memory_order_acq_rel)) munmap(t, index_bytes_ + offsets_bytes_);
  return true;
}

char* StackTable::chunk(uint64_t c) {
  if (c >= uint64_t(kMaxChunks)) return nullptr;
  char* p = chunks_[c].load(std::memory_order_acquire);
  if (p) return p;
  p = static_cast<char*>(reserve(kChunkBytes));
  if (!p) return nullptr;
  char* expected = nullptr;
  if (!chunks_[c].compare_exchange_strong(expected, p, std::memory_order_acq_rel)) {
    munmap(p, kChunkBytes);
    p = expected;
  }
  return p;
}

// Claims `bytes` of the arena inside one chunk.
bool StackTable::append(uint64_t bytes, uint64_t* off, char** at) {
  for (;;) {
    uint64_t o = arena_used_.fetch_add(bytes, std::memory_order_relaxed);
    if (o + bytes > arena_bytes_) return false;
    if (o / kChunkBytes != (o + bytes - 1) / kChunkBytes) continue;  // would straddle: leave the tail
    char* base = chunk(o / kChunkBytes);
    if (!base) return false;
    *off = o;
    *at = base + o % kChunkBytes;
    return true;
  }
}

uint64_t StackTable::reserved_bytes() const {
  uint64_t n = tables_.load(std::memory_order_acquire) ? index_bytes_ + offsets_bytes_ : 0;
  for (const auto& c : chunks_)
    if (c.load(std::memory_order_relaxed)) n += kChunkBytes;
  return n;
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
  char* t = tables_.load(std::memory_order_acquire);
  if (id == 0 || id > max_stacks_ || !t) return nullptr;
  uint64_t off = offsets(t)[id].load(std::memory_order_acquire);
  if (off == 0) return nullptr;
  --off;
  const char* base = chunks_[off / kChunkBytes].load(std::memory_order_acquire);
  return base ? reinterpret_cast<const Record*>(base + off % kChunkBytes) : nullptr;
}

uint32_t StackTable::intern(const uint64_t* frames, uint32_t n) {
  if (n == 0 || max_stacks_ == 0) return 0;
  if (!tables_.load(std::memory_order_acquire) && !map_tables()) return kFull;
  char* const t = tables_.load(std::memory_order_acquire);
  std::atomic<uint32_t>* const index_ = index(t);
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
      uint64_t off = 0;
      char* at = nullptr;
      if (!append(bytes, &off, &at)) return kFull;
      auto* rec = reinterpret_cast<Record*>(at);
      rec->hash = h;
      rec->n = n;
      std::memcpy(rec->frames, frames, n * sizeof(uint64_t));
      offsets(t)[new_id].store(off + 1, std::memory_order_release);
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
