#include "tools/top_source.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <memory>

#include "common/status_dir.h"

namespace gpumemrec::cli {

namespace {

constexpr int kReadTries = 5;

struct Fd {
  int fd;
  explicit Fd(int f) : fd(f) {}
  ~Fd() {
    if (fd >= 0) close(fd);
  }
};

bool pread_all(int fd, void* buf, size_t n, off_t at) {
  size_t done = 0;
  while (done < n) {
    const ssize_t r = pread(fd, static_cast<char*>(buf) + done, n - done, at + off_t(done));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    done += size_t(r);
  }
  return true;
}

// The region's bytes with the sequence lock: seq, the whole file, seq again,
// the same even value each time. `*bytes` is how much the file held.
bool read_consistent(int fd, size_t size, std::vector<char>* buf, std::string* why) {
  buf->resize(size);
  for (int tries = 0; tries < kReadTries; ++tries) {
    uint64_t before = 0, after = 0;
    if (!pread_all(fd, &before, sizeof before, off_t(offsetof(status::Region, seq))) ||
        !pread_all(fd, buf->data(), size, 0) ||
        !pread_all(fd, &after, sizeof after, off_t(offsetof(status::Region, seq)))) {
      *why = "truncated while read";
      return false;
    }
    // Not a region at all: no lock to wait for (read_region says what it is).
    if (std::memcmp(buf->data(), status::kMagic, sizeof status::kMagic) != 0) return true;
    uint64_t copied = 0;
    std::memcpy(&copied, buf->data() + offsetof(status::Region, seq), sizeof copied);
    if (before == after && copied == before && (before & 1) == 0) return true;
    const timespec pause{0, 1000000};  // the writer's update takes microseconds
    nanosleep(&pause, nullptr);
  }
  *why = "being written on every try";
  return false;
}

// A file the region of a process may be: a regular file of this user, closed
// to others, of exactly the region's size ("" when it is).
std::string check_file(const struct stat& st) {
  if (!S_ISREG(st.st_mode)) return "not a regular file";
  if (st.st_uid != getuid()) return "owned by uid " + std::to_string(st.st_uid);
  if ((st.st_mode & 077) != 0) return "readable or writable by others";
  if (st.st_size < off_t(sizeof(status::Region)))
    return "truncated (" + std::to_string(st.st_size) + " of " + std::to_string(sizeof(status::Region)) + " bytes)";
  if (st.st_size > off_t(sizeof(status::Region)))
    return "size " + std::to_string(st.st_size) + " (" + std::to_string(sizeof(status::Region)) + " expected)";
  return "";
}

bool gone_for_good(const std::string& why) {
  return why == "process gone" || why == "left from an earlier boot";
}

}  // namespace

uint64_t top_mono_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

TopSource::TopSource(std::string dir, std::vector<int> pids) : dir_(std::move(dir)), pids_(std::move(pids)) {
  char boot[status::kBootIdBytes];
  if (status::read_boot_id(boot)) boot_id_ = boot;
  pid_ns_ = status::own_pid_namespace();
}

bool TopSource::wanted(int pid) const {
  return pids_.empty() || std::find(pids_.begin(), pids_.end(), pid) != pids_.end();
}

void TopSource::read_one(int dfd, const char* name, const status::Expect& base, TopSnapshot* out) {
  int pid = 0;
  uint64_t ticks = 0;
  if (!status::parse_file_name(name, &pid, &ticks) || !wanted(pid)) return;
  auto skip = [&](const std::string& why) { out->skipped.push_back({name, pid, why}); };
  Fd f(openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY));
  if (f.fd < 0) return skip(errno == ELOOP ? "a symbolic link" : std::string("cannot open: ") + std::strerror(errno));
  struct stat st;
  if (fstat(f.fd, &st) != 0) return skip("cannot stat it");
  std::string why = check_file(st);
  if (!why.empty()) return skip(why);
  std::vector<char> buf;
  if (!read_consistent(f.fd, sizeof(status::Region), &buf, &why)) return skip(why);
  TopProcess p;
  if (!status::read_region(buf.data(), buf.size(), &p.v, &why)) return skip(why);
  status::Expect e = base;
  e.pid = pid;
  e.start_ticks = ticks;
  uint64_t now_ticks = 0;
  e.alive = status::process_start_ticks(pid, &now_ticks) && now_ticks == ticks;
  why = status::check_identity(p.v, e);
  if (!why.empty()) {
    // Its name can never be a running process's again: it goes.
    if (gone_for_good(why) && (p.v.pid_ns == pid_ns_ || why != "process gone")) unlinkat(dfd, name, 0);
    return skip(why);
  }
  p.file = name;
  p.dev = st.st_dev;
  p.ino = st.st_ino;
  out->processes.push_back(std::move(p));
}

TopSnapshot TopSource::read() {
  TopSnapshot out;
  out.mono_ns = top_mono_ns();
  timespec rt{};
  clock_gettime(CLOCK_REALTIME, &rt);
  out.time = double(rt.tv_sec) + double(rt.tv_nsec) / 1e9;
  std::string why;
  const int dfd = status::open_dir(dir_.c_str(), false, &why);
  if (dfd < 0) {
    if (errno != ENOENT) out.skipped.push_back({dir_, 0, "the directory: " + why});
  } else {
    status::Expect base;
    base.uid = uint32_t(getuid());
    base.boot_id = boot_id_;
    base.pid_ns = pid_ns_;
    base.now_mono_ns = out.mono_ns;
    std::unique_ptr<DIR, int (*)(DIR*)> d(fdopendir(dfd), closedir);
    if (!d) close(dfd);
    for (dirent* ent = d ? readdir(d.get()) : nullptr; ent; ent = readdir(d.get()))
      if (ent->d_name[0] != '.') read_one(dirfd(d.get()), ent->d_name, base, &out);
  }
  std::sort(out.processes.begin(), out.processes.end(),
            [](const TopProcess& a, const TopProcess& b) { return a.v.pid < b.v.pid; });
  for (int pid : pids_) {
    const bool found = std::any_of(out.processes.begin(), out.processes.end(), [&](const TopProcess& p) { return p.v.pid == pid; }) ||
                       std::any_of(out.skipped.begin(), out.skipped.end(), [&](const TopSkipped& s) { return s.pid == pid; });
    if (!found) out.skipped.push_back({"", pid, "no status region (not running with the recorder, or GPUMEMREC_STATUS=0)"});
  }
  return out;
}

bool TopSource::watch(const TopProcess& p, uint64_t until_mono_ns) const {
  if (p.v.watch_until_mono_ns >= until_mono_ns) return true;
  std::string why;
  const int dfd = status::open_dir(dir_.c_str(), false, &why);
  if (dfd < 0) return false;
  Fd d(dfd);
  Fd f(openat(dfd, p.file.c_str(), O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY));
  struct stat st;
  if (f.fd < 0 || fstat(f.fd, &st) != 0 || st.st_dev != p.dev || st.st_ino != p.ino || !check_file(st).empty())
    return false;
  return pwrite(f.fd, &until_mono_ns, sizeof until_mono_ns, off_t(offsetof(status::Region, watch_until_mono_ns))) ==
         ssize_t(sizeof until_mono_ns);
}

std::string TopSource::request_dump(const TopProcess& p) const {
  const int sig = p.v.dump_signal;
  const std::string who = "pid " + std::to_string(p.v.pid);
  if (sig <= 0) return who + " has no dump signal: run it with GPUMEMREC_DUMP_SIGNAL=USR2 (or gpumemrec run --dump-signal USR2)";
  uint64_t ticks = 0;
  if (!status::process_start_ticks(p.v.pid, &ticks) || ticks != p.v.start_ticks) return who + " is gone";
  if (kill(p.v.pid, sig) != 0) return who + ": cannot send signal " + std::to_string(sig) + ": " + std::strerror(errno);
  const char* name = sigabbrev_np(sig);
  return "bundle requested from " + who + " (SIG" + (name ? name : std::to_string(sig).c_str()) + "): in " +
         (p.v.dump_dir.empty() ? std::string("its GPUMEMREC_DIR") : p.v.dump_dir);
}

}  // namespace gpumemrec::cli
