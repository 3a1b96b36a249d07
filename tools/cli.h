// Shared helpers for the gpumemrec subcommands: errors with exit codes,
// human-readable sizes and times, terminal progress, bundle discovery, and
// an aligned text table.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/bundle_model.h"
#include "common/format.h"
#include "common/bundle_reader.h"

namespace gpumemrec::cli {

enum ExitCode { kOk = 0, kFailure = 1, kBadInput = 2 };

// Thrown by subcommands; main prints "gpumemrec: error: <message>" and exits.
struct CliError : std::runtime_error {
  int code;
  CliError(int c, const std::string& msg) : std::runtime_error(msg), code(c) {}
};
[[noreturn]] void bad_input(const std::string& file, const std::string& what);
[[noreturn]] void failure(const std::string& what);

std::string utc_time(double ts);              // "2026-11-21 14:03:05Z"
std::string human_duration(double seconds);  // "850 µs", "2.00 ms", "1.50 s", "3.2 min"
std::string hex(uint64_t v);                  // "0x7f..."
std::string fmt_double(double v, int prec);

// Progress on stderr, only when stderr is a terminal.
class Progress {
 public:
  Progress();
  ~Progress() { done(); }
  void update(const char* stage, double fraction);
  void done();
  bool enabled() const { return enabled_; }

 private:
  bool enabled_;
  bool shown_ = false;
  int last_pct_ = -1;
  std::string last_stage_;
};

// Loads a bundle; throws CliError(kBadInput) with the reader's message.
void load_bundle(const std::string& dir, model::Bundle* b, bool light = false, Progress* progress = nullptr);

// Loads manifest, metadata, allocations and stacks, not the events (diff).
void load_bundle_without_events(const std::string& dir, model::Bundle* b);

// Bundle directories inside `dir` (children holding manifest.json, skipping
// ".tmp-*"), sorted by name.
std::vector<std::string> find_bundles(const std::string& dir);
bool is_directory(const std::string& p);
std::string basename_of(const std::string& p);

// Aligned text table.
class Table {
 public:
  explicit Table(std::vector<std::string> headers, std::string right_align = "");
  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  std::string render(const std::string& indent = "") const;
  size_t size() const { return rows_.size(); }

 private:
  std::vector<std::string> headers_;
  std::string right_;  // 'r' or 'l' per column
  std::vector<std::vector<std::string>> rows_;
};

// Display width of UTF-8 text (counts code points).
size_t display_width(const std::string& s);

}  // namespace gpumemrec::cli
