#include "common/status_dir.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace gpumemrec::status {

namespace {

// Up to `cap` - 1 bytes of a small file (/proc), NUL-terminated; the count.
ssize_t read_small(const char* path, char* buf, size_t cap) {
  const int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return -1;
  ssize_t n = 0;
  while (size_t(n) + 1 < cap) {
    const ssize_t r = read(fd, buf + n, cap - 1 - size_t(n));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    n += r;
  }
  close(fd);
  buf[n] = '\0';
  return n;
}

}  // namespace

std::string resolve_dir(const std::string& configured, unsigned uid) {
  if (!configured.empty()) return configured;
  struct stat st;
  const bool shm = stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode);
  return std::string(shm ? "/dev/shm" : "/tmp") + "/gpumemrec-" + std::to_string(uid);
}

int open_dir(const char* path, bool create, std::string* why) {
  if (create && mkdir(path, 0700) != 0 && errno != EEXIST) {
    *why = std::string("cannot create it: ") + std::strerror(errno);
    return -1;
  }
  const int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    *why = errno == ELOOP || errno == ENOTDIR ? "not a directory (a link or a file)" : std::strerror(errno);
    return -1;
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISDIR(st.st_mode)) {
    *why = "not a directory";
  } else if (st.st_uid != geteuid()) {
    *why = "owned by uid " + std::to_string(st.st_uid) + ", not by this user";
  } else if ((st.st_mode & 077) != 0) {
    char mode[16];
    std::snprintf(mode, sizeof mode, "%04o", unsigned(st.st_mode & 07777));
    *why = std::string("open to other users (mode ") + mode + ", 0700 expected)";
  } else {
    return fd;
  }
  close(fd);
  return -1;
}

std::string file_name(int pid, uint64_t start_ticks) {
  return std::to_string(pid) + "-" + std::to_string(start_ticks) + kFileSuffix;
}

bool parse_file_name(const char* name, int* pid, uint64_t* start_ticks) {
  const char* p = name;
  uint64_t a = 0, b = 0;
  int digits = 0;
  for (; *p >= '0' && *p <= '9' && digits < 10; ++p, ++digits) a = a * 10 + uint64_t(*p - '0');
  if (digits == 0 || *p != '-' || a == 0 || a > 0x7fffffff) return false;
  ++p;
  digits = 0;
  for (; *p >= '0' && *p <= '9' && digits < 19; ++p, ++digits) b = b * 10 + uint64_t(*p - '0');
  if (digits == 0 || std::strcmp(p, kFileSuffix) != 0) return false;
  *pid = int(a);
  *start_ticks = b;
  return true;
}

bool process_start_ticks(int pid, uint64_t* out) {
  if (pid <= 0) return false;
  char path[48], buf[1024];
  std::snprintf(path, sizeof path, "/proc/%d/stat", pid);
  if (read_small(path, buf, sizeof buf) <= 0) return false;
  // "pid (comm) state ppid ...": comm may hold spaces and ')', so count the
  // fields after the last ')'; starttime is field 22, the 20th after it.
  const char* p = std::strrchr(buf, ')');
  if (!p) return false;
  ++p;
  for (int field = 3; field <= 22; ++field) {
    while (*p == ' ') ++p;
    if (!*p) return false;
    if (field == 22) {
      char* end = nullptr;
      errno = 0;
      const unsigned long long v = std::strtoull(p, &end, 10);
      if (errno != 0 || end == p) return false;
      *out = v;
      return true;
    }
    while (*p && *p != ' ') ++p;
  }
  return false;
}

bool read_boot_id(char (&out)[kBootIdBytes]) {
  std::memset(out, 0, sizeof out);
  char buf[kBootIdBytes + 8];
  const ssize_t n = read_small("/proc/sys/kernel/random/boot_id", buf, sizeof buf);
  if (n <= 0) return false;
  size_t len = 0;
  while (len < size_t(n) && len + 1 < sizeof out && buf[len] != '\n') ++len;
  std::memcpy(out, buf, len);
  return len > 0;
}

uint64_t own_pid_namespace() {
  struct stat st;
  return stat("/proc/self/ns/pid", &st) == 0 ? uint64_t(st.st_ino) : 0;
}

}  // namespace gpumemrec::status
