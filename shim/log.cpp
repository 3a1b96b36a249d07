#include "shim/log.h"

#include <spdlog/sinks/stdout_sinks.h>

#include <atomic>

namespace gpumemrec {

namespace {
std::atomic<spdlog::logger*> g_logger{nullptr};
}

void log_init(const std::string& level) {
  if (g_logger.load()) return;
  try {
    auto sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
    // Never destroyed: the logger must outlive every static destructor and
    // every thread that may still be inside a hook at exit.
    auto* logger = new spdlog::logger("gpumemrec", sink);
    logger->set_pattern("gpumemrec: %^%l%$: %v");
    logger->set_level(spdlog::level::from_str(level));
    logger->flush_on(spdlog::level::trace);
    spdlog::logger* expected = nullptr;
    if (!g_logger.compare_exchange_strong(expected, logger)) delete logger;
  } catch (...) {
  }
}

spdlog::logger* log_get() { return g_logger.load(std::memory_order_acquire); }

}  // namespace gpumemrec
