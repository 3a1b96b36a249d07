// The dump directory and the bundle directories in it: opening the directory
// safely, naming a bundle, the temporary directory a bundle is written in,
// removing a bundle, and pruning old ones (MAX_DUMPS, MAX_TOTAL_MB).
#pragma once
#include <sys/stat.h>
#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/config.h"
#include "common/event.h"

namespace gpumemrec {

// mkdir -p with mode 0700 for what it creates.
bool make_dirs(const std::string& path, std::string* why);
// The dump directory (created if missing), opened without following a
// symlink in its last component; refused when another user can write to it
// and it is not sticky. -1 and *why on failure.
int open_dump_dir(const std::string& dir, std::string* why);
// Why a dump directory is not to be trusted (nullptr: it is): writable by
// group or others without the sticky bit, or owned by a user other than
// `euid` and root. Applies to root too.
const char* untrusted_dir_reason(const struct stat& st, uid_t euid);

// Bundle names and claiming one: shim/dump/place/bundle_name.h.

// Removes directory `name` (in dirfd) and the regular files in it, without
// allocating (a failed dump may have run out of memory).
void remove_bundle_dir(int dirfd, const char* name);
// Removes every temporary bundle directory of process `pid` in `dir`
// (system calls only, no allocation: for exit() called from a signal handler
// on the thread that was writing, possibly before it noted its directory).
void remove_own_tmp_bundles(const char* dir, long pid);

// A bundle being written: the temporary directory, removed on destruction
// unless published.
class TmpBundle {
 public:
  // A fresh unique name is claimed by claim() (bundle_name.h).
  explicit TmpBundle(int dirfd) : dirfd_(dirfd) {}
  ~TmpBundle() { discard(); }
  TmpBundle(const TmpBundle&) = delete;
  TmpBundle& operator=(const TmpBundle&) = delete;
  // Claims a unique name (its temporary directory, made by mkdir: a
  // collision with another process's name retries) and opens it.
  bool claim(uint64_t realtime_ns, Backend backend, int seq, std::string* why);
  const std::string& name() const { return name_; }
  const std::string& tmp_name() const { return tmp_; }
  int fd() const { return fd_; }
  // fsync the bundle, rename it into place, fsync the dump directory. The
  // directory stays open (fd(), or take_fd()): its verdict is written later.
  bool publish(std::string* why);
  // The bundle directory's descriptor, now the caller's to close.
  int take_fd() {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }
  void discard();

 private:
  int dirfd_;
  std::string name_, tmp_;
  int fd_ = -1;
  bool created_ = false;
};

struct BundleOnDisk {
  std::string name;
  int64_t mtime = 0;  // nanoseconds (st_mtim): when the bundle was completed
  uint64_t bytes = 0;
  bool recovered = false;  // its manifest says "outcome":"recovered"
};
// This user's bundle directories (oom_dump_*) in dirfd.
std::vector<BundleOnDisk> list_bundles(int dirfd);
// Which bundles to remove so that at most max_dumps bundles and max_total_mb
// MiB remain (0 = no limit). Bundles completed less than `burst_ns` apart
// form a burst (the ranks of one job failing together, sharing the
// directory). Older bursts go first, oldest first; in the newest burst the
// LATEST go first, so that the earliest failures of an episode, the ones a
// person needs first, are kept across ranks. `keep` (the bundle just
// written) is never removed from an older burst (a clock step), but may be
// from the newest one (for MAX_DUMPS); a `keep` bigger than max_total_mb on
// its own is not removed for the size cap (it can never fit: the newest
// evidence stays, every other bundle goes, the next dump removes it; see
// bundle_exceeds_total_cap). burst_ns 0: oldest first, never `keep`.
// Before all of that, bundles of recovered episodes go (in the same order):
// with GPUMEMREC_RECOVERED=keep a burst of recovered bundles would otherwise
// push out the fatal one that ends it.
std::vector<std::string> bundles_to_prune(std::vector<BundleOnDisk> bundles, uint64_t max_dumps,
                                          uint64_t max_total_mb, const std::string& keep, int64_t burst_ns = 0);
// The exclusive flock(2) on the dump directory that a prune holds. The
// ranks of one job fail together and queue here, and on a busy node each
// prune (list, read the manifests, remove a few bundles) takes a fraction of
// a second, so 16 of them in a row outlast any fixed bound. The wait is
// bounded by a lack of progress instead: while the directory keeps changing
// (its mtime: a bundle renamed in, a pruned one removed) the holders are
// getting on and we wait; `stall_ms` without a change (a holder that hangs:
// a stopped process, an unreachable NFS server) or `max_ms` in all, and it
// gives up (false). flock's own blocking wait has no timeout, hence polling
// every 10 ms.
// Why it gave up tells the warning what to say: a holder that stalled, one
// that never finished, or a file system without flock (ENOLCK on some NFS
// mounts: no prune can be serialised there).
constexpr unsigned kPruneLockStallMs = 2000, kPruneLockMaxMs = 60000;
enum class DirLock { kLocked, kStalled, kTooLong, kNoLocks };
DirLock lock_dir(int dirfd, unsigned stall_ms = kPruneLockStallMs, unsigned max_ms = kPruneLockMaxMs);
// Under lock_dir (processes sharing the directory prune one at a time; when
// it gives up, this prune is skipped with a warning and the next catches up):
// stale temporary directories, then list_bundles + bundles_to_prune +
// remove. Returns false when `keep` itself was removed.
bool prune_bundles(int dirfd, const Config& c, const std::string& keep);
// Whether bundle `name` in dirfd alone is bigger than GPUMEMREC_MAX_TOTAL_MB
// (never with 0 = no cap); *bytes (if given) = its size. For the stderr line
// after prune_bundles: such a bundle is kept until the next dump's prune
// removes it (shim/dump/place/retention_check.h warns at start-up).
bool bundle_exceeds_total_cap(int dirfd, const std::string& name, const Config& c, uint64_t* bytes = nullptr);
// A temporary bundle directory left by a dump that never finished (the
// process was killed): ours (uid), and either written on this host by a pid
// that no longer exists and untouched for a minute, or untouched for a day.
bool is_stale_tmp(const std::string& name, const struct stat& st, uid_t euid, const std::string& host,
                  int64_t now_ns);

}  // namespace gpumemrec
