// The shim's file-descriptor I/O: one write-all and one read-file, both
// restarting on EINTR and allocating nothing but the caller's string.
#pragma once
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <string>

namespace gpumemrec {

// Writes all n bytes (short writes and EINTR retried). Returns 0, or the
// errno of the write that failed (EIO for a write that returned 0).
inline int fd_write_all(int fd, const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return w < 0 ? errno : EIO;
    p += w;
    n -= size_t(w);
  }
  return 0;
}

// Reads up to `max` bytes of an open descriptor into *out (appending).
// Returns false on a read error (what was read stays in *out).
inline bool fd_read_all(int fd, size_t max, std::string* out) {
  char buf[4096];
  while (out->size() < max) {
    size_t want = max - out->size() < sizeof buf ? max - out->size() : sizeof buf;
    ssize_t n = ::read(fd, buf, want);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    if (n == 0) break;
    out->append(buf, size_t(n));
  }
  return true;
}

// Reads at most `max` bytes of `path` (relative to dirfd, or AT_FDCWD),
// never following a symlink in its last component when `nofollow`.
inline std::string read_file_at(int dirfd, const char* path, size_t max, bool nofollow = false) {
  std::string s;
  int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | (nofollow ? O_NOFOLLOW : 0));
  if (fd < 0) return s;
  fd_read_all(fd, max, &s);
  close(fd);
  return s;
}

}  // namespace gpumemrec
