#include "shim/base/safe_read.h"

#include <sys/uio.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>

namespace gpumemrec {

namespace {

std::atomic<pid_t> g_pid{0};
std::atomic<bool> g_refused{false};

}  // namespace

bool safe_read(void* dst, const void* src, size_t n) {
  if (n == 0) return true;
  if (src == nullptr || g_refused.load(std::memory_order_relaxed)) return false;
  pid_t pid = g_pid.load(std::memory_order_relaxed);
  if (pid == 0) {
    pid = getpid();
    g_pid.store(pid, std::memory_order_relaxed);
  }
  const int saved = errno;
  iovec local{dst, n};
  iovec remote{const_cast<void*>(src), n};
  const ssize_t got = process_vm_readv(pid, &local, 1, &remote, 1, 0);
  if (got < 0 && (errno == ENOSYS || errno == EPERM)) g_refused.store(true, std::memory_order_relaxed);
  errno = saved;
  return got == ssize_t(n);
}

bool safe_read_available() {
  char probe = 0;
  static const char kByte = 1;
  return safe_read(&probe, &kByte, 1) && probe == 1;
}

void safe_read_atfork_child() { g_pid.store(0, std::memory_order_relaxed); }

}  // namespace gpumemrec
