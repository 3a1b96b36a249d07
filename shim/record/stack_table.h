// Stack interning: a stack (an array of 64-bit frame words) is stored once
// and events carry only its 32-bit id.
//
// Lock-free: a fixed open-addressing index of atomic ids over an append-only
// arena that is reserved once (mmap, MAP_NORESERVE; pages become resident
// only as stacks are added). Lookups of a known stack take no lock and write
// nothing shared; a new stack is appended with one fetch_add on the arena and
// published with one compare-and-swap on its index slot. Two threads adding
// the same new stack at once may both append it; one id wins the slot, the
// other record is simply never found again (a few bytes lost, never a wrong
// answer).
//
// Frame words: a native frame is its return address; Python frames (see
// python_stack.h) have the top bit set.
#pragma once
#include <atomic>
#include <cstdint>

namespace gpumemrec {

class StackTable {
 public:
  static constexpr uint32_t kFull = 0xFFFFFFFFu;  // id returned when the table is full

  // max_stacks distinct stacks; arena_bytes for their frames. False if the
  // memory could not be reserved (then intern() returns 0: "no stack").
  bool init(uint32_t max_stacks, uint64_t arena_bytes);
  ~StackTable();

  // 0 for an empty stack, kFull when out of room, else an id >= 1.
  uint32_t intern(const uint64_t* frames, uint32_t n);
  // The frames of a known id (valid for the process lifetime).
  bool get(uint32_t id, const uint64_t** frames, uint32_t* n) const;

  uint32_t count() const { return next_id_.load(std::memory_order_acquire) - 1; }
  uint64_t arena_used() const { return arena_used_.load(std::memory_order_relaxed); }
  uint64_t reserved_bytes() const { return index_bytes_ + arena_bytes_ + offsets_bytes_; }

  static uint64_t hash(const uint64_t* frames, uint32_t n);

 private:
  struct Record {
    uint64_t hash;
    uint32_t n;
    uint32_t pad;
    uint64_t frames[1];
  };
  const Record* record(uint32_t id) const;

  std::atomic<uint32_t>* index_ = nullptr;   // slot -> id
  std::atomic<uint64_t>* offsets_ = nullptr; // id -> arena offset + 1 (0 = not yet published)
  char* arena_ = nullptr;
  uint64_t index_slots_ = 0, index_bytes_ = 0, offsets_bytes_ = 0, arena_bytes_ = 0;
  uint32_t max_stacks_ = 0;
  std::atomic<uint64_t> arena_used_{0};
  std::atomic<uint32_t> next_id_{1};
};

}  // namespace gpumemrec
