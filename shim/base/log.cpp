#include "shim/base/log.h"

#include <limits.h>
#include <poll.h>
#include <spdlog/sinks/base_sink.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <mutex>
#include <string>

#include "shim/base/fd_io.h"
#include "shim/base/signal_guard.h"

namespace gpumemrec {

namespace {

std::atomic<spdlog::logger*> g_logger{nullptr};

// Lines the sink dropped because fd 2 had no room (see below); said, with
// their number, at the start of the next line that gets through.
std::atomic<uint64_t> g_dropped{0};

// Straight to file descriptor 2 with write(2): no stdio lock and no process-
// wide console mutex (spdlog's stderr sinks share one), so a fork child can
// replace the whole logger, lock included (log_reset_after_fork).
class StderrFdSink : public spdlog::sinks::base_sink<std::mutex> {
 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    spdlog::memory_buf_t buf;
    formatter_->format(msg, buf);
    const int saved = errno;
    const uint64_t dropped = g_dropped.load(std::memory_order_relaxed);
    std::string before;
    if (dropped)
      before = "gpumemrec: warning: " + std::to_string(dropped) +
               " earlier line(s) dropped: stderr was full (nobody was reading it)\n";
    if (!write_stderr_line(before, buf.data(), buf.size())) g_dropped.fetch_add(1, std::memory_order_relaxed);
    else if (dropped) g_dropped.fetch_sub(dropped, std::memory_order_relaxed);
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

// fd 2 is the program's: whatever it is (a terminal, a file, a pipe to a
// parent that reads only stdout, a closed pipe, a journald socket), a line
// of ours must neither block the caller (it may be inside the program's
// cudaMalloc, or the writer thread the exit wait counts on) nor raise a
// signal. The file description's flags are shared with the program, so
// O_NONBLOCK is not ours to set: a poll with a zero timeout asks first.
// POLLOUT on a pipe means a free page in it (pipe_poll() in Linux's
// fs/pipe.c), and a write of at most PIPE_BUF bytes then never blocks, short
// of a thread of the program filling it between the poll and the write (not
// guarded: a rare, bounded stall, as the program's own lines would have).
// A reader gone (POLLERR / POLLHUP) or fd 2 closed (POLLNVAL): nothing is
// written. SIGPIPE from a reader that goes away after the poll is blocked
// and taken back by DumpSignalGuard, as on the dump path.
bool write_stderr_line(const std::string& before, const char* line, size_t n) {
  pollfd p{2, POLLOUT, 0};
  int r;
  do r = poll(&p, 1, 0);
  while (r < 0 && errno == EINTR);
  if (r < 0 || (p.revents & (POLLERR | POLLHUP | POLLNVAL))) return true;  // nobody to tell: not a drop
  if (r == 0 || !(p.revents & POLLOUT)) return false;
  write_lines_guarded(2, before, line, n);
  return true;
}

void write_lines_guarded(int fd, const std::string& before, const char* line, size_t n) {
  DumpSignalGuard guard;
  if (!before.empty() && before.size() + n <= PIPE_BUF) {  // one write: the two lines stay together
    std::string both = before;
    both.append(line, n);
    fd_write_all(fd, both.data(), both.size());
    return;
  }
  if (!before.empty()) fd_write_all(fd, before.data(), before.size());
  fd_write_all(fd, line, n);
}

uint64_t log_lines_dropped() { return g_dropped.load(std::memory_order_relaxed); }

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
