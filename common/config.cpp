#include "common/config.h"

#include "common/bundle_schema.h"

#include <algorithm>
#include <cctype>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace gpumemrec {

namespace {

constexpr uint64_t kMaxRingEvents = uint64_t(1) << 25;  // 2 GiB of ring

std::string trim(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace((unsigned char)s[b])) ++b;
  while (e > b && std::isspace((unsigned char)s[e - 1])) --e;
  return s.substr(b, e - b);
}

std::string lower(std::string s) {
  for (auto& c : s) c = char(std::tolower((unsigned char)c));
  return s;
}

}  // namespace

const std::vector<ConfigVar>& config_vars() {
  static const std::vector<ConfigVar> vars = {
      {"DIR", "./gpumemrec-dumps", "directory the bundles are written to (created 0700 if missing)"},
      {"RING_EVENTS", "65536", "events kept in the ring (64 bytes each), 16 to 33554432"},
      {"STACK_DEPTH", "32", "native frames per stack, 0 turns native stacks off, at most 256"},
      {"UNWINDER", "auto", "native stacks: auto = the system's libunwind.so.8, else the copy installed beside the library, else glibc's backtrace (about 10x slower per frame, with a warning); system or bundled = only that libunwind; glibc = glibc's backtrace"},
      {"EPISODE_MS", "2000", "an out-of-memory failure not retried successfully within this many ms of the episode's last failure is fatal"},
      {"RECOVERED", "count", "count = a failure the program recovers from gets no bundle (counted, listed in the next); keep = it keeps its bundle"},
      {"COMPRESS", "auto", "zstd = write events.json, allocations.json and stacks.json compressed, as <name>.zst (libzstd.so.1, loaded at the dump; plain JSON when it is missing); none = plain JSON; auto = zstd only when a plain bundle of the full ring would not fit MAX_TOTAL_MB"},
      {"MAX_DUMPS", "5", "keep at most this many bundles in DIR (oldest pruned); 0 = no limit"},
      {"MAX_TOTAL_MB", "256", "keep the bundles in DIR under this many MiB (oldest pruned); 0 = no limit"},
      {"LOG_LEVEL", "warn", "trace, debug, info, warn, error, critical or off (messages go to stderr)"},
      {"DISABLE", "0", "1 = pure pass-through: nothing is recorded or swapped"},
      {"PYTHON_STACKS", "1", "0 = do not record Python frames"},
      {"PYTHON_HOOK", "1", "0 = no Python start-up hook (PyTorch's allocator state and JAX's live buffers at an out-of-memory)"},
      {"TORCH_HISTORY", "0", "N > 0 = turn on PyTorch's own _record_memory_history(max_entries=N) when CUDA starts"},
      {"ROLES_BUDGET_MS", "1000", "CPU-time budget in ms (1 to 3600000; three times it of wall time at most) of the Python hook's walk that names memory by role at a PyTorch out-of-memory or exit; past it the walk stops (status partial)"},
      {"LIMIT", "(none)", "rehearse a smaller GPU: refuse allocations past this many live bytes per device, e.g. 24GiB or 0:24GiB,1:40GiB"},
      {"FAIL_AFTER", "0", "make the Nth allocation fail with the out-of-memory code (0 = off)"},
      {"DUMP_SIGNAL", "(off)", "a signal (e.g. USR2) that writes a bundle with reason 'signal'"},
      {"DUMP_AT_EXIT", "0", "1 = write a bundle with reason 'exit' at normal exit (what was never freed)"},
      {"FOLLOW_EXEC", "1", "0 = remove libgpumemrec.so from LD_PRELOAD for programs this one execs"},
      {"SITE_SKIP", "(none)", "comma-separated globs (e.g. libmyalloc.so*,*/mypkg/*) of frames that never name an allocation site, added to the built-in list of runtime, framework and interpreter libraries"},
      {"EXIT_WAIT_S", "60", "at exit or a fatal signal, wait for a bundle being written while its writer makes progress, at most this many seconds (0 = do not wait)"},
      {"STATUS", "1", "0 = publish no status region for 'gpumemrec top' (live bytes, peak and top sites, updated at most every 100 ms by the peak keeper thread)"},
      {"STATUS_DIR", "/dev/shm/gpumemrec-UID", "the per-user directory of status regions (an absolute path; created 0700; /tmp/gpumemrec-UID where there is no /dev/shm); 'gpumemrec top' reads the same variable"},
  };
  return vars;
}

bool parse_uint(const std::string& text, uint64_t max, uint64_t* out) {
  std::string t = trim(text);
  if (t.empty() || t.size() > 20) return false;
  uint64_t v = 0;
  for (char c : t) {
    if (c < '0' || c > '9') return false;
    uint64_t d = uint64_t(c - '0');
    if (v > (UINT64_MAX - d) / 10) return false;
    v = v * 10 + d;
  }
  if (v > max) return false;
  *out = v;
  return true;
}

bool parse_size(const std::string& text, uint64_t* out) {
  std::string t = trim(text);
  size_t i = 0;
  while (i < t.size() && (std::isdigit((unsigned char)t[i]) || t[i] == '.')) ++i;
  std::string num = t.substr(0, i), unit = lower(trim(t.substr(i)));
  if (num.empty() || num == ".") return false;
  if (std::count(num.begin(), num.end(), '.') > 1) return false;
  long double mult = 1;
  if (unit.empty() || unit == "b") mult = 1;
  else if (unit == "k" || unit == "kib") mult = 1024.0L;
  else if (unit == "kb") mult = 1e3L;
  else if (unit == "m" || unit == "mib") mult = 1024.0L * 1024;
  else if (unit == "mb") mult = 1e6L;
  else if (unit == "g" || unit == "gib") mult = 1024.0L * 1024 * 1024;
  else if (unit == "gb") mult = 1e9L;
  else if (unit == "t" || unit == "tib") mult = 1024.0L * 1024 * 1024 * 1024;
  else if (unit == "tb") mult = 1e12L;
  else return false;
  char* end = nullptr;
  long double v = std::strtold(num.c_str(), &end);
  if (!end || *end != '\0') return false;
  long double bytes = v * mult;
  if (!(bytes >= 0) || bytes > 1.8e19L) return false;
  *out = uint64_t(bytes);
  return true;
}

bool parse_bool(const std::string& text, bool* out) {
  std::string t = lower(trim(text));
  if (t == "1" || t == "true" || t == "yes" || t == "on") { *out = true; return true; }
  if (t == "0" || t == "false" || t == "no" || t == "off") { *out = false; return true; }
  return false;
}

int parse_signal(const std::string& text) {
  std::string t = trim(text);
  for (auto& c : t) c = char(std::toupper((unsigned char)c));
  if (t.rfind("SIG", 0) == 0) t = t.substr(3);
  static const struct { const char* name; int sig; } kSignals[] = {
      {"USR1", SIGUSR1}, {"USR2", SIGUSR2}, {"HUP", SIGHUP}, {"QUIT", SIGQUIT},
      {"WINCH", SIGWINCH}, {"URG", SIGURG}, {"PWR", SIGPWR},
  };
  for (auto& s : kSignals)
    if (t == s.name) return s.sig;
  uint64_t n = 0;
  if (parse_uint(t, 64, &n) && n > 0) {
    int sig = int(n);
    // Signals whose default action or meaning we must never take over.
    if (sig == SIGKILL || sig == SIGSTOP || sig == SIGSEGV || sig == SIGBUS ||
        sig == SIGFPE || sig == SIGILL || sig == SIGABRT || sig == SIGCHLD ||
        sig == SIGPIPE || sig == SIGINT || sig == SIGTERM || sig == SIGALRM || sig == SIGPROF)
      return -1;
    if (sig < SIGRTMIN && sig > SIGPWR) return -1;
    if (sig > SIGRTMAX) return -1;
    return sig;
  }
  return -1;
}

bool parse_limit(const std::string& text, uint64_t (&limits)[kMaxDevices]) {
  uint64_t out[kMaxDevices] = {};
  std::string t = trim(text);
  if (t.empty()) return false;
  if (t.find(':') == std::string::npos) {
    uint64_t v = 0;
    if (!parse_size(t, &v) || v == 0) return false;
    for (auto& l : out) l = v;
  } else {
    size_t pos = 0;
    while (pos <= t.size()) {
      size_t comma = t.find(',', pos);
      std::string item = trim(t.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos));
      size_t colon = item.find(':');
      if (colon == std::string::npos) return false;
      uint64_t dev = 0, v = 0;
      if (!parse_uint(item.substr(0, colon), kMaxDevices - 1, &dev)) return false;
      if (!parse_size(item.substr(colon + 1), &v) || v == 0) return false;
      out[dev] = v;
      if (comma == std::string::npos) break;
      pos = comma + 1;
    }
  }
  std::memcpy(limits, out, sizeof(out));
  return true;
}

bool parse_site_skip(const std::string& text, std::vector<std::string>* out, std::string* why) {
  constexpr size_t kMaxPatterns = 64, kMaxPattern = 256;
  std::vector<std::string> patterns;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    if (comma == std::string::npos) comma = text.size();
    std::string item = trim(text.substr(pos, comma - pos));
    pos = comma + 1;
    if (item.empty()) continue;
    if (item.size() > kMaxPattern) {
      *why = "a pattern longer than 256 characters";
      return false;
    }
    patterns.push_back(std::move(item));
  }
  if (patterns.empty() || patterns.size() > kMaxPatterns) {
    *why = patterns.empty() ? "no pattern" : "more than 64 patterns";
    return false;
  }
  *out = std::move(patterns);
  return true;
}

// GPUMEMREC_COMPRESS=auto: a plain bundle of the full ring over the
// retention cap (0 = no cap: never).
static bool plain_bundle_exceeds(uint64_t ring_events, uint64_t max_total_mb) {
  if (max_total_mb == 0 || max_total_mb > (UINT64_MAX >> 21)) return false;
  return estimate_bundle(ring_events).total() > (max_total_mb << 20);
}

namespace {

// Reads GPUMEMREC_ variables through `get`; each malformed value leaves the
// field at its default and adds one warning naming the variable, the value
// and that default.
class EnvReader {
 public:
  EnvReader(const EnvGetter& get, std::vector<std::string>* warnings) : get_(get), warnings_(warnings) {}

  const char* value(const char* var) const { return get_((std::string("GPUMEMREC_") + var).c_str()); }

  void warn(const char* var, const char* value, const char* why, const char* dflt) const {
    if (!warnings_) return;
    char buf[512];
    std::snprintf(buf, sizeof buf, "GPUMEMREC_%s=\"%.200s\" is %s; using the default (%s)", var, value, why,
                  dflt);
    warnings_->push_back(buf);
  }

  void uint_var(const char* var, uint64_t min, uint64_t max, uint64_t* field, const char* dflt) const {
    const char* v = value(var);
    if (!v) return;
    uint64_t n = 0;
    if (!parse_uint(v, UINT64_MAX, &n)) {
      warn(var, v, "not a non-negative integer", dflt);
    } else if (n < min || n > max) {
      char why[96];
      std::snprintf(why, sizeof why, "out of range [%llu, %llu]", (unsigned long long)min, (unsigned long long)max);
      warn(var, v, why, dflt);
    } else {
      *field = n;
    }
  }

  void bool_var(const char* var, bool* field, const char* dflt) const {
    const char* v = value(var);
    if (v && !parse_bool(v, field)) warn(var, v, "not a boolean (1/0, true/false, yes/no, on/off)", dflt);
  }

  // One of `names` (case and blanks ignored): its index, -1 when unset or
  // not one of them (warned, with `why` and `dflt`).
  template <size_t N>
  int choice_var(const char* var, const char* const (&names)[N], const char* why, const char* dflt) const {
    const char* v = value(var);
    if (!v) return -1;
    const std::string m = lower(trim(v));
    for (size_t i = 0; i < N; ++i)
      if (m == names[i]) return int(i);
    warn(var, v, why, dflt);
    return -1;
  }

 private:
  const EnvGetter& get_;
  std::vector<std::string>* warnings_;
};

// DIR, RING_EVENTS, STACK_DEPTH, UNWINDER: where and what is recorded.
void read_recording(const EnvReader& r, Config* c) {
  if (const char* v = r.value("DIR")) {
    if (std::strlen(v) == 0 || trim(v).empty()) r.warn("DIR", v, "empty", "./gpumemrec-dumps");
    else if (std::strlen(v) > 3000) r.warn("DIR", v, "too long", "./gpumemrec-dumps");
    else c->dir = v;
  }
  r.uint_var("RING_EVENTS", 16, kMaxRingEvents, &c->ring_events, "65536");
  uint64_t depth = uint64_t(c->stack_depth);
  r.uint_var("STACK_DEPTH", 0, uint64_t(kMaxStackDepth), &depth, "32");
  c->stack_depth = int(depth);
  static const char* const kNames[] = {"auto", "system", "bundled", "glibc"};
  static const Unwinder kUnwinders[] = {Unwinder::kAuto, Unwinder::kSystem, Unwinder::kBundled, Unwinder::kGlibc};
  int u = r.choice_var("UNWINDER", kNames, "not one of auto, system, bundled, glibc", "auto");
  if (u >= 0) c->unwinder = kUnwinders[u];
}

// EPISODE_MS, RECOVERED, COMPRESS, MAX_DUMPS, MAX_TOTAL_MB: verdicts and
// what is kept on disk.
void read_bundles(const EnvReader& r, Config* c) {
  r.uint_var("EPISODE_MS", 0, 86400000, &c->episode_ms, "2000");
  static const char* const kRecovered[] = {"count", "keep"};
  int rec = r.choice_var("RECOVERED", kRecovered, "not one of count, keep", "count");
  if (rec >= 0) c->keep_recovered = rec == 1;
  static const char* const kCompress[] = {"auto", "none", "zstd"};
  int z = r.choice_var("COMPRESS", kCompress, "not one of auto, none, zstd", "auto");
  if (z >= 0) {
    c->compress_zstd = z == 2;
    c->compress_auto = z == 0;
  }
  r.uint_var("MAX_DUMPS", 0, 1000000, &c->max_dumps, "5");
  r.uint_var("MAX_TOTAL_MB", 0, uint64_t(1) << 40, &c->max_total_mb, "256");
}

// LOG_LEVEL, DISABLE, PYTHON_STACKS, PYTHON_HOOK, TORCH_HISTORY,
// ROLES_BUDGET_MS.
void read_switches(const EnvReader& r, Config* c) {
  // "warning" and "err" are spdlog's other spellings of warn and error.
  static const char* const kLevels[] = {"trace", "debug", "info", "warn", "error", "critical", "off", "warning", "err"};
  int l = r.choice_var("LOG_LEVEL", kLevels, "not one of trace, debug, info, warn, error, critical, off", "warn");
  if (l >= 0) c->log_level = kLevels[l == 7 ? 3 : l == 8 ? 4 : l];
  r.bool_var("DISABLE", &c->disable, "0");
  r.bool_var("PYTHON_STACKS", &c->python_stacks, "1");
  r.bool_var("PYTHON_HOOK", &c->python_hook, "1");
  r.uint_var("TORCH_HISTORY", 0, 100000000, &c->torch_history, "0");
  r.uint_var("ROLES_BUDGET_MS", 1, 3600000, &c->roles_budget_ms, "1000");
}

// LIMIT, FAIL_AFTER, DUMP_SIGNAL, DUMP_AT_EXIT: what makes a bundle besides
// a real out-of-memory.
void read_triggers(const EnvReader& r, Config* c) {
  if (const char* v = r.value("LIMIT")) {
    if (parse_limit(v, c->limit_bytes)) c->has_limit = true;
    else r.warn("LIMIT", v, "not a size like 24GiB or a list like 0:24GiB,1:40GiB", "no limit");
  }
  r.uint_var("FAIL_AFTER", 0, UINT64_MAX, &c->fail_after, "0");
  if (const char* v = r.value("DUMP_SIGNAL")) {
    int sig = parse_signal(v);
    if (sig > 0) c->dump_signal = sig;
    else if (trim(v).empty())
      r.warn("DUMP_SIGNAL", v, "empty", "off");
    else if (trim(v) != "0")
      r.warn("DUMP_SIGNAL", v,
             "not a usable signal (USR1, USR2, HUP, QUIT, WINCH, URG, PWR or a real-time number)", "off");
  }
  r.bool_var("DUMP_AT_EXIT", &c->dump_at_exit, "0");
}

// STATUS, STATUS_DIR: the status region for `gpumemrec top`.
void read_status(const EnvReader& r, Config* c) {
  r.bool_var("STATUS", &c->status, "1");
  if (const char* v = r.value("STATUS_DIR")) {
    const std::string d = trim(v);
    if (d.empty() || d[0] != '/') r.warn("STATUS_DIR", v, "not an absolute path", "/dev/shm/gpumemrec-UID");
    else if (d.size() > 200) r.warn("STATUS_DIR", v, "too long (200 bytes at most)", "/dev/shm/gpumemrec-UID");
    else c->status_dir = d;
  }
}

// FOLLOW_EXEC, SITE_SKIP, EXIT_WAIT_S, then the status region's.
void read_process(const EnvReader& r, Config* c) {
  r.bool_var("FOLLOW_EXEC", &c->follow_exec, "1");
  if (const char* v = r.value("SITE_SKIP")) {
    std::string why;
    if (!parse_site_skip(v, &c->site_skip, &why)) r.warn("SITE_SKIP", v, why.c_str(), "the built-in list only");
  }
  r.uint_var("EXIT_WAIT_S", 0, 86400, &c->exit_wait_s, "60");
  read_status(r, c);
}

}  // namespace

Config parse_config(const EnvGetter& get, std::vector<std::string>* warnings) {
  Config c;
  const EnvReader r(get, warnings);
  read_recording(r, &c);  // in the order of config_vars(): the warnings come in that order
  read_bundles(r, &c);
  read_switches(r, &c);
  read_triggers(r, &c);
  read_process(r, &c);
  if (c.compress_auto) c.compress_zstd = plain_bundle_exceeds(c.ring_events, c.max_total_mb);
  return c;
}

Config parse_config_from_environment(std::vector<std::string>* warnings) {
  return parse_config([](const char* name) -> const char* { return std::getenv(name); }, warnings);
}

}  // namespace gpumemrec
