/* The glibc floor (floor.h) for the stat family. Before glibc 2.33, stat,
   fstat, lstat and fstatat were inline functions in <sys/stat.h> calling
   __xstat(_STAT_VER, ...) and the like, and libc.so.6 exported no `stat`
   symbol at all; 2.33 exported them (GLIBC_2.33) and kept __xstat & co. as
   compatibility symbols. _STAT_VER is 1 (_STAT_VER_LINUX) on x86-64
   (sysdeps/unix/sysv/linux/x86/xstatver.h at glibc 2.33), and struct stat is
   struct stat64 there, so the 64 variants are the same calls. */
#include "common/glibc_floor/floor.h"

#define FLOOR_STAT_VER 1

#define FLOOR_XSTAT(name, old, version, params, old_params, args) \
  int gmr_floor_##old old_params;                                              \
  __asm__(".symver gmr_floor_" #old ", " #old "@" version);          \
  FLOOR_HIDDEN int name params { return gmr_floor_##old args; }

FLOOR_XSTAT(stat, __xstat, "GLIBC_2.2.5", (const char* p, void* b), (int v, const char* p, void* b), (FLOOR_STAT_VER, p, b))
FLOOR_XSTAT(stat64, __xstat64, "GLIBC_2.2.5", (const char* p, void* b), (int v, const char* p, void* b), (FLOOR_STAT_VER, p, b))
FLOOR_XSTAT(lstat, __lxstat, "GLIBC_2.2.5", (const char* p, void* b), (int v, const char* p, void* b), (FLOOR_STAT_VER, p, b))
FLOOR_XSTAT(lstat64, __lxstat64, "GLIBC_2.2.5", (const char* p, void* b), (int v, const char* p, void* b), (FLOOR_STAT_VER, p, b))
FLOOR_XSTAT(fstat, __fxstat, "GLIBC_2.2.5", (int fd, void* b), (int v, int fd, void* b), (FLOOR_STAT_VER, fd, b))
FLOOR_XSTAT(fstat64, __fxstat64, "GLIBC_2.2.5", (int fd, void* b), (int v, int fd, void* b), (FLOOR_STAT_VER, fd, b))
FLOOR_XSTAT(fstatat, __fxstatat, "GLIBC_2.4", (int d, const char* p, void* b, int f), (int v, int d, const char* p, void* b, int f), (FLOOR_STAT_VER, d, p, b, f))
FLOOR_XSTAT(fstatat64, __fxstatat64, "GLIBC_2.4", (int d, const char* p, void* b, int f), (int v, int d, const char* p, void* b, int f), (FLOOR_STAT_VER, d, p, b, f))
