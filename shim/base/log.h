// Messages to stderr through spdlog (header-only, compiled into the shim with
// hidden visibility so it can never clash with the program's own spdlog/fmt).
// Every line is prefixed "gpumemrec:". Safe to call before init (dropped).
#pragma once
#define SPDLOG_FMT_EXTERNAL 1
#define FMT_HEADER_ONLY 1
#include <spdlog/spdlog.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace gpumemrec {

void log_init(const std::string& level);
spdlog::logger* log_get();
// In a fork child: another thread of the parent may have held the logger's
// lock at the fork; start over with a new logger (the old one is leaked).
void log_reset_after_fork();
// Writes `before` (may be empty) then line[0, n) to fd 2, when fd 2 has room
// now: false (nothing written) when it is full; true when written, or when
// there is nobody to write to (closed, reader gone). Never blocks on a full
// pipe, never raises SIGPIPE (log.cpp says how and what is not covered).
bool write_stderr_line(const std::string& before, const char* line, size_t n);
// The write itself, SIGPIPE blocked and taken back (no poll): for the tests.
void write_lines_guarded(int fd, const std::string& before, const char* line, size_t n);
// Lines dropped because stderr was full and not yet announced.
uint64_t log_lines_dropped();

}  // namespace gpumemrec

#define GM_LOG(lvl, ...)                                          \
  do {                                                            \
    if (auto* gm_logger_ = ::gpumemrec::log_get())                \
      if (gm_logger_->should_log(spdlog::level::lvl)) {           \
        try { gm_logger_->log(spdlog::level::lvl, __VA_ARGS__); } \
        catch (...) {}                                            \
      }                                                           \
  } while (0)
#define GM_WARN(...) GM_LOG(warn, __VA_ARGS__)
#define GM_INFO(...) GM_LOG(info, __VA_ARGS__)
#define GM_DEBUG(...) GM_LOG(debug, __VA_ARGS__)
#define GM_ERROR(...) GM_LOG(err, __VA_ARGS__)
