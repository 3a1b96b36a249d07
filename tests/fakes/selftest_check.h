// Minimal assertion helpers for the fake-driver self-tests.
#pragma once

#include <cstdio>
#include <cstdlib>

static int g_selftest_failures = 0;

#define CHECK(cond)                                                        \
  do {                                                                     \
    if (!(cond)) {                                                         \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
      ++g_selftest_failures;                                               \
    }                                                                      \
  } while (0)

#define CHECK_EQ(a, b)                                                                          \
  do {                                                                                          \
    const long long va_ = static_cast<long long>(a), vb_ = static_cast<long long>(b);           \
    if (va_ != vb_) {                                                                           \
      fprintf(stderr, "%s:%d: CHECK_EQ failed: %s == %s (%lld vs %lld)\n", __FILE__, __LINE__, #a, #b, \
              va_, vb_);                                                                        \
      ++g_selftest_failures;                                                                    \
    }                                                                                           \
  } while (0)

static inline int selftest_finish(const char* name) {
  if (g_selftest_failures) {
    fprintf(stderr, "%s: %d check(s) failed\n", name, g_selftest_failures);
    return 1;
  }
  printf("%s: all checks passed\n", name);
  return 0;
}
