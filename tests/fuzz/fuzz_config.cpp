// libFuzzer target: the configuration parser (common/config.h). The input is
// split on NUL bytes into values for the GPUMEMREC_ variables in the order of
// config_vars(); a part that is exactly "\x01" leaves its variable unset.
// Checks the documented invariants: every field in range, at most one
// warning per variable and each naming it, and the helpers never crash.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "common/config.h"

using namespace gpumemrec;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto& vars = config_vars();
  std::vector<std::string> values;
  std::vector<bool> set;
  size_t start = 0;
  for (size_t i = 0; i <= size && values.size() < vars.size(); ++i) {
    if (i == size || data[i] == 0) {
      std::string v(reinterpret_cast<const char*>(data) + start, i - start);
      set.push_back(v != "\x01");
      values.push_back(v);
      start = i + 1;
    }
  }
  auto get = [&](const char* name) -> const char* {
    for (size_t k = 0; k < values.size(); ++k)
      if (set[k] && std::strcmp(name + 10, vars[k].name) == 0) return values[k].c_str();
    return nullptr;
  };
  std::vector<std::string> warnings;
  Config c = parse_config(get, &warnings);
  if (warnings.size() > vars.size()) abort();
  for (const auto& w : warnings)
    if (w.rfind("GPUMEMREC_", 0) != 0 || w.find("default") == std::string::npos) abort();
  if (c.ring_events < 16 || c.ring_events > (uint64_t(1) << 25)) abort();
  if (c.stack_depth < 0 || c.stack_depth > 256) abort();
  if (c.episode_ms > 86400000) abort();
  if (c.dir.empty() || c.dir.size() > 3000) abort();
  if (c.dump_signal < 0 || c.dump_signal > 64) abort();
  static const char* levels[] = {"trace", "debug", "info", "warn", "error", "critical", "off"};
  bool level_ok = false;
  for (auto* l : levels) level_ok = level_ok || c.log_level == l;
  if (!level_ok) abort();

  // The helpers on the whole input as one string.
  std::string all(reinterpret_cast<const char*>(data), size);
  uint64_t n = 0;
  if (parse_size(all, &n)) (void)format_bytes(n);
  bool b = false;
  (void)parse_bool(all, &b);
  (void)parse_uint(all, UINT64_MAX, &n);
  const int sig = parse_signal(all);
  if (sig == 0 || sig < -1 || sig > 64) abort();
  uint64_t limits[kMaxDevices] = {};
  if (parse_limit(all, limits)) {
    bool any = false;
    for (auto l : limits) any = any || l != 0;
    if (!any) abort();
  }
  return 0;
}
