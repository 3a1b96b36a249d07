#include "shim/dump/place/bundle_dir.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>

#include "common/bundle_schema.h"
#include "shim/base/clock.h"
#include "shim/base/dump_progress.h"
#include "shim/base/log.h"

#include "shim/dump/place/bundle_name.h"
#include "shim/dump/verdict/episodes.h"

namespace gpumemrec {

bool make_dirs(const std::string& path, std::string* why) {
  size_t pos = 0;
  while (pos <= path.size()) {
    size_t slash = path.find('/', pos);
    if (slash == std::string::npos) slash = path.size();
    const std::string cur = path.substr(0, slash);
    pos = slash + 1;
    if (cur.empty() || cur == ".") continue;
    if (mkdir(cur.c_str(), 0700) != 0 && errno != EEXIST) {
      *why = "cannot create " + cur + ": " + std::strerror(errno);
      return false;
    }
  }
  return true;
}

const char* untrusted_dir_reason(const struct stat& st, uid_t euid) {
  // Another user who can write to the directory (group or others, without
  // the sticky bit) could rename our bundle away and put another in its
  // place, whoever we are (root included).
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) && !(st.st_mode & S_ISVTX)) return "is writable by others and not sticky";
  // A directory owned by another user (root's, like a sticky /tmp, is
  // trusted) can be changed by its owner at any time.
  if (st.st_uid != euid && st.st_uid != 0) return "is owned by another user";
  return nullptr;
}

int open_dump_dir(const std::string& dir, std::string* why) {
  if (!make_dirs(dir, why)) return -1;
  int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    *why = errno == ELOOP || errno == ENOTDIR ? dir + " is a symbolic link or not a directory; refusing to follow it"
                                              : "cannot open " + dir + ": " + std::strerror(errno);
    return -1;
  }
  struct stat st;
  const char* distrust = fstat(fd, &st) != 0 ? "cannot be examined" : untrusted_dir_reason(st, geteuid());
  if (distrust) {
    *why = dir + " " + distrust + "; refusing to write there";
    close(fd);
    return -1;
  }
  if (faccessat(fd, ".", W_OK | X_OK, AT_EACCESS) != 0) {
    *why = "cannot write to " + dir + ": " + std::strerror(errno);
    close(fd);
    return -1;
  }
  return fd;
}


namespace {

struct Dirent64 {
  uint64_t ino;
  int64_t off;
  unsigned short reclen;
  unsigned char type;
  char name[1];
};

// One pass over the directory: unlinks what it lists; true if any went.
bool unlink_listed(int fd) {
  alignas(8) char buf[4096];
  lseek(fd, 0, SEEK_SET);
  long n = syscall(SYS_getdents64, fd, buf, sizeof buf);
  bool removed = false;
  for (long off = 0; off < n;) {
    auto* d = reinterpret_cast<Dirent64*>(buf + off);
    if (std::strcmp(d->name, ".") != 0 && std::strcmp(d->name, "..") != 0) removed |= unlinkat(fd, d->name, 0) == 0;
    off += d->reclen;
  }
  return removed;
}

uint64_t bundle_bytes(int dirfd, const char* name) {
  int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return 0;
  DIR* d = fdopendir(fd);
  if (!d) {
    close(fd);
    return 0;
  }
  uint64_t total = 0;
  while (struct dirent* e = readdir(d)) {
    struct stat st;
    if (fstatat(::dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode)) total += st.st_size;
  }
  closedir(d);
  return total;
}

}  // namespace

void remove_own_tmp_bundles(const char* dir, long pid) {
  char digits[24];
  int nd = 0;
  for (long v = pid; nd < 20 && (v > 0 || nd == 0); v /= 10) digits[nd++] = char('0' + v % 10);
  char want[24];  // "<pid>_"
  for (int i = 0; i < nd; ++i) want[i] = digits[nd - 1 - i];
  want[nd] = '_';
  want[nd + 1] = '\0';
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return;
  alignas(8) char buf[4096];
  long n = syscall(SYS_getdents64, fd, buf, sizeof buf);
  // ".tmp-" + "oom_dump_" + "YYYYmmddTHHMMSSZ" + "_": the pid starts at 31.
  constexpr size_t kPidAt = 5 + 9 + 16 + 1;
  for (long off = 0; off < n;) {
    auto* d = reinterpret_cast<Dirent64*>(buf + off);
    if (std::strncmp(d->name, ".tmp-oom_dump_", 14) == 0 && std::strlen(d->name) > kPidAt &&
        std::strncmp(d->name + kPidAt, want, size_t(nd) + 1) == 0)
      remove_bundle_dir(fd, d->name);
    off += d->reclen;
  }
  close(fd);
}

void remove_bundle_dir(int dirfd, const char* name) {
  int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd >= 0) {
    for (int pass = 0; pass < 64 && unlink_listed(fd); ++pass) {
    }
    close(fd);
  }
  unlinkat(dirfd, name, AT_REMOVEDIR);
}

bool TmpBundle::claim(uint64_t realtime_ns, Backend backend, int seq, std::string* why) {
  char tmp[256];
  if (const int err = claim_bundle_name(dirfd_, realtime_ns, backend, seq, &name_, tmp, sizeof tmp)) {
    *why = err == ECANCELED ? std::string("the program is ending and the exit wait gave up")
                            : std::string("cannot create a bundle directory: ") + std::strerror(err);
    return false;
  }
  tmp_ = tmp;
  created_ = true;
  fd_ = openat(dirfd_, tmp_.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd_ < 0) {
    *why = "cannot open " + tmp_ + ": " + std::strerror(errno);
    return false;
  }
  return true;
}

bool TmpBundle::publish(std::string* why) {
  fsync(fd_);
  if (const int err = rename_bundle_into_place(dirfd_, tmp_.c_str(), name_.c_str())) {
    *why = std::string("cannot rename the bundle into place: ") + std::strerror(err);
    return false;
  }
  created_ = false;
  fsync(dirfd_);
  return true;
}

void TmpBundle::discard() {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
  if (created_) remove_bundle_dir(dirfd_, tmp_.c_str());
  created_ = false;
}

namespace {

int64_t mtime_ns(const struct stat& st) { return int64_t(st.st_mtim.tv_sec) * 1000000000ll + st.st_mtim.tv_nsec; }

// Each directory entry of dirfd (a descriptor of its own: a dup would share,
// and leave at the end, the caller's directory offset).
template <typename Fn>
void for_each_entry(int dirfd, Fn&& fn) {
  int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  DIR* d = fdopendir(fd);
  if (!d) {
    close(fd);
    return;
  }
  while (struct dirent* e = readdir(d)) fn(e->d_name);
  closedir(d);
}

// pid and host fields of a bundle name (docs/bundle-format.md).
bool name_pid_host(const std::string& name, long* pid, std::string* host) {
  std::vector<std::string> f;
  size_t p = 0;
  for (size_t q; (q = name.find('_', p)) != std::string::npos; p = q + 1) f.push_back(name.substr(p, q - p));
  f.push_back(name.substr(p));
  if (f.size() < 8) return false;  // oom dump <stamp> <pid> <backend> <seq> <host> <random>
  *pid = std::strtol(f[3].c_str(), nullptr, 10);
  *host = f[6];
  return *pid > 0;
}

// Waits (at most ~2 s) for the directory's exclusive lock.
int64_t dir_mtime_ns(int dirfd) {
  struct stat st;
  return fstat(dirfd, &st) == 0 ? int64_t(st.st_mtim.tv_sec) * 1000000000ll + st.st_mtim.tv_nsec : 0;
}

}  // namespace

DirLock lock_dir(int dirfd, unsigned stall_ms, unsigned max_ms) {
  const int64_t start = int64_t(monotonic_ns());
  int64_t seen = dir_mtime_ns(dirfd), changed_at = start;
  for (;;) {
    if (flock(dirfd, LOCK_EX | LOCK_NB) == 0) return DirLock::kLocked;
    if (errno != EWOULDBLOCK && errno != EINTR) return DirLock::kNoLocks;
    const int64_t now = int64_t(monotonic_ns()), m = dir_mtime_ns(dirfd);
    if (m != seen) {  // the holders are getting on: so is this dump (the exit wait follows it)
      seen = m;
      changed_at = now;
      dump_progress_step();
    }
    if (now - changed_at >= int64_t(stall_ms) * 1000000ll) return DirLock::kStalled;
    if (now - start >= int64_t(max_ms) * 1000000ll) return DirLock::kTooLong;
    usleep(10000);
  }
}

namespace {

void remove_stale_tmps(int dirfd) {
  const std::string host = bundle_host_part();
  const int64_t now = int64_t(time(nullptr)) * 1000000000ll;
  std::vector<std::string> stale;
  for_each_entry(dirfd, [&](const char* n) {
    if (std::strncmp(n, ".tmp-oom_dump_", 14) != 0) return;
    struct stat st;
    if (fstatat(dirfd, n, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode) &&
        is_stale_tmp(n + 5, st, geteuid(), host, now))
      stale.push_back(n);
  });
  for (const std::string& n : stale) {
    remove_bundle_dir(dirfd, n.c_str());
    GM_INFO("removed {}, left by a dump that never finished", n);
  }
}

// Our own writer's manifest.json (write_manifest.cpp: RapidJSON's compact
// output, the outcome near the top, "outcome":"recovered": the schema's key
// and outcome_name(Outcome::kRecovered), verdict/episodes.h). A file that is
// not ours, too big or unreadable counts as not recovered: it is pruned by
// age, as before.
bool manifest_says_recovered(int dirfd, const char* bundle) {
  const int dfd = openat(dirfd, bundle, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dfd < 0) return false;
  const int fd = openat(dfd, file::kManifest, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  close(dfd);
  if (fd < 0) return false;
  char buf[4096];
  size_t n = 0;
  for (ssize_t r; n < sizeof buf - 1 && (r = read(fd, buf + n, sizeof buf - 1 - n)) != 0;) {
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) break;
    n += size_t(r);
  }
  close(fd);
  buf[n] = '\0';
  char needle[64];
  std::snprintf(needle, sizeof needle, "\"%s\":\"%s\"", key::kOutcome, outcome_name(Outcome::kRecovered));
  return std::strstr(buf, needle) != nullptr;
}

}  // namespace

bool is_stale_tmp(const std::string& name, const struct stat& st, uid_t euid, const std::string& host,
                  int64_t now_ns) {
  if (st.st_uid != euid) return false;
  const int64_t age = now_ns - mtime_ns(st);
  if (age > 86400ll * 1000000000ll) return true;
  long pid = 0;
  std::string h;
  if (!name_pid_host(name, &pid, &h) || h != host || pid == long(getpid())) return false;
  return age > 60ll * 1000000000ll && kill(pid_t(pid), 0) != 0 && errno == ESRCH;
}

std::vector<BundleOnDisk> list_bundles(int dirfd) {
  std::vector<BundleOnDisk> out;
  for_each_entry(dirfd, [&](const char* n) {
    if (std::strncmp(n, "oom_dump_", 9) != 0) return;
    struct stat st;
    if (fstatat(dirfd, n, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode)) return;
    if (st.st_uid != geteuid()) return;
    out.push_back({n, mtime_ns(st), bundle_bytes(dirfd, n), manifest_says_recovered(dirfd, n)});
  });
  return out;
}

std::vector<std::string> bundles_to_prune(std::vector<BundleOnDisk> bundles, uint64_t max_dumps,
                                          uint64_t max_total_mb, const std::string& keep, int64_t burst_ns) {
  std::vector<std::string> out;
  if (max_dumps == 0 && max_total_mb == 0) return out;
  std::sort(bundles.begin(), bundles.end(), [](const BundleOnDisk& a, const BundleOnDisk& b) {
    return a.mtime != b.mtime ? a.mtime < b.mtime : a.name < b.name;
  });
  // The newest burst: the longest tail whose neighbours are < burst_ns apart.
  size_t burst = bundles.size();
  if (burst_ns > 0)
    while (burst > 1 && bundles[burst - 1].mtime - bundles[burst - 2].mtime < burst_ns) --burst;
  if (burst > 0 && burst_ns > 0) --burst;  // the burst's first bundle belongs to it
  std::reverse(bundles.begin() + std::ptrdiff_t(burst), bundles.end());
  // Where `keep` stands before the recovered ones are moved to the front.
  bool keep_in_newest = false;
  for (size_t i = burst; i < bundles.size() && burst_ns != 0; ++i) keep_in_newest |= bundles[i].name == keep;
  std::stable_partition(bundles.begin(), bundles.end(), [](const BundleOnDisk& b) { return b.recovered; });
  uint64_t total = 0;
  for (auto& b : bundles) total += b.bytes;
  const uint64_t max_bytes = max_total_mb << 20;
  size_t count = bundles.size();
  for (size_t i = 0; i < bundles.size(); ++i) {
    const bool too_many = max_dumps != 0 && count > max_dumps;
    const bool too_big = max_total_mb != 0 && total > max_bytes;
    if (!too_many && !too_big) break;
    if (bundles[i].name == keep && !keep_in_newest) continue;
    // Only the size cap wants `keep` gone, and no pruning can make it fit:
    // it stays (the newest evidence; the next dump removes it).
    if (bundles[i].name == keep && !too_many && max_total_mb != 0 && bundles[i].bytes > max_bytes) continue;
    out.push_back(bundles[i].name);
    total -= bundles[i].bytes;
    --count;
  }
  return out;
}

bool bundle_exceeds_total_cap(int dirfd, const std::string& name, const Config& c, uint64_t* bytes) {
  const uint64_t b = bundle_bytes(dirfd, name.c_str());
  if (bytes) *bytes = b;
  return c.max_total_mb != 0 && b > (c.max_total_mb << 20);
}

bool prune_bundles(int dirfd, const Config& c, const std::string& keep) {
  const DirLock lock = lock_dir(dirfd);
  if (lock != DirLock::kLocked) {  // the next dump's prune catches up
    const char* why = lock == DirLock::kNoLocks ? "its file system refused a lock (flock)"
                      : lock == DirLock::kStalled
                          ? "another process held its lock without changing it for 2 s"
                          : "other processes kept it locked for 60 s";
    GM_WARN("this dump did not prune the dump directory ({}), so it may hold more than GPUMEMREC_MAX_DUMPS / "
            "GPUMEMREC_MAX_TOTAL_MB until the next dump",
            why);
    return true;
  }
  remove_stale_tmps(dirfd);
  bool kept = true;
  if (c.max_dumps != 0 || c.max_total_mb != 0) {
    // A burst: failures up to an episode apart, and at least 10 s (ranks
    // of one job fail within seconds of each other).
    const int64_t burst_ns = int64_t(std::max<uint64_t>(c.episode_ms, 10000)) * 1000000ll;
    for (const std::string& name : bundles_to_prune(list_bundles(dirfd), c.max_dumps, c.max_total_mb, keep, burst_ns)) {
      remove_bundle_dir(dirfd, name.c_str());
      if (name == keep) kept = false;
      GM_INFO("pruned bundle {}", name);
    }
  }
  flock(dirfd, LOCK_UN);
  return kept;
}

}  // namespace gpumemrec
