// Configuration: environment variables with the GPUMEMREC_ prefix only.
// Parsed once at start-up by the shim and by `gpumemrec run` (to validate
// what it passes on). A malformed value yields one warning and the default.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/format.h"  // format_bytes (kept visible for older includers)

namespace gpumemrec {

constexpr int kMaxDevices = 64;
// Largest GPUMEMREC_STACK_DEPTH accepted: the shim's stack buffers are sized
// from it (static_asserts in shim/record/).
constexpr int kMaxStackDepth = 256;

// Which unwinder takes native stacks (shim/record/stack_capture.h).
enum class Unwinder : uint8_t {
  kAuto,     // the system's libunwind.so.8, else the copy beside the library, else glibc's backtrace
  kSystem,   // the system's libunwind.so.8 only (else glibc's backtrace)
  kBundled,  // the copy beside the library only (else glibc's backtrace)
  kGlibc,    // glibc's backtrace
};

struct Config {
  std::string dir = "./gpumemrec-dumps";  // GPUMEMREC_DIR
  uint64_t ring_events = 65536;           // GPUMEMREC_RING_EVENTS
  int stack_depth = 32;                   // GPUMEMREC_STACK_DEPTH (0 = off)
  Unwinder unwinder = Unwinder::kAuto;    // GPUMEMREC_UNWINDER
  uint64_t episode_ms = 2000;             // GPUMEMREC_EPISODE_MS
  bool keep_recovered = false;            // GPUMEMREC_RECOVERED=keep (default count)
  uint64_t max_dumps = 5;                 // GPUMEMREC_MAX_DUMPS (0 = no count limit)
  uint64_t max_total_mb = 256;            // GPUMEMREC_MAX_TOTAL_MB (0 = no size limit)
  std::string log_level = "warn";         // GPUMEMREC_LOG_LEVEL
  bool disable = false;                   // GPUMEMREC_DISABLE
  bool python_stacks = true;              // GPUMEMREC_PYTHON_STACKS
  // The Python start-up hook (docs/python-hook.md): the recorder's own
  // sitecustomize, for PyTorch's and JAX's views at an out-of-memory.
  bool python_hook = true;                // GPUMEMREC_PYTHON_HOOK
  uint64_t torch_history = 0;             // GPUMEMREC_TORCH_HISTORY (0 = off; read by the hook)
  uint64_t roles_budget_ms = 1000;        // GPUMEMREC_ROLES_BUDGET_MS (read by the hook: roles.py)
  // GPUMEMREC_LIMIT: per-device byte limit; 0 = none. A bare size applies to
  // every device; "0:24GiB,1:40GiB" names devices.
  uint64_t limit_bytes[kMaxDevices] = {};
  bool has_limit = false;
  uint64_t fail_after = 0;                // GPUMEMREC_FAIL_AFTER (0 = off)
  int dump_signal = 0;                    // GPUMEMREC_DUMP_SIGNAL (0 = off)
  bool dump_at_exit = false;              // GPUMEMREC_DUMP_AT_EXIT
  bool follow_exec = true;                // GPUMEMREC_FOLLOW_EXEC
  // GPUMEMREC_SITE_SKIP: globs of frames that never name an allocation site
  // (common/site_rules.h), added to the built-in table.
  std::vector<std::string> site_skip;
  uint64_t exit_wait_s = 60;              // GPUMEMREC_EXIT_WAIT_S (0 = do not wait)
  // GPUMEMREC_COMPRESS=zstd: events.json, allocations.json and stacks.json
  // are written as <name>.zst (libzstd.so.1 loaded at the
  // dump; plain JSON with a warning when it cannot be).
  // auto (the default): zstd exactly when a plain bundle of the full ring
  // would not fit GPUMEMREC_MAX_TOTAL_MB (common/bundle_schema.h's
  // estimate), so the default ring keeps plain JSON, which other tools read,
  // and a large ring's bundles fit (docs/performance.md, "Compressed bundles").
  bool compress_zstd = false;             // GPUMEMREC_COMPRESS (auto, none, zstd), resolved
  bool compress_auto = true;              // it was auto
  // The status region `gpumemrec top` reads (common/status_region.h).
  bool status = true;                     // GPUMEMREC_STATUS
  std::string status_dir;                 // GPUMEMREC_STATUS_DIR ("" = common/status_dir.h's default)
};

// One entry per variable: the table the README documents.
struct ConfigVar {
  const char* name;         // without the prefix, e.g. "RING_EVENTS"
  const char* default_text; // as documented
  const char* help;
};
const std::vector<ConfigVar>& config_vars();

using EnvGetter = std::function<const char*(const char*)>;

// Parses every GPUMEMREC_ variable through `get` (getenv by default).
// Each problem appends one human-readable warning naming the variable, the
// value, and the default applied.
Config parse_config(const EnvGetter& get, std::vector<std::string>* warnings);
Config parse_config_from_environment(std::vector<std::string>* warnings);

// Helpers, exposed for tests and the tools.
bool parse_size(const std::string& text, uint64_t* out);  // "24GiB", "512M", "1000"
bool parse_bool(const std::string& text, bool* out);      // 1/0, true/false, yes/no, on/off
bool parse_uint(const std::string& text, uint64_t max, uint64_t* out);
int parse_signal(const std::string& text);                // "USR2", "SIGUSR2", "12"; -1 if bad
bool parse_limit(const std::string& text, uint64_t (&limits)[kMaxDevices]);
// GPUMEMREC_SITE_SKIP: comma-separated globs, blanks trimmed, empty items
// dropped. False (and *why) for a value with no pattern, more than 64
// patterns, or a pattern longer than 256 characters.
bool parse_site_skip(const std::string& text, std::vector<std::string>* out, std::string* why);

}  // namespace gpumemrec
