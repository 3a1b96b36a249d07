#include "tools/cli.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>

#include "common/redact.h"

using namespace gpumemrec::model;  // the tools' bundle model

namespace gpumemrec::cli {

void bad_input(const std::string& file, const std::string& what) { throw CliError(kBadInput, file + ": " + what); }
void failure(const std::string& what) { throw CliError(kFailure, what); }

std::string utc_time(double ts) {
  if (!(ts > 0)) return "-";
  time_t t = static_cast<time_t>(ts);
  struct tm tm;
  gmtime_r(&t, &tm);
  char buf[32];
  strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%SZ", &tm);
  return buf;
}

std::string human_duration(double s) {
  char buf[48];
  double a = s < 0 ? -s : s;
  if (a < 1e-3) snprintf(buf, sizeof buf, "%.0f \u00b5s", s * 1e6);
  else if (a < 1) snprintf(buf, sizeof buf, a < 0.01 ? "%.2f ms" : a < 0.1 ? "%.1f ms" : "%.0f ms", s * 1e3);
  else if (a < 120) snprintf(buf, sizeof buf, a < 10 ? "%.2f s" : "%.1f s", s);
  else snprintf(buf, sizeof buf, "%.1f min", s / 60);
  return buf;
}

std::string hex(uint64_t v) {
  char buf[24];
  snprintf(buf, sizeof buf, "0x%" PRIx64, v);
  return buf;
}

std::string fmt_double(double v, int prec) {
  char buf[64];
  snprintf(buf, sizeof buf, "%.*f", prec, v);
  return buf;
}

Progress::Progress() : enabled_(isatty(STDERR_FILENO) == 1) {}

void Progress::update(const char* stage, double fraction) {
  if (!enabled_) return;
  int pct = static_cast<int>(std::lround(std::clamp(fraction, 0.0, 1.0) * 100));
  if (pct == last_pct_ && last_stage_ == stage) return;
  last_pct_ = pct;
  last_stage_ = stage;
  fprintf(stderr, "\r\033[K%s %3d%%", stage, pct);
  fflush(stderr);
  shown_ = true;
}

void Progress::done() {
  if (enabled_ && shown_) {
    fprintf(stderr, "\r\033[K");
    fflush(stderr);
  }
  shown_ = false;
  last_pct_ = -1;
}

namespace {

// What a bundle shows is redacted by the shim's own rules (common/redact.h)
// also when the bundle was written before those rules or by another tool:
// every command shows the environment and the command line through here.
void redact_shown(Environment* e) {
  e->cmdline = redact_cmdline(e->cmdline);
  for (auto& kv : e->env) kv.second = redact_env_value(kv.first, kv.second);
}

}  // namespace

void load_bundle(const std::string& dir, Bundle* b, bool light, Progress* progress) {
  ReadOptions opts;
  if (const char* t = getenv("GPUMEMREC_READ_THREADS")) opts.threads = atoi(t);  // 1: never parse in parallel
  if (light) {
    opts.events = false;
    opts.allocations = false;
    opts.stacks = false;
  }
  if (progress && progress->enabled()) {
    opts.progress = [progress, &dir](const char* stage, double f) {
      std::string s = "loading " + basename_of(dir) + "/" + stage;
      progress->update(s.c_str(), f);
    };
  }
  ReadError err;
  bool ok = read_bundle(dir, opts, b, &err);
  if (progress) progress->done();
  if (!ok) throw CliError(kBadInput, err.message());
  redact_shown(&b->environment);
}

void load_bundle_without_events(const std::string& dir, Bundle* b) {
  ReadOptions opts;
  opts.events = false;
  ReadError err;
  if (!read_bundle(dir, opts, b, &err)) throw CliError(kBadInput, err.message());
  redact_shown(&b->environment);
}

bool is_directory(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::string basename_of(const std::string& p) {
  std::string s = p;
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  size_t slash = s.rfind('/');
  return slash == std::string::npos ? s : s.substr(slash + 1);
}

std::vector<std::string> find_bundles(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = opendir(dir.c_str());
  if (!d) return out;
  while (struct dirent* e = readdir(d)) {
    std::string name = e->d_name;
    if (name == "." || name == ".." || name.rfind(".tmp-", 0) == 0) continue;
    std::string p = dir + (dir.empty() || dir.back() == '/' ? "" : "/") + name;
    if (is_bundle_dir(p)) out.push_back(p);
  }
  closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

size_t display_width(const std::string& s) {
  size_t w = 0;
  for (unsigned char c : s)
    if ((c & 0xC0) != 0x80) ++w;
  return w;
}

Table::Table(std::vector<std::string> headers, std::string right_align)
    : headers_(std::move(headers)), right_(std::move(right_align)) {
  right_.resize(headers_.size(), 'l');
}

std::string Table::render(const std::string& indent) const {
  std::vector<size_t> w(headers_.size(), 0);
  for (size_t i = 0; i < headers_.size(); ++i) w[i] = display_width(headers_[i]);
  for (const auto& r : rows_)
    for (size_t i = 0; i < r.size() && i < w.size(); ++i) w[i] = std::max(w[i], display_width(r[i]));
  std::string out;
  auto line = [&](const std::vector<std::string>& r) {
    std::string l = indent;
    for (size_t i = 0; i < w.size(); ++i) {
      const std::string cell = i < r.size() ? r[i] : "";
      size_t pad = w[i] - display_width(cell);
      bool last = i + 1 == w.size();
      if (right_[i] == 'r') l += std::string(pad, ' ') + cell;
      else l += cell + (last ? "" : std::string(pad, ' '));
      if (!last) l += "  ";
    }
    while (!l.empty() && l.back() == ' ') l.pop_back();
    out += l + "\n";
  };
  line(headers_);
  for (const auto& r : rows_) line(r);
  return out;
}

}  // namespace gpumemrec::cli
