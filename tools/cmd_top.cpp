// gpumemrec top [PID...]: live GPU memory of the processes on this host that
// run with the recorder (docs/cli.md, "gpumemrec top"). Full screen on a
// terminal (top_screen.cpp); plain text, one frame per interval, otherwise
// (or with --batch); --once prints one frame, --json with it one JSON
// object (top_json.cpp).
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <memory>

#include <CLI/CLI.hpp>

#include "common/status_dir.h"
#include "tools/cli.h"
#include "tools/commands.h"
#include "tools/top_json.h"
#include "tools/top_screen.h"

namespace gpumemrec::cli {
namespace {

// How long --once and the first plain-text frame wait for the processes to
// name their sites and publish an update made after top started (each
// updates every 0.1 s, naming some stacks each time).
constexpr uint64_t kNamesWaitNs = 2000000000ull;

// Every process named its sites in an update made after `since`: its
// figures are of a moment after top started (a program stopped before that
// shows everything it did).
bool all_named_since(const TopSnapshot& s, uint64_t since) {
  for (const TopProcess& p : s.processes)
    if (p.v.names != status::kNamesDone || p.v.updated_mono_ns < since) return false;
  return true;
}

// Asks every process shown to name its sites; at the first frame, waits
// (up to kNamesWaitNs) until each has, in an update after this one began.
TopSnapshot read_named(TopSource& source, const TopOptions& o, bool wait) {
  const uint64_t start = top_mono_ns();
  TopSnapshot s = source.read();
  const uint64_t until = s.mono_ns + uint64_t(o.interval_s * 1e9) + kWatchSlackNs;
  for (const TopProcess& p : s.processes) source.watch(p, until);
  const uint64_t give_up = s.mono_ns + kNamesWaitNs;
  const std::vector<TopSkipped> first = s.skipped;
  while (wait && !all_named_since(s, start) && top_mono_ns() < give_up) {
    const timespec pause{0, 50000000};
    nanosleep(&pause, nullptr);
    s = source.read();
  }
  // What the first read skipped and removed (a process gone) is said too.
  for (const TopSkipped& k : first)
    if (std::none_of(s.skipped.begin(), s.skipped.end(),
                     [&](const TopSkipped& x) { return x.file == k.file && x.pid == k.pid; }))
      s.skipped.push_back(k);
  return s;
}

void sleep_seconds(double s) {
  timespec ts{time_t(s), long((s - double(time_t(s))) * 1e9)};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

int shown_or_failed(const TopOptions& o, const TopSnapshot& s) {
  return o.pids.empty() || !s.processes.empty() ? kOk : kFailure;
}

// Plain text (or JSON with --once): a frame per interval.
int run_plain(TopSource& source, Cards& cards, const TopOptions& o) {
  TopHistory history;
  const uint64_t frames = o.once ? 1 : o.iterations;
  int rc = kOk;
  for (uint64_t i = 0; frames == 0 || i < frames; ++i) {
    if (i) sleep_seconds(o.interval_s);
    const TopSnapshot s = read_named(source, o, i == 0);
    std::vector<TopRow> rows = top_rows(s, cards, &history);
    sort_rows(s, o.sort, &rows);
    if (o.json) {
      TopJsonInput in;
      in.snapshot = &s;
      in.rows = &rows;
      in.dir = source.dir();
      in.cards_problem = cards.problem();
      in.top_sites = o.top;
      print_top_json(in);
    } else {
      const std::string text = render_text(s, rows, o.top, cards.problem());
      fwrite(text.data(), 1, text.size(), stdout);
      if (!o.once) fputc('\n', stdout);
    }
    if (fflush(stdout) != 0) failure("cannot write to stdout");
    rc = shown_or_failed(o, s);
  }
  return rc;
}

void add_options(CLI::App* app, TopOptions* o, std::string* sort) {
  app->add_option("PID", o->pids, "Only these processes (default: every process of this user that runs with the recorder)")
      ->check(CLI::Range(1, 0x7fffffff));
  app->add_flag("--once", o->once, "Print one snapshot and exit (plain text, or JSON with --json)");
  app->add_flag("--json", o->json, "With --once: one JSON object (keys: see docs/cli.md)");
  app->add_flag("-b,--batch", o->batch, "Plain text even on a terminal, one frame per interval (as top -b)");
  app->add_option("-d,--interval", o->interval_s, "Seconds between refreshes")
      ->check(CLI::Range(0.1, 3600.0))
      ->capture_default_str();
  app->add_option("-n,--iterations", o->iterations, "Plain text: frames to print, then exit (0: until stopped)")
      ->capture_default_str();
  app->add_option("--sort", *sort, "Order of the rows: live, peak or growth (largest first)")
      ->check(CLI::IsMember({"live", "peak", "growth"}))
      ->capture_default_str();
  app->add_option("--top", o->top, "Plain text and JSON: sites per process (the region lists up to 16)")
      ->check(CLI::Range(0, 16))
      ->capture_default_str();
  app->add_option("--dir", o->dir,
                  "Directory of the status regions (default: $GPUMEMREC_STATUS_DIR, else /dev/shm/gpumemrec-UID, "
                  "else /tmp/gpumemrec-UID)");
}

}  // namespace

RunFn add_top(CLI::App& root) {
  auto o = std::make_shared<TopOptions>();
  auto sort = std::make_shared<std::string>("live");
  CLI::App* app = root.add_subcommand("top", "Live GPU memory of the processes running with the recorder on this host");
  add_options(app, o.get(), sort.get());
  app->footer("Keys: up/down (k/j) select, l/p/g sort by live, peak, growth (< and > too), d writes a bundle of the\n"
              "selected process now (its GPUMEMREC_DUMP_SIGNAL), h help, q quit.\n"
              "Each process publishes a status region, updated at most every 100 ms by the recorder's peak keeper\n"
              "thread (GPUMEMREC_STATUS=0 turns it off). Exit status 1 when PIDs were given and none is shown.");
  return [=]() -> int {
    if (o->json && !o->once) bad_input("--json", "needs --once");
    parse_top_sort(*sort, &o->sort);
    if (o->dir.empty()) {
      const char* env = getenv("GPUMEMREC_STATUS_DIR");
      o->dir = status::resolve_dir(env && env[0] == '/' ? env : "", unsigned(geteuid()));
    }
    signal(SIGPIPE, SIG_DFL);  // `gpumemrec top -b | head` ends quietly
    TopSource source(o->dir, o->pids);
    Cards cards;
    const bool screen = !o->once && !o->batch && isatty(STDOUT_FILENO) && isatty(STDIN_FILENO);
    return screen ? run_top_screen(source, cards, *o) : run_plain(source, cards, *o);
  };
}

}  // namespace gpumemrec::cli
