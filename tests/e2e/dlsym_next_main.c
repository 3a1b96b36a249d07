/* RTLD_NEXT / RTLD_DEFAULT must answer as if the shim were not there. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>

char gm_probe(void) { return 'E'; }
char next_from_a(void);
char next_from_b(void);

int main(void) {
  char (*def)(void) = (char (*)(void))dlsym(RTLD_DEFAULT, "gm_probe");
  char (*next)(void) = (char (*)(void))dlsym(RTLD_NEXT, "gm_probe");
  void* missing = dlsym(RTLD_NEXT, "gm_no_such_symbol");
  const char* err = dlerror();
  printf("default=%c next_from_main=%c next_from_a=%c next_from_b=%c missing=%s err=%s\n", def ? def() : '-',
         next ? next() : '-', next_from_a(), next_from_b(), missing ? "found" : "null", err ? "set" : "none");
  return 0;
}
