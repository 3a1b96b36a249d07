// Stack interning: a stack (an array of 64-bit frame words) is stored once
// and events carry only its 32-bit id.
//
// Lock-free: a fixed open-addressing index of atomic ids over an append-only
// arena. Nothing is reserved until the first stack is interned (a process
// that never records a stack pays no address space); the index is then
// mapped once, and the arena grows on demand in chunks of kChunkBytes
// (mmap, MAP_NORESERVE; the thread that maps a chunk publishes it with a
// compare-and-swap, a loser unmaps its copy). A record never straddles two
// chunks: the tail of a chunk that cannot hold the next record stays unused. Lookups of a known stack take no lock and write
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

  static constexpr uint64_t kChunkBytes = 4ull << 20;
  static constexpr int kMaxChunks = 64;  // arena at most 256 MiB

  // max_stacks distinct stacks; at most arena_bytes for their frames.
  // Reserves nothing yet. When memory cannot be had later, intern() answers
  // kFull ("no stack") for the stacks that do not fit.
  bool init(uint32_t max_stacks, uint64_t arena_bytes);
  ~StackTable();

  // 0 for an empty stack, kFull when out of room, else an id >= 1.
  uint32_t intern(const uint64_t* frames, uint32_t n);
  // The frames of a known id (valid for the process lifetime).
  bool get(uint32_t id, const uint64_t** frames, uint32_t* n) const;

  uint32_t count() const { return next_id_.load(std::memory_order_acquire) - 1; }
  uint64_t arena_used() const { return arena_used_.load(std::memory_order_relaxed); }
  // Address space mapped so far (index + arena chunks).
  uint64_t reserved_bytes() const;

  static uint64_t hash(const uint64_t* frames, uint32_t n);

 private:
  struct Record {
    uint64_t hash;
    uint32_t n;
    uint32_t pad;
    uint64_t frames[1];
  };
  const Record* record(uint32_t id) const;
  bool map_tables();                 // index + offsets, on first use
  char* chunk(uint64_t c);           // arena chunk c, mapped on first use
  bool append(uint64_t bytes, uint64_t* off, char** at);

  // One mapping: the index (slot -> id), then the offsets (id -> arena
  // offset + 1, 0 = not yet published).
  std::atomic<char*> tables_{nullptr};
  std::atomic<uint32_t>* index(char* t) const { return reinterpret_cast<std::atomic<uint32_t>*>(t); }
  std::atomic<uint64_t>* offsets(char* t) const {
    return reinterpret_cast<std::atomic<uint64_t>*>(t + index_bytes_);
  }
  std::atomic<char*> chunks_[kMaxChunks] = {};
  uint64_t index_slots_ = 0, index_bytes_ = 0, offsets_bytes_ = 0, arena_bytes_ = 0;
  uint32_t max_stacks_ = 0;
  std::atomic<uint64_t> arena_used_{0};
  std::atomic<uint32_t> next_id_{1};
};

}  // namespace gpumemrec
