#include "shim/base/log.h"

#include <spdlog/sinks/base_sink.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <mutex>

namespace gpumemrec {

namespace {

std::atomic<spdlog::logger*> g_logger{nullptr};

// Straight to file descriptor 2 with write(2): no stdio lock and no process-
// wide console mutex (spdlog's stderr sinks share one), so a fork child can
// replace the whole logger, lock included (log_reset_after_fork).
class StderrFdSink : public spdlog::sinks::base_sink<std::mutex> {
 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    spdlog::memory_buf_t buf;
    formatter_->format(msg, buf);
    const int saved = errno;
    const char* p = buf.data();
    size_t left = buf.size();
    while (left > 0) {
      ssize_t n = write(2, p, left);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      p += n;
      left -= size_t(n);
    }
    errno = saved;
  }
  void flush_() override {}
};

spdlog::logger* make_logger(spdlog::level::level_enum level) {
  try {
    auto sink = std::make_shared<StderrFdSink>();
    // Never destroyed: the logger must outlive every static destructor and
    // every thread that may still be inside a hook at exit.
    auto* logger = new spdlog::logger("gpumemrec", sink);
    logger->set_pattern("gpumemrec: %^%l%$: %v");
    logger->set_level(level);
    logger->flush_on(spdlog::level::trace);
    return logger;
  } catch (...) {
    return nullptr;
  }
}

}  // namespace

void log_init(const std::string& level) {
  if (g_logger.load()) return;
  spdlog::logger* logger = make_logger(spdlog::level::from_str(level));
  if (!logger) return;
  spdlog::logger* expected = nullptr;
  if (!g_logger.compare_exchange_strong(expected, logger)) delete logger;
}

void log_reset_after_fork() {
  spdlog::logger* old = g_logger.load();
  if (!old) return;
  if (spdlog::logger* fresh = make_logger(old->level())) g_logger.store(fresh);
}

spdlog::logger* log_get() { return g_logger.load(std::memory_order_acquire); }

}  // namespace gpumemrec
