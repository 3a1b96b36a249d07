#include "shim/dump/dumper.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <new>
#include <string>
#include <vector>

#include "shim/dump/absolute_dir.h"
#include "shim/dump/bundle_name.h"
#include "shim/dump/bundle_writer.h"
#include "shim/dump/dump_slot.h"
#include "shim/dump/episode.h"
#include "shim/dump/signal_guard.h"
#include "shim/base/clock.h"
#include "shim/dump/dump_memory.h"
#include "shim/base/log.h"
#include "shim/record/recorder.h"
#include "shim/dump/snapshot_pickle.h"
#include "shim/dump/symbolizer.h"

namespace gpumemrec {

namespace {

constexpr size_t kWriteBufferBytes = 256 * 1024;

// Prepared at start-up so the dump path needs no large allocation.
WriteBuffer g_buffer;
Symbolizer* g_symbolizer = nullptr;

EpisodeClock g_episodes;
// Failures that opened an episode while another out-of-memory bundle was
// being written (they belong to it; said once, at exit, with the count).
std::atomic<uint64_t> g_joined_failures{0};
std::atomic<int> g_dump_seq{0};
std::atomic<bool> g_dir_warned{false};

// mkdir -p with 0700 for what we create.
bool make_dirs(const std::string& path, std::string* why) {
  std::string cur;
  size_t pos = 0;
  while (pos <= path.size()) {
    size_t slash = path.find('/', pos);
    if (slash == std::string::npos) slash = path.size();
    cur = path.substr(0, slash);
    pos = slash + 1;
    if (cur.empty() || cur == ".") continue;
    if (mkdir(cur.c_str(), 0700) != 0 && errno != EEXIST) {
      *why = "cannot create " + cur + ": " + std::strerror(errno);
      return false;
    }
  }
  return true;
}

// The dump directory, opened without following a symlink in its last
// component and refused if another user owns it.
int open_dump_dir(const std::string& dir, std::string* why) {
  if (!make_dirs(dir, why)) return -1;
  int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    *why = errno == ELOOP || errno == ENOTDIR ? dir + " is a symbolic link or not a directory; refusing to follow it"
                                              : "cannot open " + dir + ": " + std::strerror(errno);
    return -1;
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || (st.st_uid != geteuid() && geteuid() != 0 && (st.st_mode & S_IWOTH) &&
                              !(st.st_mode & S_ISVTX))) {
    *why = dir + " is writable by others and not sticky; refusing to write there";
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

// Removes the temporary bundle directory `name` and everything in it, without
// allocating (getdents64 into a stack buffer): this runs when the dump failed,
// possibly because memory ran out.
void remove_tmp_bundle(int dirfd, const char* name) {
  int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd >= 0) {
    alignas(8) char buf[4096];
    for (int pass = 0; pass < 64; ++pass) {
      lseek(fd, 0, SEEK_SET);
      long n = syscall(SYS_getdents64, fd, buf, sizeof buf);
      if (n <= 0) break;
      bool removed = false;
      for (long off = 0; off < n;) {
        struct Dirent64 {
          uint64_t ino;
          int64_t off;
          unsigned short reclen;
          unsigned char type;
          char name[1];
        };
        auto* d = reinterpret_cast<Dirent64*>(buf + off);
        if (std::strcmp(d->name, ".") != 0 && std::strcmp(d->name, "..") != 0)
          removed |= unlinkat(fd, d->name, 0) == 0;
        off += d->reclen;
      }
      if (!removed) break;
    }
    close(fd);
  }
  unlinkat(dirfd, name, AT_REMOVEDIR);
}

// Whether the host can still give us `bytes` (the optional parts of a bundle
// are skipped when it cannot).
bool malloc_probe(size_t bytes) {
  void* p = std::malloc(bytes);
  std::free(p);
  return p != nullptr;
}

void ok_without_snapshot_note(std::string*) { GM_DEBUG("host memory is short: no snapshot.pickle in this bundle"); }

// One line on stderr that needs no memory at all (when even formatting the
// warning failed).
void raw_stderr(const char* a, const char* b = "", const char* c = "") {
  for (const char* s : {"gpumemrec: warning: ", a, b, c, "\n"}) {
    size_t left = std::strlen(s);
    while (left > 0) {
      ssize_t n = write(2, s, left);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return;
      s += n;
      left -= size_t(n);
    }
  }
}

// Removes a whole bundle directory (only regular files inside, as we write).
void remove_bundle(int dirfd, const char* name) {
  int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return;
  DIR* d = fdopendir(fd);
  if (!d) {
    close(fd);
    return;
  }
  std::vector<std::string> names;
  while (struct dirent* e = readdir(d))
    if (std::strcmp(e->d_name, ".") && std::strcmp(e->d_name, "..")) names.push_back(e->d_name);
  for (auto& n : names) unlinkat(::dirfd(d), n.c_str(), 0);
  closedir(d);
  unlinkat(dirfd, name, AT_REMOVEDIR);
}

struct BundleOnDisk {
  std::string name;
  time_t mtime;
  uint64_t bytes;
};

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

// Keeps at most MAX_DUMPS bundles and MAX_TOTAL_MB in the directory, oldest
// removed first; never the one just written, never another user's.
void prune(int dirfd, const Config& c, const std::string& keep) {
  if (c.max_dumps == 0 && c.max_total_mb == 0) return;
  int fd = dup(dirfd);
  if (fd < 0) return;
  DIR* d = fdopendir(fd);
  if (!d) {
    close(fd);
    return;
  }
  std::vector<BundleOnDisk> bundles;
  while (struct dirent* e = readdir(d)) {
    if (std::strncmp(e->d_name, "oom_dump_", 9) != 0) continue;
    struct stat st;
    if (fstatat(dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode)) continue;
    if (st.st_uid != geteuid()) continue;
    bundles.push_back({e->d_name, st.st_mtime, bundle_bytes(dirfd, e->d_name)});
  }
  closedir(d);
  std::sort(bundles.begin(), bundles.end(), [](const BundleOnDisk& a, const BundleOnDisk& b) {
    return a.mtime != b.mtime ? a.mtime < b.mtime : a.name < b.name;
  });
  uint64_t total = 0;
  for (auto& b : bundles) total += b.bytes;
  const uint64_t max_bytes = c.max_total_mb << 20;
  size_t count = bundles.size();
  for (auto& b : bundles) {
    bool too_many = c.max_dumps != 0 && count > c.max_dumps;
    bool too_big = c.max_total_mb != 0 && total > max_bytes;
    if (!too_many && !too_big) break;
    if (b.name == keep) continue;
    remove_bundle(dirfd, b.name.c_str());
    GM_INFO("pruned old bundle {}", b.name);
    total -= b.bytes;
    --count;
  }
}

std::string describe_failure(const FailureInfo& f) {
  char buf[256];
  bool runtime_api = hook_info(f.api).library != Library::CUDA;
  std::snprintf(buf, sizeof buf, "%s(%llu bytes, %s) on device %d failed with %s (%d)%s", hook_name(f.api),
                (unsigned long long)f.size, format_bytes(f.size).c_str(), f.device,
                error_name(hook_backend(f.api), runtime_api, f.result), f.result,
                f.reason == DumpReason::kLimit      ? " [GPUMEMREC_LIMIT]"
                : f.reason == DumpReason::kFailAfter ? " [GPUMEMREC_FAIL_AFTER]"
                                                     : "");
  return buf;
}

}  // namespace

void dumper_init(Recorder* r) {
  void* p = mmap(nullptr, kWriteBufferBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p != MAP_FAILED) {
    g_buffer.data = static_cast<char*>(p);
    g_buffer.size = kWriteBufferBytes;
  }
  g_symbolizer = new (std::nothrow) Symbolizer();
  if (!dump_memory_init(kDumpArenaBytes)) GM_DEBUG("no emergency memory for the dump path");
  // Before any thread of ours exists: a relative GPUMEMREC_DIR is fixed now,
  // against the directory the program started in.
  std::string why;
  r->cfg.dir = absolute_dump_dir(r->cfg.dir, &why);
  if (!why.empty()) {
    DumpSignalGuard signal_guard;
    GM_WARN("{}", why);
  }
}

namespace {

Recorder* g_exit_recorder = nullptr;

void exit_dump() {
  // Registered from our constructor, so it runs after the program's own
  // atexit handlers and static destructors: what is still live is a leak.
  if (!g_exit_recorder || dump_slot_held_by_this_thread()) return;
  dump_slot_wait_free(10000, true);
  dump_now(g_exit_recorder, DumpReason::kExit, nullptr);
}

// GPUMEMREC_FOLLOW_EXEC=0: programs this one execs do not inherit the shim.
void drop_self_from_ld_preload() {
  const char* pre = std::getenv("LD_PRELOAD");
  if (!pre) return;
  std::string kept, item;
  std::string all = pre;
  size_t pos = 0;
  while (pos <= all.size()) {
    size_t end = all.find_first_of(": ", pos);
    if (end == std::string::npos) end = all.size();
    item = all.substr(pos, end - pos);
    pos = end + 1;
    if (item.empty() || item.find("libgpumemrec") != std::string::npos) continue;
    if (!kept.empty()) kept += ':';
    kept += item;
  }
  if (kept.empty()) unsetenv("LD_PRELOAD");
  else setenv("LD_PRELOAD", kept.c_str(), 1);
}

}  // namespace

// At exit a bundle may still be being written by another thread (a signal
// dump, or an out-of-memory dump in a thread the program did not join): wait
// for it (at most 10 s) so that exit never leaves a half-written bundle.
// When the exiting thread is the one writing (exit() from a signal handler
// that interrupted the dump) the dump can never finish: its temporary
// directory is removed here (syscalls only, no allocation), not waited for.
void wait_for_dump_at_exit() {
  if (dump_slot_held_by_this_thread()) {
    int dirfd = -1;
    char tmp[256];
    if (dump_slot_tmp(&dirfd, tmp, sizeof tmp)) remove_tmp_bundle(dirfd, tmp);
    return;
  }
  dump_slot_wait_free(10000, true);
  if (const uint64_t n = g_joined_failures.load(std::memory_order_relaxed)) {
    DumpSignalGuard signal_guard;  // stderr may be a pipe nobody reads any more
    GM_WARN("{} out-of-memory failure(s) came while another thread was writing a bundle; they are events in "
            "that bundle's ring only", n);
  }
}

void dumper_start(Recorder* r) {
  std::atexit(wait_for_dump_at_exit);
  if (r->cfg.dump_at_exit) {
    g_exit_recorder = r;
    std::atexit(exit_dump);
  }
  if (!r->cfg.follow_exec) drop_self_from_ld_preload();
}

void dumper_on_failure(const FailureInfo& f) {
  Recorder* r = recorder();
  if (!r) return;
  if (!g_episodes.on_failure(monotonic_ns(), r->cfg.episode_ms * 1000000ull)) {
    // Same episode (a framework retrying after freeing its cache, other
    // threads failing too): the failure is in the ring as an event; the
    // bundle shows the state at the episode's first failure.
    GM_DEBUG("{} (same out-of-memory episode, no new bundle)", describe_failure(f));
    return;
  }
  if (dump_now(r, f.reason, &f) || !dump_slot_last_try_was_busy()) return;  // written, or dump_now said why
  // The slot is taken. By a signal or exit dump: this episode still gets its
  // bundle after it. By another out-of-memory bundle: this failure belongs to
  // it (counted, said once at exit).
  if (!dump_slot_holder_is_failure() && dump_slot_wait_free(10000, true) && dump_now(r, f.reason, &f)) return;
  if (dump_slot_last_try_was_busy()) {
    g_joined_failures.fetch_add(1, std::memory_order_relaxed);
    GM_DEBUG("{}; another thread is writing a bundle, this failure is an event in it", describe_failure(f));
  }
}

bool dump_now(Recorder* r, DumpReason reason, const FailureInfo* f) {
  if (!r || !g_buffer.data || !g_symbolizer) return false;
  if (!dump_slot_try_acquire(reason)) return false;  // the caller decides (dump_slot_last_try_was_busy)
  const int saved_errno = errno;
  // Writing may raise SIGXFSZ (RLIMIT_FSIZE) or SIGPIPE (stderr): never let
  // the program see them.
  DumpSignalGuard signal_guard;
  // From here on the shim's operator new may fall back to the emergency
  // arena when malloc fails (the host may be short of memory too).
  DumpMemoryScope memory_scope;
  const size_t arena_used_at_start = dump_memory_used();
  bool ok = false;
  bool tmp_created = false;
  char tmp_name[192] = "";
  int dirfd = -1;
  std::string why;
  try {
    dirfd = open_dump_dir(r->cfg.dir, &why);
    if (dirfd < 0) {
      if (!g_dir_warned.exchange(true)) {
        if (f) GM_WARN("{}; cannot write a bundle: {} (said once; carrying on)", describe_failure(*f), why);
        else GM_WARN("cannot write a bundle: {} (said once; carrying on)", why);
      }
    } else {
      const uint64_t now = realtime_ns();
      const Backend backend = f ? hook_backend(f->api) : Backend::kCuda;
      const int seq = g_dump_seq.fetch_add(1) + 1;
      BundleInput in;
      in.recorder = r;
      in.reason = reason;
      in.failure = f;
      in.backend = backend;
      in.created_ns = now;
      try {
        in.devices = query_devices(backend, f ? f->device : -1);
        if (backend == Backend::kCuda) in.gpu_processes = query_gpu_processes(f ? f->device : 0);
      } catch (...) {
      }
      std::vector<std::string> files;
      files.reserve(16);
      if (const int err = claim_bundle_name(dirfd, now, backend, seq, &in.bundle_name, tmp_name, sizeof tmp_name)) {
        why = "cannot create " + r->cfg.dir + "/" + tmp_name + ": " + std::strerror(err);
      } else {
        tmp_created = true;
        dump_slot_note_tmp(dirfd, tmp_name);
        int tfd = openat(dirfd, tmp_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (tfd < 0) {
          why = std::string("cannot open ") + tmp_name + ": " + std::strerror(errno);
        } else {
          try {
            ok = write_bundle_files(tfd, in, *g_symbolizer, g_buffer, &files, &why);
          } catch (const std::bad_alloc&) {
            why = "out of memory while writing";
            ok = false;
          } catch (const std::exception& e) {
            why = std::string("error while writing (") + e.what() + ")";
            ok = false;
          } catch (...) {
            why = "unexpected error while writing";
            ok = false;
          }
          // snapshot.pickle reads the bundle back with rapidjson's default
          // allocator, which crashes when malloc fails: skip it (the bundle is
          // complete without it) when the host is short of memory.
          if (ok && (dump_memory_used() != arena_used_at_start || !malloc_probe(8u << 20))) {
            ok_without_snapshot_note(&why);
          } else if (ok) {
            // Optional: a bundle without it is still complete.
            std::string snap_why;
            try {
              if (!add_snapshot_pickle(r->cfg.dir + "/" + tmp_name, tfd, &snap_why))
                GM_DEBUG("no snapshot.pickle in this bundle: {}", snap_why);
            } catch (...) {
              GM_DEBUG("no snapshot.pickle in this bundle: out of memory");
            }
          }
          if (ok) fsync(tfd);
          close(tfd);
          if (ok) {
            if (const int err = rename_bundle_into_place(dirfd, tmp_name, in.bundle_name.c_str())) {
              why = "cannot rename the bundle into place: " + std::string(std::strerror(err));
              ok = false;
            }
          }
          if (ok) tmp_created = false;
        }
      }
      if (!ok && tmp_created) {
        remove_tmp_bundle(dirfd, tmp_name);
        tmp_created = false;
      }
      if (ok) {
        fsync(dirfd);
        try {
          prune(dirfd, r->cfg, in.bundle_name);
        } catch (...) {
        }
        std::string path = r->cfg.dir + "/" + in.bundle_name;
        if (f) GM_WARN("{}; bundle: {}", describe_failure(*f), path);
        else GM_WARN("{} dump written: {}", dump_reason_name(reason), path);
      } else {
        if (f) GM_WARN("{}; could not write the bundle: {} (nothing left behind)", describe_failure(*f), why);
        else GM_WARN("could not write the {} bundle: {} (nothing left behind)", dump_reason_name(reason), why);
      }
    }
  } catch (...) {
    // Out of memory outside the file writing (names, messages): clean up and
    // say so without allocating.
    if (tmp_created && dirfd >= 0) remove_tmp_bundle(dirfd, tmp_name);
    ok = false;
    raw_stderr("could not write the ", dump_reason_name(reason),
               " bundle: out of memory (nothing left behind)");
  }
  dump_slot_release();
  if (dirfd >= 0) close(dirfd);
  errno = saved_errno;
  return ok;
}

bool dumper_busy() { return dump_slot_busy(); }

void dumper_atfork_prepare() {}
void dumper_atfork_parent() {}
void dumper_atfork_child() {
  // Another thread may have been logging at the fork: its lock is gone with it.
  log_reset_after_fork();
  // A dump in progress in another thread of the parent does not exist here;
  // the symbolizer it was using may be half-updated: start a new one.
  if (dump_slot_busy()) {
    if (Symbolizer* fresh = new (std::nothrow) Symbolizer()) g_symbolizer = fresh;
  }
  dump_slot_reset_after_fork();
  g_episodes.reset();
  g_joined_failures.store(0);
  g_dump_seq.store(0);
}

}  // namespace gpumemrec
