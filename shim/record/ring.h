// The bounded ring of the most recent events: fixed memory (capacity * 64
// bytes per buffer, mapped at start-up), no lock.
//
// Writers take a sequence number from their thread's block (below: one
// fetch_add per block of seqs) and fill the slot seq % capacity under a
// per-slot seqlock: the slot's seq word is kBusy
// while it is written (taken with a compare-and-swap, so two writers that
// wrapped onto one slot never interleave) and the event's seq once complete. The dumper copies a slot and
// keeps it only if the seq word read before and after the copy is the one it
// expects; a slot that was overwritten, is being written or was never used
// (an unused seq of a block) is a hole (docs/bundle-format.md).
// All accesses to slot words are atomic (relaxed, ordered by fences) so the
// ring is data-race free under ThreadSanitizer.
//
// Buffers and generations (the freeze hands a buffer over instead of copying
// it, shim/dump/capture/freeze.h). The ring has up to kMaxBuffers buffers of
// `capacity` slots; one is live. The claim counter carries, above the
// sequence number, an 8-bit generation: swap_to() bumps it with one
// compare-and-swap, so every claim is ordered against the swap by the
// counter itself: a claim before it got the old generation, a claim after it
// the new one, and the cut (the first seq of the new generation) has no gap
// and no overlap. A generation's buffer is in gen_buf_, written before the
// swap's release; the claim's acquire makes it visible to the writer. So a
// writer always fills its slot in the buffer of the generation it claimed
// in, however late it publishes: a thread preempted between claim() and
// publish() across a swap still writes into the buffer that was handed over
// (the reader's seqlock sees that slot busy or complete, never torn).
//
// Event seq lives in buffer(gen(seq)) at slot seq % capacity, whatever other
// generations wrote into that buffer before or after: two seqs of one window
// of `capacity` consecutive seqs never share a slot, so a window's events
// are intact in their buffers until a seq `capacity` newer is written into
// the same buffer. Buffers are never unmapped (a late writer may still hold
// a pointer); a buffer reused by a newer generation only ever gets newer seqs
// (take_slot's "a newer event owns it" rule still holds). Lifetime hazard: a
// writer preempted across kGens / 2 swaps finds its generation's table entry
// reused and may write its event into another buffer; its seq does not match
// what a reader expects at that slot there, so the event is a hole, nothing
// is torn (a reader only accepts a slot whose seq word is the one it wants).
//
// Blocks (the recorder's claims): a thread takes kBlock consecutive seqs
// with one fetch_add and hands them out to its own events from
// thread-local state (claim(Block*)), so the claim counter is written once
// per block, not once per event, and a thread's events fill consecutive
// slots: cache lines that no other thread writes (with one counter, the two
// cores wrote neighbouring slots in turn). Seq is then unique, and
// increasing within a thread, but NOT time order across threads: a bundle
// sorts its window by time (shim/dump/capture/dump_snapshot.cpp).
// Lifetime of a block (what may happen between two events of a thread):
//  - the ring is swapped (a freeze): the block belongs to the generation it
//    was claimed in; the thread's next claim sees the generation changed
//    (gen_now_, written only by swap_to) and drops the rest of its block,
//    so after a swap nobody writes a new event into the handed-over buffer
//    beyond the one each thread may have in flight (as with single claims);
//  - the thread is quiet while others record: a block that fell below the
//    floor (a sixteenth of the ring behind the newest claims) is dropped, so
//    a thread never writes an event far older in seq than its time, and a
//    dump can tell from when its window holds every event (claim_marks.h:
//    the freshness rule, and the marks that let the dump cut its window by
//    time);
//  - fork: the child's thread keeps its block (the seqs are its own in the
//    child's copy of the ring; the parent's thread uses the same seqs in
//    the parent's ring); other threads' blocks are holes in the child;
//  - the unused seqs of a dropped block, and of the block each thread holds
//    at a cut, are holes in the window (seq gaps, not lost events).
//
// fork: a thread of the parent may have been between taking a slot and
// completing it; in the child that thread does not exist and the slot would
// stay busy for ever (the next writer on it would spin for ever). The busy
// word therefore carries the process's fork epoch (after_fork_in_child()
// advances it): a writer that finds a slot busy under another epoch knows
// its owner is gone and takes the slot over. No scan, no cost when no fork
// happened.
#pragma once
#include <sched.h>

#include <atomic>
#include <cstdint>
#include <cstring>

#include "common/event.h"
#include "shim/record/claim_marks.h"

namespace gpumemrec {

class Ring {
 public:
  static constexpr int kMaxBuffers = 4;
  static constexpr unsigned kGens = 256;  // generations remembered (the counter's top 8 bits)
  struct Ticket {
    uint64_t seq;
    unsigned gen;
  };
  // A run of consecutive seqs [from, to) that lives in one buffer.
  struct Segment {
    int buffer;
    uint64_t from, to;
  };

  Ring() {
    for (unsigned g = 0; g < kGens; ++g) gen_first_[g].store(UINT64_MAX, std::memory_order_relaxed);
    gen_first_[0].store(1, std::memory_order_relaxed);
  }
  // `memory` must hold capacity * sizeof(Event) zeroed bytes: buffer 0, live.
  void init(void* memory, uint64_t capacity) {
    capacity_ = capacity;
    block_ = capacity / 64 < kBlock ? (capacity / 64 ? capacity / 64 : 1) : kBlock;
    marks_.init(capacity, block_);
    bufs_[0].store(static_cast<Event*>(memory), std::memory_order_release);
    nbufs_.store(1, std::memory_order_release);
  }
  // Another buffer for swap_to (the same size, zeroed). Its index, or -1
  // when kMaxBuffers are there. Callers serialise add_buffer and swap_to.
  int add_buffer(void* memory) {
    const int n = nbufs_.load(std::memory_order_relaxed);
    if (n >= kMaxBuffers || !memory) return -1;
    bufs_[n].store(static_cast<Event*>(memory), std::memory_order_release);
    nbufs_.store(n + 1, std::memory_order_release);
    return n;
  }
  int buffers() const { return nbufs_.load(std::memory_order_acquire); }
  Event* buffer(int i) const { return bufs_[i].load(std::memory_order_acquire); }
  uint64_t capacity() const { return capacity_; }
  bool ready() const { return buffer(0) != nullptr; }

  // A thread's block of seqs (thread-local in the recorder: plain data, all
  // zero = empty). See "Blocks" above.
  struct Block {
    uint64_t next, end;  // seqs [next, end) not handed out yet
    unsigned gen;        // the generation they were claimed in
  };
  static constexpr uint64_t kBlock = 64;
  // Seqs per block: kBlock, fewer for a small ring (a window loses at most
  // one block per recording thread: 1/64 of the ring at most per thread).
  uint64_t block_size() const { return block_; }

  // The next seq of this thread's block, or a new block (one fetch_add on
  // the claim counter per block_size() events). A block is dropped (its
  // unused seqs become holes) when the ring was swapped since it was
  // claimed or when it fell below the floor (claim_marks.h). The two words
  // read here are written only at a swap and once per capacity/64 claims:
  // every thread keeps them in its cache.
  Ticket claim(Block* b) {
    if (b->next < b->end && block_fresh(*b)) return Ticket{b->next++, b->gen};
    return refill(b);
  }

  // The moment from which a window starting at `lo` holds every event
  // (claim_marks.h, rule 2); 0: from its first event.
  uint64_t complete_from(uint64_t lo) const { return marks_.complete_from(lo); }
  uint64_t lag() const { return marks_.lag(); }
  uint64_t floor() const { return marks_.floor(); }

  // One seq (tests, and whoever needs no block): the acquire pairs with the
  // swap that made this generation, which published its buffer first.
  Ticket claim() {
    const uint64_t w = next_.fetch_add(1, std::memory_order_acquire);
    return Ticket{w & kSeqMask, unsigned(w >> kGenShift)};
  }
  // One past the newest claimed sequence number.
  uint64_t end() const { return next_.load(std::memory_order_acquire) & kSeqMask; }
  unsigned live_gen() const { return unsigned(next_.load(std::memory_order_acquire) >> kGenShift); }
  int live_buffer() const { return gen_buf_[live_gen()].load(std::memory_order_relaxed); }

  void publish(const Event& e, unsigned gen) { commit(take_slot(e.seq, gen), e); }
  // Completes a slot taken with take_slot (nothing when it was refused).
  // The recorder takes its slot as soon as it has the seq and commits once
  // the event is filled in (recorder.cpp): the slot is busy meanwhile, so a
  // dump that copies the window waits for an event in flight instead of
  // taking its slot for an unused seq of a block.
  void commit(uint64_t* dst, const Event& e) {
    if (!dst) return;
    uint64_t src[8];
    std::memcpy(src, &e, sizeof src);
    std::atomic_thread_fence(std::memory_order_release);
    for (int i = 1; i < 8; ++i) __atomic_store_n(&dst[i], src[i], __ATOMIC_RELAXED);
    __atomic_store_n(&dst[0], src[0], __ATOMIC_RELEASE);
  }

  // Takes the slot of `seq` (claimed in generation `gen`) for writing (marks
  // it busy); nullptr when a newer event owns it. Only one writer at a time
  // may fill a slot. A writer that was preempted between claim() and here
  // can find the slot already reused by an event `capacity` newer; it then
  // drops its own (older) event rather than tear or overwrite the newer one.
  // Public for the fork test.
  uint64_t* take_slot(uint64_t seq, unsigned gen) {
    uint64_t* dst = words(gen_buf_[gen % kGens].load(std::memory_order_relaxed), seq);
    const uint64_t busy = kBusyBit | epoch_.load(std::memory_order_relaxed);
    uint64_t cur = __atomic_load_n(&dst[0], __ATOMIC_RELAXED);
    for (int spins = 0;; ++spins) {
      if ((cur & kBusyBit) && cur == busy) {  // another thread of this process is writing it
        if (spins > 64) sched_yield();
        cur = __atomic_load_n(&dst[0], __ATOMIC_RELAXED);
        continue;
      }
      // Busy under an older epoch: its writer was a thread of the parent at
      // a fork and will never finish; take the slot over.
      if (!(cur & kBusyBit) && cur > seq) return nullptr;  // a newer event owns the slot
      if (__atomic_compare_exchange_n(&dst[0], &cur, busy, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) return dst;
    }
  }

  // Copies event `seq` of buffer `buffer` into *out; false if the slot no
  // longer (or not yet) holds it.
  bool read_in(int buffer, uint64_t seq, Event* out) const {
    const uint64_t* src = words(buffer, seq);
    uint64_t w[8];
    w[0] = __atomic_load_n(&src[0], __ATOMIC_ACQUIRE);
    if (w[0] != seq) return false;
    for (int i = 1; i < 8; ++i) w[i] = __atomic_load_n(&src[i], __ATOMIC_RELAXED);
    std::atomic_thread_fence(std::memory_order_acquire);
    if (__atomic_load_n(&src[0], __ATOMIC_RELAXED) != seq) return false;
    std::memcpy(out, w, sizeof w);
    return true;
  }
  // True while a thread of this process holds the slot of `seq` in
  // `buffer` busy (from take_slot to commit: the recorder takes it with the
  // seq, so this covers filling in the event and the live-table update).
  bool writing_in(int buffer, uint64_t seq) const {
    return __atomic_load_n(words(buffer, seq), __ATOMIC_RELAXED) == (kBusyBit | epoch_.load(std::memory_order_relaxed));
  }
  // True when a newer event owns the slot of `seq` in `buffer` (`seq` was
  // overwritten: lost to a reader that comes now).
  bool overwritten_in(int buffer, uint64_t seq) const {
    const uint64_t w = __atomic_load_n(words(buffer, seq), __ATOMIC_RELAXED);
    return !(w & kBusyBit) && w > seq;
  }
  // The same, wherever `seq` lives (one walk of the generations per call:
  // for a few events; a window is read by segments()).
  bool read(uint64_t seq, Event* out) const {
    Segment s;
    return segments(seq, seq + 1, &s, 1) == 1 && read_in(s.buffer, seq, out);
  }

  // The buffers holding [lo, hi), newest first, into out[0..max): walks the
  // generations back from the live one. Stops early (the older seqs are not
  // covered) where the table no longer remembers a generation (more than
  // kGens / 2 swaps ago) or at `max` segments. Returns the count; the last
  // segment's `from` is where the covered part starts.
  int segments(uint64_t lo, uint64_t hi, Segment* out, int max) const {
    const uint64_t w = next_.load(std::memory_order_acquire);
    unsigned g = unsigned(w >> kGenShift);
    uint64_t top = w & kSeqMask;  // one past the newest seq of generation g
    int n = 0;
    for (unsigned walked = 0; walked < kGens / 2 && n < max && hi > lo; ++walked, g = (g + kGens - 1) % kGens) {
      const uint64_t first = gen_first_[g].load(std::memory_order_relaxed);
      if (first > top) break;  // not a generation of this era
      if (first < hi && top > lo && first < top) {  // an empty generation (two swaps in a row) adds nothing
        const uint64_t to = top < hi ? top : hi;
        out[n++] = Segment{gen_buf_[g].load(std::memory_order_relaxed), first > lo ? first : lo, to};
      }
      if (first <= lo) break;
      top = first;
    }
    return n;
  }

  // Makes `buffer` live: the next claims get a new generation that fills it.
  // Returns the cut: the first seq of the new generation (every seq before
  // it was claimed in an older one). One swap at a time (the caller holds
  // the freeze lock); the hot path never waits for it.
  uint64_t swap_to(int buffer) {
    uint64_t w = next_.load(std::memory_order_relaxed);
    for (;;) {
      const unsigned g = (unsigned(w >> kGenShift) + 1) % kGens;
      // Written before the release below; rewritten on every retry, so the
      // successful compare-and-swap publishes exactly its own cut.
      gen_buf_[g].store(buffer, std::memory_order_relaxed);
      gen_first_[g].store(w & kSeqMask, std::memory_order_relaxed);
      if (next_.compare_exchange_weak(w, w + (uint64_t(1) << kGenShift), std::memory_order_acq_rel,
                                      std::memory_order_relaxed)) {
        gen_now_.store(g, std::memory_order_relaxed);  // blocks of older generations are dropped
        return w & kSeqMask;
      }
    }
  }

  // In the child of a fork (one thread, in the atfork child handler): slots
  // that other threads were writing at the fork become holes, and the next
  // writer on one of them takes it over (see the epoch above).
  void after_fork_in_child() { epoch_.fetch_add(1, std::memory_order_relaxed); }

 private:
  // Sequence numbers start at 1 and stay far below 2^56 (at 100M events a
  // second, 22 years); the busy bit is the slot word's top bit.
  static constexpr uint64_t kBusyBit = uint64_t(1) << 63;
  static constexpr unsigned kGenShift = 56;
  static constexpr uint64_t kSeqMask = (uint64_t(1) << kGenShift) - 1;
  // A block is fresh while its generation is the live one (or newer: a
  // block claimed between the swap's compare-and-swap and its gen_now_
  // store) and it is not below the floor.
  bool block_fresh(const Block& b) const {
    const unsigned behind = (gen_now_.load(std::memory_order_relaxed) - b.gen) % kGens;
    if (behind != 0 && behind < kGens / 2) return false;
    return marks_.fresh(b.next);
  }
  Ticket refill(Block* b) {
    const uint64_t w = next_.fetch_add(block_, std::memory_order_acquire);
    const uint64_t first = w & kSeqMask;
    b->gen = unsigned(w >> kGenShift);
    b->next = first + 1;
    b->end = first + block_;
    marks_.on_claim(b->end);
    return Ticket{first, b->gen};
  }
  uint64_t* words(int buffer, uint64_t seq) const {
    return reinterpret_cast<uint64_t*>(&bufs_[buffer].load(std::memory_order_relaxed)[seq % capacity_]);
  }

  std::atomic<Event*> bufs_[kMaxBuffers] = {};
  std::atomic<int> nbufs_{0};
  uint64_t capacity_ = 0;
  uint64_t block_ = 1;
  // Per generation (index gen % kGens): its buffer and its first seq
  // (UINT64_MAX: never used). Written only by swap_to.
  std::atomic<int> gen_buf_[kGens] = {};
  std::atomic<uint64_t> gen_first_[kGens];
  // The claim counter, written by every claim, and the fork epoch, read by
  // every take_slot and written only in a fork child, each on its own pair
  // of cache lines (128 bytes: the adjacent-line prefetcher fetches lines in
  // pairs): on one line, every claim by one thread invalidated the epoch in
  // every other thread's cache (false sharing, ~13% of the hot path's
  // samples with two threads really running at once, docs/performance-log.md).
  alignas(128) std::atomic<uint64_t> next_{1};  // generation << 56 | next seq
  alignas(128) std::atomic<uint64_t> epoch_{0};  // the fork epoch (see above)
  // Read by every claim(Block*), written only at a swap (see Blocks above).
  alignas(128) std::atomic<unsigned> gen_now_{0};  // the live generation
  ClaimMarks marks_;  // the floor and the marks (own lines; claim_marks.h)
};

}  // namespace gpumemrec
