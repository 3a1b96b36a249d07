/* Test helper: stands in for the recorder's gpumemrec_framework_exit()
 * (preloaded before libgpumemrec.so, so it answers whether or not the
 * recorder exports it): writes the digest it is given to the file named by
 * GMR_EXIT_PROBE_OUT. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

__attribute__((visibility("default"))) int gpumemrec_framework_exit(const char* digest, size_t len) {
  const char* path = getenv("GMR_EXIT_PROBE_OUT");
  FILE* f = path ? fopen(path, "wb") : NULL;
  if (!f) return -1;
  size_t n = fwrite(digest, 1, len, f);
  fclose(f);
  return n == len ? 0 : -1;
}
