/* The glibc floor (floor.h) for dlsym and dlclose: only in the command-line
   programs and the fake GPU libraries. libgpumemrec.so defines both itself (hooks/dlsym_hook.cpp,
   hooks/dlclose_hook.cpp) and finds glibc's with dlvsym. */
#include "common/glibc_floor/floor.h"

FLOOR_FORWARD(void*, dlsym, "GLIBC_2.2.5", (void* h, const char* s), (h, s))
FLOOR_FORWARD(int, dlclose, "GLIBC_2.2.5", (void* h), (h))
