#include "shim/dump/place/bundle_name.h"

#include <fcntl.h>
#include <stdio.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "shim/base/clock.h"
#include "shim/base/tls.h"

namespace gpumemrec {

std::string bundle_host_part() {
  char host[256] = "";
  if (gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  host[64] = '\0';
  std::string out;
  for (const char* p = host; *p; ++p) {
    const char c = *p;
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
                    (c == '.' && !out.empty());
    out += ok ? c : '-';
  }
  return out.empty() ? "host" : out;
}

std::string bundle_random_part() {
  uint32_t v = 0;
  if (getrandom(&v, sizeof v, GRND_NONBLOCK) != ssize_t(sizeof v)) {
    // No entropy yet (early boot) or no getrandom: still differs between
    // processes and attempts.
    v = uint32_t(monotonic_ns() * 0x9E3779B97F4A7C15ull >> 32) ^ uint32_t(syscall(SYS_gettid)) ^
        uint32_t(realtime_ns());
  }
  char hex[9];
  std::snprintf(hex, sizeof hex, "%08x", v);
  return hex;
}

std::string make_bundle_name(uint64_t realtime_ns, Backend backend, int seq, const std::string& host,
                             const std::string& random) {
  const time_t t = time_t(realtime_ns / 1000000000ull);
  struct tm tm;
  gmtime_r(&t, &tm);
  char stamp[32];
  strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &tm);
  char name[192];
  std::snprintf(name, sizeof name, "oom_dump_%s_%d_%s_%d_%s_%s", stamp, int(getpid()), backend_name(backend), seq,
                host.c_str(), random.c_str());
  return name;
}

namespace {

// A Dekker pair: a claimer counts itself in, then reads the gate; the closer
// shuts the gate, then reads the count. With sequentially consistent order at
// least one of them sees the other, so either no directory is made or the
// closer waits until it exists (and removes it).
std::atomic<bool> g_gate_closed{false};
std::atomic<int> g_in_gate{0};
GM_TLS bool t_in_gate;

struct InGate {
  bool open;
  InGate() {
    t_in_gate = true;
    g_in_gate.fetch_add(1, std::memory_order_seq_cst);
    open = !g_gate_closed.load(std::memory_order_seq_cst);
  }
  ~InGate() {
    g_in_gate.fetch_sub(1, std::memory_order_seq_cst);
    t_in_gate = false;
  }
};

}  // namespace

bool close_tmp_gate(unsigned max_ms) {
  g_gate_closed.store(true, std::memory_order_seq_cst);
  if (t_in_gate) return false;
  const struct timespec ms = {0, 1000000};
  for (unsigned waited = 0; g_in_gate.load(std::memory_order_seq_cst) > 0; ++waited) {
    if (waited >= max_ms) return false;
    nanosleep(&ms, nullptr);
  }
  return true;
}

void reopen_tmp_gate_after_fork() {
  g_in_gate.store(0);
  t_in_gate = false;
  g_gate_closed.store(false);
}

int claim_bundle_name(int dirfd, uint64_t realtime_ns, Backend backend, int seq, std::string* name, char* tmp,
                      size_t tmp_size, std::string (*random)()) {
  const std::string host = bundle_host_part();
  int err = EEXIST;
  for (int attempt = 0; attempt < 16 && err == EEXIST; ++attempt) {
    *name = make_bundle_name(realtime_ns, backend, seq, host, random());
    std::snprintf(tmp, tmp_size, ".tmp-%s", name->c_str());
    InGate gate;
    if (!gate.open) return ECANCELED;
    if (mkdirat(dirfd, tmp, 0700) != 0) {
      err = errno;
      continue;
    }
    struct stat st;
    if (fstatat(dirfd, name->c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
      // A finished bundle of that name (its writer's temporary directory is
      // gone already): ours would collide at the rename.
      unlinkat(dirfd, tmp, AT_REMOVEDIR);
      err = EEXIST;
      continue;
    }
    return 0;
  }
  return err;
}

int rename_bundle_into_place(int dirfd, const char* tmp, const char* name) {
#ifdef SYS_renameat2
  if (syscall(SYS_renameat2, dirfd, tmp, dirfd, name, 1u /* RENAME_NOREPLACE */) == 0) return 0;
  if (errno != EINVAL && errno != ENOSYS) return errno;
#endif
  return renameat(dirfd, tmp, dirfd, name) == 0 ? 0 : errno;
}

}  // namespace gpumemrec
