// The calling thread's CPU time: a system call, not the vDSO (background
// work measuring what it spends; never the hot path).
#pragma once
#include <time.h>

#include <cstdint>

namespace gpumemrec {

inline uint64_t thread_cpu_ns() {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

}  // namespace gpumemrec
