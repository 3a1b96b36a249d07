#include "common/format.h"

#include <cstdio>

namespace gpumemrec {

std::string format_bytes(uint64_t bytes) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double v = double(bytes);
  int u = 0;
  while (v >= 1024.0 && u < 6) {
    v /= 1024.0;
    ++u;
  }
  char buf[48];
  if (u == 0) std::snprintf(buf, sizeof buf, "%llu B", (unsigned long long)bytes);
  else std::snprintf(buf, sizeof buf, "%.2f %s", v, kUnits[u]);
  return buf;
}

std::string format_bytes_signed(int64_t delta) {
  if (delta < 0) return "-" + format_bytes(uint64_t(0) - uint64_t(delta));
  return "+" + format_bytes(uint64_t(delta));
}

}  // namespace gpumemrec
