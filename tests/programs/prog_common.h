// Small helpers shared by the test programs (argument parsing, bookkeeping of
// live allocations, output). Plain C++; no GPU or gpumemrec headers.
//
// Output conventions (one line per event, stdout, line-buffered):
//   START prog=<name> api=<api> chunk=<bytes>
//   ALLOC api=<api> ptr=0x<hex> size=<bytes> rc=0
//   FREE api=<api> ptr=0x<hex> size=<bytes> rc=0
//   OOM api=<api> size=<bytes> rc=<code> name=<error name> live_count=<n> live_bytes=<bytes>
//   DONE live_count=<n> live_bytes=<bytes>
//   ERROR ... (then exit 1)
#pragma once

#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define PROG_NOINLINE __attribute__((noinline, noclone))

struct LiveAlloc {
  uint64_t ptr;   // device address or VMM handle
  uint64_t size;  // bytes as the fake ledger accounts them
  uint64_t aux;   // program-specific (e.g. VA of a VMM mapping)
};

struct LiveSet {
  std::vector<LiveAlloc> items;
  uint64_t bytes = 0;

  void add(uint64_t ptr, uint64_t size, uint64_t aux = 0) {
    items.push_back(LiveAlloc{ptr, size, aux});
    bytes += size;
  }
  LiveAlloc take(size_t index) {
    LiveAlloc a = items[index];
    items.erase(items.begin() + static_cast<std::ptrdiff_t>(index));
    bytes -= a.size;
    return a;
  }
};

inline void prog_init_stdout() { setvbuf(stdout, nullptr, _IOLBF, 0); }

inline uint64_t prog_parse_size(const char* s, uint64_t def) {
  if (s == nullptr || *s == '\0') return def;
  char* end = nullptr;
  unsigned long long v = strtoull(s, &end, 0);
  if (end == s || *end != '\0' || v == 0) {
    fprintf(stderr, "bad size '%s'\n", s);
    exit(2);
  }
  return v;
}

inline void prog_print_alloc(const char* api, uint64_t ptr, uint64_t size) {
  printf("ALLOC api=%s ptr=0x%" PRIx64 " size=%" PRIu64 " rc=0\n", api, ptr, size);
}

inline void prog_print_free(const char* api, uint64_t ptr, uint64_t size, int rc) {
  printf("FREE api=%s ptr=0x%" PRIx64 " size=%" PRIu64 " rc=%d\n", api, ptr, size, rc);
}

inline void prog_print_oom(const char* api, uint64_t size, int rc, const char* name, const LiveSet& live) {
  printf("OOM api=%s size=%" PRIu64 " rc=%d name=%s live_count=%zu live_bytes=%" PRIu64 "\n", api, size, rc,
         name ? name : "?", live.items.size(), live.bytes);
}

inline void prog_print_done(const LiveSet& live) {
  printf("DONE live_count=%zu live_bytes=%" PRIu64 "\n", live.items.size(), live.bytes);
}

[[noreturn]] inline void prog_fail(const char* what, int rc) {
  printf("ERROR %s rc=%d\n", what, rc);
  fflush(stdout);
  exit(1);
}

// Safety net: a program that never reaches OOM fails instead of looping forever.
constexpr int kMaxIterations = 1000000;
