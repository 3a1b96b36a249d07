// Messages to stderr through spdlog (header-only, compiled into the shim with
// hidden visibility so it can never clash with the program's own spdlog/fmt).
// Every line is prefixed "gpumemrec:". Safe to call before init (dropped).
#pragma once
#define SPDLOG_FMT_EXTERNAL 1
#define FMT_HEADER_ONLY 1
#include <spdlog/spdlog.h>

#include <string>

namespace gpumemrec {

void log_init(const std::string& level);
spdlog::logger* log_get();
// In a fork child: another thread of the parent may have held the logger's
// lock at the fork; start over with a new logger (the old one is leaked).
void log_reset_after_fork();

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
