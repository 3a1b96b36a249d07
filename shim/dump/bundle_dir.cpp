#include "shim/dump/bundle_dir.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>

#include "shim/base/log.h"

#include "shim/dump/bundle_name.h"

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

std::string tmp_bundle_name(const std::string& name) { return ".tmp-" + name; }

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

void remove_bundle_dir(int dirfd, const char* name) {
  int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd >= 0) {
    for (int pass = 0; pass < 64 && unlink_listed(fd); ++pass) {
    }
    close(fd);
  }
  unlinkat(dirfd, name, AT_REMOVEDIR);
}

bool TmpBundle::create(std::string* why) {
  if (mkdirat(dirfd_, tmp_.c_str(), 0700) != 0) {
    *why = "cannot create " + tmp_ + ": " + std::strerror(errno);
    return false;
  }
  created_ = true;
  fd_ = openat(dirfd_, tmp_.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd_ < 0) {
    *why = "cannot open " + tmp_ + ": " + std::strerror(errno);
    return false;
  }
  return true;
}

bool TmpBundle::claim(uint64_t realtime_ns, Backend backend, int seq, std::string* why) {
  char tmp[256];
  if (const int err = claim_bundle_name(dirfd_, realtime_ns, backend, seq, &name_, tmp, sizeof tmp)) {
    *why = std::string("cannot create a bundle directory: ") + std::strerror(err);
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
  close(fd_);
  fd_ = -1;
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

std::vector<BundleOnDisk> list_bundles(int dirfd) {
  std::vector<BundleOnDisk> out;
  // A descriptor of its own (a dup would share, and leave at the end, the
  // caller's directory offset).
  int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return out;
  DIR* d = fdopendir(fd);
  if (!d) {
    close(fd);
    return out;
  }
  while (struct dirent* e = readdir(d)) {
    if (std::strncmp(e->d_name, "oom_dump_", 9) != 0) continue;
    struct stat st;
    if (fstatat(dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode)) continue;
    if (st.st_uid != geteuid()) continue;
    out.push_back({e->d_name, st.st_mtime, bundle_bytes(dirfd, e->d_name)});
  }
  closedir(d);
  return out;
}

std::vector<std::string> bundles_to_prune(std::vector<BundleOnDisk> bundles, uint64_t max_dumps,
                                          uint64_t max_total_mb, const std::string& keep) {
  std::vector<std::string> out;
  if (max_dumps == 0 && max_total_mb == 0) return out;
  std::sort(bundles.begin(), bundles.end(), [](const BundleOnDisk& a, const BundleOnDisk& b) {
    return a.mtime != b.mtime ? a.mtime < b.mtime : a.name < b.name;
  });
  uint64_t total = 0;
  for (auto& b : bundles) total += b.bytes;
  const uint64_t max_bytes = max_total_mb << 20;
  size_t count = bundles.size();
  for (auto& b : bundles) {
    const bool too_many = max_dumps != 0 && count > max_dumps;
    const bool too_big = max_total_mb != 0 && total > max_bytes;
    if (!too_many && !too_big) break;
    if (b.name == keep) continue;
    out.push_back(b.name);
    total -= b.bytes;
    --count;
  }
  return out;
}

void prune_bundles(int dirfd, const Config& c, const std::string& keep) {
  if (c.max_dumps == 0 && c.max_total_mb == 0) return;
  for (const std::string& name : bundles_to_prune(list_bundles(dirfd), c.max_dumps, c.max_total_mb, keep)) {
    remove_bundle_dir(dirfd, name.c_str());
    GM_INFO("pruned old bundle {}", name);
  }
}

}  // namespace gpumemrec
