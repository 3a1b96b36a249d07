#include "core/config.h"

#include "core/exports.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace sim {

// Overridden by a simulated library's generated table (simulate/CMakeLists.txt);
// here, not in exports.cpp, so that a library without the table (the tests'
// HIP runtime) links.
__attribute__((weak)) extern const char* const kLibraryName = "";

namespace {

constexpr uint64_t kFakeCapacity = 1ull << 30;

bool parse_u64(const char* s, uint64_t* out) {
  if (s == nullptr || *s == '\0') return false;
  uint64_t v = 0;
  for (; *s != '\0'; ++s) {
    if (*s < '0' || *s > '9') return false;
    const uint64_t d = static_cast<uint64_t>(*s - '0');
    if (v > (UINT64_MAX - d) / 10) return false;
    v = v * 10 + d;
  }
  *out = v;
  return true;
}

void say_bad_spec(const char* spec) {
  char line[512];
  const int n = snprintf(line, sizeof line,
                         "gpumemrec simulate: GPUMEMREC_SIMULATE=%.100s names no simulated card "
                         "(`gpumemrec simulate --list` lists them; NAME or NAME:COUNT, COUNT 1-64); "
                         "no device is presented\n",
                         spec);
  if (n > 0) (void)!write(2, line, static_cast<size_t>(n) < sizeof line ? n : sizeof line - 1);
}

Config read_config() {
  Config c;
  c.capacity = kFakeCapacity;
  if (const char* spec = getenv("GPUMEMREC_SIMULATE")) {
    const Profile* p = nullptr;
    int n = 0;
    if (parse_simulate(spec, &p, &n)) {
      c.profile = p;
      c.devices = n;
      c.capacity = p->total_bytes;
      c.context_bytes = p->context_bytes;
      c.reserved_bytes = p->driver_reserved_bytes;
    } else {
      c.bad_spec = true;
      c.devices = 0;
      if (strcmp(kLibraryName, "libcuda.so.1") == 0) say_bad_spec(spec);  // once per process: the driver says it
    }
  }
  uint64_t v = 0;
  if (parse_u64(getenv("FAKEGPU_CAPACITY"), &v)) c.capacity = v;
  if (!c.bad_spec && parse_u64(getenv("FAKEGPU_DEVICES"), &v))
    c.devices = v > kMaxDevices ? kMaxDevices : static_cast<int>(v);
  if (parse_u64(getenv("FAKEGPU_RESERVE_VA"), &v) && v == 0) c.reserve_va = false;
  if (parse_u64(getenv("FAKEGPU_CONTEXT_BYTES"), &v)) c.context_bytes = v;
  if (parse_u64(getenv("FAKEGPU_OTHERS_BYTES"), &v)) c.others_bytes = v;
  return c;
}

}  // namespace

const Config& config() {
  static const Config cfg = read_config();
  return cfg;
}

void device_name(int device, char* out, int len) {
  if (out == nullptr || len <= 0) return;
  const Config& c = config();
  if (c.profile != nullptr)
    snprintf(out, static_cast<size_t>(len), "%s", c.profile->name);
  else
    snprintf(out, static_cast<size_t>(len), "Fake GPU %d", device);
}

}  // namespace sim
