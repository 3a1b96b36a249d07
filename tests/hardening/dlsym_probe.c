// dlsym_probe: what dlsym(RTLD_DEFAULT, name) answers, for each name on the
// command line, and which object defines the answer.
//
//   dlsym_probe [--load libcuda.so.1] name...
// Output: one line per name: "<name> null" or "<name> <object basename>".
// The recorder must never change these answers, except
// that its own wrapper may answer where the real function exists after it.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char** argv) {
  int i = 1;
  if (argc > 2 && !strcmp(argv[1], "--load")) {
    if (!dlopen(argv[2], RTLD_NOW | RTLD_GLOBAL)) printf("LOAD failed %s\n", argv[2]);
    i = 3;
  }
  for (; i < argc; ++i) {
    void* p = dlsym(RTLD_DEFAULT, argv[i]);
    Dl_info info;
    const char* obj = "?";
    if (p && dladdr(p, &info) && info.dli_fname) {
      const char* slash = strrchr(info.dli_fname, '/');
      obj = slash ? slash + 1 : info.dli_fname;
    }
    printf("%s %s\n", argv[i], p ? obj : "null");
  }
  return 0;
}
