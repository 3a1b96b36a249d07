// Out-of-memory episodes and their verdicts.
//
// A framework that runs out of memory frees its cache and retries: PyTorch's
// caching allocator calls cudaMalloc up to three times per request
// (c10/cuda/CUDACachingAllocator.cpp, DeviceCachingAllocator::malloc: the
// plain attempt, then after release_available_cached_blocks, then after
// release_cached_blocks); CuPy's memory pool also tries three times: plain,
// after free_all_blocks, after gc.collect and free_all_blocks again
// (cupy/cuda/memory.pyx, SingleDeviceMemoryPool._try_malloc). So one
// episode is the first out-of-memory failure when none is open, plus every
// failure, of any thread, while it is open; one bundle shows the state at its
// first failure.
//
// The verdict (docs/bundle-format.md, "Out-of-memory verdicts"). Each thread
// that fails in an episode has one pending request: the device and size of
// its first failure in it. The same thread's later successful allocation on
// that device of at least that size resolves it. The episode is
//   recovered  when every pending request is resolved (decided then);
//   fatal      when a request is still pending `episode_ns` after the
//              episode's last failure, or the program ends (exit, a fatal
//              signal) first;
//   unknown    until then (and in a bundle whose process died first).
// Not seen: a retry on another thread, a retry split into smaller requests.
// The framework's start-up hook (docs/python-hook.md) holds the episode
// while its out-of-memory hook runs and then closes it fatal (the
// framework's allocator gave up) or leaves it to a handler of the program
// that catches the error and retries with less (a trainer's batch-size
// finder), which closes it recovered when it caught it (close_by_handler).
//
// Locking: a spin lock around the episode state, taken only on the failure
// path, by a thread with a pending request when it allocates, and by the
// writer thread. The hot path only reads the thread's own PendingRequest.
#pragma once
#include <atomic>
#include <cstdint>
#include <vector>

#include "shim/base/hook_table.h"
#include "shim/base/spinlock.h"
#include "shim/record/failure.h"

namespace gpumemrec {

enum class Outcome : uint8_t { kUnknown = 0, kRecovered, kFatal };
const char* outcome_name(Outcome o);  // "unknown", "recovered", "fatal"

// Why an episode was fatal.
// kFramework: the framework said it gave up (PyTorch's out-of-memory
// observer, called after its last retry: docs/python-hook.md).
enum class FatalCause : uint8_t { kNone = 0, kNoRetry, kExit, kSignal, kFramework };

struct Recovery {
  static constexpr size_t kHandlerBytes = 64;
  uint64_t after_ns = 0;     // from the episode's first failure to the successful retry
  uint64_t freed_bytes = 0;  // the device's live bytes at the failure minus just before the retry
  uint64_t retry_size = 0;   // 0 with a handler
  HookId retry_api = HookId::kCount;
  uint32_t tid = 0;
  // The program's handler that caught the framework's error and retries
  // (close_by_handler: a trainer's batch-size finder), NUL-terminated;
  // empty when the allocation's own retry succeeded.
  char handler[kHandlerBytes] = {};
};

struct Verdict {
  uint64_t episode = 0;
  Outcome outcome = Outcome::kUnknown;
  FatalCause cause = FatalCause::kNone;
  int signal = 0;  // cause kSignal
  Recovery recovery;
};

// A recovered episode that got no bundle of its own (GPUMEMREC_RECOVERED=count).
struct RecoveredFailure {
  uint64_t number = 0;  // 1, 2, ... in this process
  uint64_t time_ns = 0; // CLOCK_REALTIME of the first failure
  uint64_t size = 0;
  int device = -1;
  HookId api = HookId::kCount;
  uint32_t tid = 0;
  uint32_t stack_id = 0;
  uint64_t after_ns = 0;
  uint64_t freed_bytes = 0;
};

struct RecoveredList {
  uint64_t count = 0;                  // since the previous kept bundle
  uint64_t up_to = 0;                  // the newest number counted
  std::vector<RecoveredFailure> listed;  // the newest kListed of them, oldest first
};

// A thread's own pending request (thread-local in the dumper; plain data).
struct PendingRequest {
  uint64_t episode;  // 0 = none
  int device;
  uint64_t size;
  uint64_t live_at_failure;  // the device's live bytes as the recorder counted them
};

class Episodes {
 public:
  static constexpr size_t kListed = 32;
  // Episodes watched at once: more than the bundles in the works (dumper.cpp:
  // the pooled frozen sets and the deferred failures' records).
  static constexpr size_t kWatched = 16;
  // Closed episodes remembered once unwatched (by id % kHistory).
  static constexpr size_t kHistory = 16;

  // A failure of this thread at now_ns (monotonic). Returns the episode id it
  // opened (the caller freezes and dumps), 0 when it joined the open one,
  // kUnwatched when it opened one that cannot be watched (no bundle).
  static constexpr uint64_t kUnwatched = ~uint64_t(0);
  uint64_t on_failure(const FailureInfo& f, uint64_t now_ns, uint64_t live_on_device, uint64_t episode_ns,
                      PendingRequest* mine);
  // The failing call that opened episode `id` returns to the program now,
  // after the freeze that ran on its thread: the window starts again from
  // here, so time the program spent inside the recorder is not time it had
  // to retry (a 2.1M-entry live table takes seconds to copy on a loaded
  // machine, longer than GPUMEMREC_EPISODE_MS).
  void returned(uint64_t id, uint64_t now_ns);
  // This thread, with a pending request, allocated `size` on `device`. True
  // when that closed the episode as recovered.
  bool on_success(PendingRequest* mine, uint32_t tid, HookId api, int device, uint64_t size, uint64_t now_ns,
                  uint64_t live_before);
  // Closes the open episode as fatal if a request has been pending for
  // episode_ns since its last failure (or at once with `force`: the program
  // ends). True when it closed one now.
  bool expire(uint64_t now_ns, uint64_t episode_ns, bool force, FatalCause cause, int signal = 0);
  // The open episode when its first failure was on `device` (any device
  // when device < 0), else 0.
  uint64_t open_on(int device);
  // Closes episode `id` as fatal now if it is still the open one (the
  // framework's own word: exact, no grace period). True when it closed it.
  bool close_fatal(uint64_t id, FatalCause cause);
  // The framework has begun its report of episode `id` (PyTorch's observer
  // runs after the last retry, then walks the program's objects): the
  // window does not close before until_ns unless the program ends; its word
  // (close_fatal) normally comes first. False when `id` is not the open one.
  bool hold(uint64_t id, uint64_t until_ns);
  // A handler of the program caught the framework's error and retries with
  // less (a trainer's batch-size finder): closes the open episode on
  // `device` as recovered now if a framework's report holds it (hold).
  // `handler` names it (at most Recovery::kHandlerBytes - 1 bytes kept),
  // on thread `tid`; live_now is the device's live bytes now. The episode
  // closed, 0 when none was open and held there.
  uint64_t close_by_handler(int device, const char* handler, uint32_t tid, uint64_t now_ns, uint64_t live_now);
  // When the open episode expires (monotonic ns), 0 when none is open.
  uint64_t deadline_ns(uint64_t episode_ns);
  // The verdict of episode `id` (unknown while it is open). An episode is
  // watched from its opening (on_failure) until its opener's job is done
  // (unwatch), so that its verdict is kept however many episodes close
  // meanwhile.
  Verdict verdict(uint64_t id);
  bool is_open(uint64_t id);
  void unwatch(uint64_t id);
  // verdict(id), then unwatch(id), under one lock. Read the verdict before
  // unwatching: afterwards only the newest kHistory closed episodes are
  // remembered, so a watched episode that closed longer ago reads unknown.
  Verdict release(uint64_t id);

  // GPUMEMREC_RECOVERED=count: a recovered episode is counted when it closes
  // (it gets no bundle), listed in the next bundle kept, said at exit.
  void set_counting(bool on) { counting_ = on; }
  RecoveredList recovered();
  void clear_recovered(uint64_t up_to);  // a bundle that lists them was kept
  uint64_t recovered_total();

  // Failures that got no bundle of their own (joined an episode, or met
  // another dump): `failed_calls_before_dump` of the next bundle.
  void missed() { unreported_.fetch_add(1, std::memory_order_relaxed); }
  // The failure that opened episode `id` got no bundle (the writer's sets
  // and queue were full). Counting recovered episodes, one that recovers is
  // owed no bundle (it is counted as recovered, once): so the miss counts
  // only when the episode ends otherwise. True: left to its close (or it
  // recovered already); false: count it now (keep mode, or its verdict is
  // not known).
  bool miss_unless_recovered(uint64_t id);
  // Misses counted when their episodes closed other than recovered.
  uint64_t missed_at_close();
  uint64_t take_unreported() { return unreported_.exchange(0, std::memory_order_acq_rel); }

  void reset();  // forked child

 private:
  void close(Outcome o, FatalCause cause, int signal);
  void count_recovered();  // the episode just closed
  bool watch_locked(uint64_t id);
  Verdict verdict_locked(uint64_t id) const;

  SpinLock lock_;
  uint64_t next_id_ = 1;
  uint64_t open_ = 0;  // the open episode, 0 = none
  FailureInfo first_;  // its first failure
  uint64_t first_ns_ = 0, last_ns_ = 0;
  uint64_t first_live_ = 0;  // the device's live bytes at its first failure
  uint64_t held_until_ns_ = 0;  // hold(): no expiry before this
  uint32_t pending_ = 0;
  Recovery recovery_;
  Verdict closed_[kHistory];               // the newest closed episodes, by id % kHistory
  Verdict watched_[kWatched];              // episode 0 = free slot
  RecoveredFailure recovered_[kListed];  // ring by number (number % kListed)
  uint64_t recovered_total_ = 0, recovered_cleared_ = 0;
  std::atomic<uint64_t> unreported_{0};
  bool counting_ = true;
  bool open_missed_ = false;  // the open episode's opener got no bundle (miss_unless_recovered)
  uint64_t missed_at_close_ = 0;
};

}  // namespace gpumemrec
