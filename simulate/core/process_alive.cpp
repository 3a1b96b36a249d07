#include "core/process_alive.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace sim {
namespace {

// Fields 3 (state) and 22 (start time) of /proc/<pid>/stat. False when the
// process is gone (or its entry cannot be read).
bool read_stat(pid_t pid, char* state, uint64_t* start) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/stat", static_cast<int>(pid));
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[1024];
  const ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return false;
  buf[n] = '\0';
  // The command name (field 2) is in parentheses and may hold spaces or
  // parentheses: count the fields from the last ')'.
  const char* p = strrchr(buf, ')');
  if (p == nullptr || p[1] != ' ' || p[2] == '\0') return false;
  *state = p[2];
  int field = 2;
  for (++p; *p != '\0' && field < 22; ++p)
    if (*p == ' ') ++field;
  if (field != 22) return false;
  *start = strtoull(p, nullptr, 10);
  return true;
}

}  // namespace

uint64_t process_start_time(pid_t pid) {
  char state = 0;
  uint64_t start = 0;
  return pid > 0 && read_stat(pid, &state, &start) ? start : 0;
}

bool process_alive(pid_t pid, uint64_t start_time) {
  if (pid <= 0) return false;
  if (kill(pid, 0) != 0 && errno == ESRCH) return false;
  char state = 0;
  uint64_t start = 0;
  // Unreadable (another user's, or gone this instant): what kill() said.
  if (!read_stat(pid, &state, &start)) return kill(pid, 0) == 0 || errno != ESRCH;
  if (state == 'Z' || state == 'X') return false;  // exited, not yet reaped
  return start_time == 0 || start == start_time;
}

}  // namespace sim
