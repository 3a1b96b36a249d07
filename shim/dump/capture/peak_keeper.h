// The peak keeper: a background thread that tails the ring and replays its
// events in time order (peak_replay.h), so that every bundle (exit, signal,
// out-of-memory) can say each device's exact high-water mark and what was
// live then, without any shared counter on the hot path (docs/design.md,
// "The peak").
//
// What it reads. Seqs below the ring's floor (claim_marks.h, rule 1) are
// never handed out again: each is written, being written (waited for, as a
// freeze does: copy_ring_events), or a hole for good. The keeper reads
// [cursor, floor) and moves its cursor there; the newest lag + step seqs
// wait for the next pass (or for the bundle, below).
//
// Time order. Seq is not time order across threads (ring.h, "Blocks"), so
// read events wait in `pending` and are replayed only up to a horizon that
// no unread event can precede: at moment m the keeper notes end() = E; an
// unread seq (>= cursor) comes from a block that starts at or above
// cursor - block + 1, so once cursor >= E + block - 1 that block was claimed
// after m and its event's time was read after m - kSlackNs (an event's time
// is taken just before its seq is handed out: after the real call for an
// allocation; for a free, before the real free, which can wait for the
// device: cudaFree synchronizes). Events at or before m - kSlackNs are then
// all read. One that still comes later (a free or a preemption longer than
// kSlackNs) is replayed at once and counted `late`: the peak is then not
// exact. Pending is bounded (kPendingPerRing rings of events): past that the
// oldest are replayed anyway (a later event older than them is late).
//
// Exactness. The peak is exact while the keeper read every seq before the
// ring reused its slot and nothing came late. At the first seq lost the
// replay from the run's start ends: what it replayed until then is exact,
// so its peak is a true lower bound of the run's (peak_finish.h). A bundle
// replays its pending events and the window's seqs from the cursor on,
// after the horizon, on a copy (peak_finish.h).
//
// Gaps. A pass that loses seqs opens a gap: what it read is dropped, and
// the keeper goes on from its new cursor b (every seq from b on is still
// read). It resumes at the moment T the ring's marks give for b
// (Ring::complete_from, claim_marks.h rule 2: every event at or after T has
// a seq >= b), once a mark says so: until then it reads into pending and
// replays nothing; then it drops what is older than T and replays the rest,
// in time order, into a replay anchored at T (peak_replay.h). An event older
// than T that still comes is part of the gap (dropped, not late). A later
// loss opens a new gap (the anchored replay starts again: only the one
// since the last gap can be anchored, on the live set at the cut). So a
// bundle says the peak since T exactly, and the run's peak as a lower bound
// (peak_finish.h).
//
// Holds. A freeze holds the keeper until its bundle is written
// (freeze_done releases): it goes on reading into pending (up to its bound)
// but replays nothing and keeps its horizon, which is before the moment its
// pass began, and so before the cut. The bundle's copy is then the state at
// a moment before the cut; its pending events after the cut are left out.
//
// Wake-ups: no signal from the hot path. The keeper sleeps between passes,
// as long as an eighth of the ring takes at the rate it last saw, between
// kMinPeriodNs and kMaxPeriodNs; after passes that read nothing it backs
// off, doubling, to kIdlePeriodNs: an idle program costs twenty wake-ups a
// second (docs/performance.md). A burst that fills more than the ring
// within one sleep (the default ring: 65,536 events within 50 ms of an
// idle pause, 10 ms once busy) is lost to it (exact: false, said).
#pragma once
#include <atomic>
#include <cstdint>
#include <vector>

#include "common/event.h"
#include "shim/dump/capture/peak_replay.h"
#include "shim/record/ring.h"

namespace gpumemrec {

struct Recorder;

constexpr uint64_t kSlackNs = 100000000ull;      // 100 ms
constexpr uint64_t kPendingPerRing = 4;
constexpr uint64_t kMinPeriodNs = 1000000ull;    // 1 ms
constexpr uint64_t kMaxPeriodNs = 10000000ull;   // 10 ms
constexpr uint64_t kIdlePeriodNs = 50000000ull;  // 50 ms

// The replay since the last gap (see Gaps).
struct PeakAfterGap {
  uint64_t from_seq = 0;  // every seq from it on was read (or is pending)
  uint64_t from_ns = 0;   // T (CLOCK_MONOTONIC); 0: no mark has said it yet
  PeakReplay replay;      // anchored at T once it is known
  uint64_t late = 0;      // events at or after T that came after the horizon had passed them
};

// What a bundle copies.
struct PeakKept {
  PeakReplay replay;        // from the run's start, until the first gap
  uint64_t cursor = 1;      // seqs below it were read
  uint64_t horizon_ns = 0;  // events at or before it (CLOCK_MONOTONIC) are replayed
  uint64_t lost = 0;        // seqs overwritten (or still being written) when read
  uint64_t late = 0;        // events that came after the horizon had passed them (before any gap)
  const char* broken = nullptr;  // why the state cannot be trusted (a fork mid-update)
  std::vector<Event> pending;    // read, after the horizon, in time order, from pending_from on
  size_t pending_from = 0;       // those before it are replayed
  uint64_t gaps = 0;             // gaps opened (see Gaps)
  PeakAfterGap after;            // the last gap's, when gaps != 0
  bool stopped() const { return lost != 0 || broken != nullptr; }
  bool resuming() const { return gaps != 0 && after.from_ns == 0; }  // waiting for T
};

// Opens a gap at `cursor` (pending is dropped), or records why the state is
// broken and opens one (`why` not null: a fork mid-pass, out of memory).
void peak_open_gap(PeakKept* k, const char* why = nullptr);
// Resumes at T = `from_ns` (>0): pending events older than it are dropped.
void peak_resume_at(PeakKept* k, uint64_t from_ns);
// One event to the replay it belongs to (none: an event of a gap).
void peak_apply(PeakKept* k, const Event& e);

// The keeper's own state (its thread only, and tests).
struct PeakTail {
  PeakKept kept;
  std::vector<Event> scratch;
  struct Seen {
    uint64_t mono_ns, end;
  };
  static constexpr int kSeen = 64;
  Seen seen[kSeen];
  int seen_count = 0;
};

// One pass at moment `now_ns`: read what is settled, replay up to the new
// horizon (`hold`: read only). Returns the seqs read.
uint64_t peak_tail_step(const Ring& ring, PeakTail* t, uint64_t now_ns, bool hold = false);
// The next sleep after a pass that read `read` seqs in `elapsed_ns` (the
// last sleep was `last_period_ns`).
uint64_t peak_keeper_period(uint64_t capacity, uint64_t read, uint64_t elapsed_ns, uint64_t last_period_ns);

// What else the keeper's thread does after each pass: the status region
// (shim/dump/status/status_publisher.h). `locked` runs with the pass lock
// held and the state as the pass left it (fast: no file, no symbol);
// `after` once the lock is released. Set before peak_keeper_start.
struct PeakPassHooks {
  void (*locked)(const PeakKept& kept, uint64_t now_ns) = nullptr;
  void (*after)(uint64_t now_ns) = nullptr;
};
void peak_keeper_set_pass_hooks(PeakPassHooks hooks);

// From start-up (lifecycle.cpp): the thread. False when it cannot start.
bool peak_keeper_start(Recorder* r);
bool peak_keeper_running();
// A freeze: replay nothing new until released (counted: one per freeze).
void peak_keeper_hold();
void peak_keeper_release();
// A copy of the state for a bundle; false when no keeper runs.
bool peak_keeper_copy(PeakKept* out);
void peak_keeper_atfork_child();
// fork under AddressSanitizer: GCC 12's ASan allocator has no fork handler
// (glibc's malloc locks its arenas around fork; ASan's size-class locks are
// not taken), so a fork while the keeper allocates in a pass leaves the
// child's allocator locked and the child's next threads hang in calloc
// (seen: unit.ExitHook.BundleBeingWrittenIsFinishedFirst under load, a fork
// right after start-up, while the keeper thread's sanitizer set-up was
// allocating). In an ASan build the fork waits for the keeper thread to have
// started and for its pass to end (prepare takes the pass lock, the parent
// releases it, the child re-makes it); otherwise these do nothing and a
// fork never waits for the keeper.
void peak_keeper_atfork_prepare();
void peak_keeper_atfork_parent();

}  // namespace gpumemrec
