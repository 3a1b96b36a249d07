// The simulated cards. Every figure's source is in the entry's `source` and
// in docs/simulate.md; PROVISIONAL entries are being calibrated.
#include <cstring>

#include "core/profile.h"

namespace sim {
namespace {

constexpr uint64_t MiB = 1ull << 20;

const Profile kProfiles[] = {
    {"h100-80gb", "NVIDIA H100 80GB HBM3", 84942979072ull, 81559 * MiB, 543162368ull, 9240576ull,
     9, 0, 132, 52428800, 52428800 * 3 / 4, 2048, 32, 233472, 232448, 65536, 5120, 1980000, 2619000, 0x2330, 3,
     true, false, "PROVISIONAL"},
    {"h200-141gb", "NVIDIA H200", 150109880320ull, 143771 * MiB, 543162368ull, 9240576ull,
     9, 0, 132, 62914560, 62914560 * 3 / 4, 2048, 32, 233472, 232448, 65536, 6144, 1980000, 3201000, 0x2335, 3,
     true, false, "PROVISIONAL"},
};

}  // namespace

const Profile* profiles(size_t* count) {
  *count = sizeof(kProfiles) / sizeof(kProfiles[0]);
  return kProfiles;
}

const Profile* find_profile(const char* id, size_t len) {
  for (const Profile& p : kProfiles)
    if (strlen(p.id) == len && memcmp(p.id, id, len) == 0) return &p;
  return nullptr;
}

bool parse_simulate(const char* spec, const Profile** profile, int* count) {
  if (spec == nullptr) return false;
  const char* colon = strchr(spec, ':');
  const size_t len = colon != nullptr ? static_cast<size_t>(colon - spec) : strlen(spec);
  const Profile* p = find_profile(spec, len);
  if (p == nullptr) return false;
  int n = 1;
  if (colon != nullptr) {
    const char* s = colon + 1;
    if (*s == '\0') return false;
    n = 0;
    for (; *s != '\0'; ++s) {
      if (*s < '0' || *s > '9' || n > 64) return false;
      n = n * 10 + (*s - '0');
    }
    if (n < 1 || n > 64) return false;
  }
  *profile = p;
  *count = n;
  return true;
}

}  // namespace sim
