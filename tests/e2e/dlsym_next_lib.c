/* Two copies of this file are built, as libnexta.so (NEXT_NAME 'A') and
 * libnextb.so ('B'). Each defines gm_probe() and asks glibc for the *next*
 * definition after itself: a dlsym wrapper that forgot who called it would
 * give a different answer. */
#define _GNU_SOURCE
#include <dlfcn.h>

char gm_probe(void) { return NEXT_NAME; }

char NEXT_FN(void) {
  char (*next)(void) = (char (*)(void))dlsym(RTLD_NEXT, "gm_probe");
  return next ? next() : '-';
}
