#include "shim/base/safe_read.h"

#include <sys/uio.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

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

void SafePages::clear() {
  for (uintptr_t& b : base_) b = 0;
  next_ = 0;
}

// The copy of the page at `base`, read now if it is not there (the oldest
// copy makes room); null when the page is not mapped.
const char* SafePages::page(uintptr_t base) {
  for (size_t i = 0; i < kPages; ++i)
    if (base_[i] == base) return data_[i];
  const uint32_t slot = next_;
  next_ = (next_ + 1) % kPages;
  base_[slot] = 0;
  if (!safe_read(data_[slot], reinterpret_cast<const void*>(base), kPage)) return nullptr;
  base_[slot] = base;
  return data_[slot];
}

bool SafePages::read(void* dst, const void* src, size_t n) {
  uintptr_t at = reinterpret_cast<uintptr_t>(src);
  if (at == 0 || at + n < at) return false;
  char* out = static_cast<char*>(dst);
  while (n > 0) {
    const uintptr_t base = at & ~uintptr_t(kPage - 1);
    const size_t off = at - base, take = n < kPage - off ? n : kPage - off;
    const char* p = page(base);
    if (!p) return false;
    std::memcpy(out, p + off, take);
    out += take;
    at += take;
    n -= take;
  }
  return true;
}

}  // namespace gpumemrec
