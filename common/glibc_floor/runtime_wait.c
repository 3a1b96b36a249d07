/* The glibc floor (floor.h): sem_clockwait (glibc 2.30) and sigabbrev_np
   (2.32), which glibc 2.28 does not have. */
#include <errno.h>
#include <stdint.h>
#include <time.h>

#include "common/glibc_floor/floor.h"

int sem_timedwait(void* sem, const struct timespec* abstime); /* forward_libc.c */
int sem_trywait(void* sem);

static int64_t floor_now_ns(clockid_t clock) {
  struct timespec ts;
  clock_gettime(clock, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Without sem_clockwait: sem_timedwait (CLOCK_REALTIME) towards the
   deadline on `clock`, converted again after each wake-up, so that a
   wall-clock step shortens or stretches at most one round. */
FLOOR_HIDDEN int sem_clockwait(void* sem, clockid_t clock, const struct timespec* abstime) {
  typedef int (*Fn)(void*, clockid_t, const struct timespec*);
  static void* cache[2];
  Fn real = (Fn)gmr_floor_newer(&cache[0], "sem_clockwait", "GLIBC_2.34");  /* in libc */
  if (!real) real = (Fn)gmr_floor_newer(&cache[1], "sem_clockwait", "GLIBC_2.30");  /* in libpthread */
  if (real) return real(sem, clock, abstime);
  if (clock == CLOCK_REALTIME) return sem_timedwait(sem, abstime);
  int64_t deadline = (int64_t)abstime->tv_sec * 1000000000 + abstime->tv_nsec;
  for (;;) {
    int64_t left = deadline - floor_now_ns(clock);
    if (left <= 0) {  /* a semaphore that can be taken is taken, deadline or not */
      if (sem_trywait(sem) == 0) return 0;
      if (errno == EAGAIN) errno = ETIMEDOUT;
      return -1;
    }
    int64_t rt = floor_now_ns(CLOCK_REALTIME) + (left < 200000000 ? left : 200000000);
    struct timespec ts = {(time_t)(rt / 1000000000), (long)(rt % 1000000000)};
    if (sem_timedwait(sem, &ts) == 0) return 0;
    if (errno != ETIMEDOUT) return -1;
  }
}

/* The abbreviations glibc's sigabbrev_np gives (signal/siglist.h, glibc
   2.32), for the signals every Linux numbers alike on x86-64. */
static const char* const kAbbrev[] = {
    NULL,   "HUP",  "INT",  "QUIT", "ILL",  "TRAP", "ABRT",   "BUS",  "FPE",   "KILL", "USR1",
    "SEGV", "USR2", "PIPE", "ALRM", "TERM", "STKFLT", "CHLD", "CONT", "STOP", "TSTP", "TTIN",
    "TTOU", "URG",  "XCPU", "XFSZ", "VTALRM", "PROF", "WINCH", "POLL", "PWR", "SYS"};

FLOOR_HIDDEN const char* sigabbrev_np(int sig) {
  static void* cache;
  const char* (*real)(int) = (const char* (*)(int))gmr_floor_newer(&cache, "sigabbrev_np", "GLIBC_2.32");
  if (real) return real(sig);
  return sig > 0 && sig < (int)(sizeof kAbbrev / sizeof kAbbrev[0]) ? kAbbrev[sig] : NULL;
}
