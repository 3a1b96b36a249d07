// gpumemrec run [options] -- CMD ARGS...
// Runs CMD with libgpumemrec.so preloaded and the GPUMEMREC_* variables set
// from the options; passes its exit status through; lists the new bundles.
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <set>

#include <CLI/CLI.hpp>

#include "tools/cli.h"
#include "tools/commands.h"
#include "tools/preload_check.h"
#include "tools/simulate_setup.h"

using namespace gpumemrec::model;  // the tools' bundle model

namespace gpumemrec::cli {
namespace {

volatile sig_atomic_t g_child = 0;

void forward_signal(int sig, siginfo_t* info, void*) {
  // A terminal's ^C already reaches the child (same process group); forward
  // only signals someone sent to us with kill(2).
  if (g_child > 0 && info && info->si_code <= 0) kill(g_child, sig);
}

std::string self_dir() {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return ".";
  buf[n] = '\0';
  std::string p(buf);
  size_t slash = p.rfind('/');
  return slash == std::string::npos ? "." : p.substr(0, slash);
}

bool exists(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0;
}

std::string absolute(const std::string& p) {
  if (!p.empty() && p[0] == '/') return p;
  char buf[PATH_MAX];
  if (!getcwd(buf, sizeof buf)) return p;
  std::string base(buf);
  std::string rel = p;
  if (rel.rfind("./", 0) == 0) rel = rel.substr(2);
  return rel.empty() || rel == "." ? base : base + "/" + rel;
}

// Where an installed or built libgpumemrec.so is, relative to this
// executable: installed as PREFIX/bin/gpumemrec + PREFIX/lib/gpumemrec/
// (CMake install and the .deb), then PREFIX/lib/, then beside the command
// (the build tree's build/bin, and the Python wheel's gpumemrec/_native/,
// where the console script and `python -m gpumemrec` exec this binary).
std::vector<std::string> library_candidates() {
  std::string dir = self_dir();
  return {dir + "/../lib/gpumemrec/libgpumemrec.so", dir + "/../lib/libgpumemrec.so", dir + "/libgpumemrec.so"};
}

std::string find_library(const std::string& option) {
  if (!option.empty()) return option;
  if (const char* env = getenv("GPUMEMREC_LIBRARY"); env && *env) return env;
  auto candidates = library_candidates();
  std::string looked;
  for (const auto& c : candidates) {
    if (exists(c)) return c;
    looked += (looked.empty() ? "" : ", ") + c;
  }
  failure("cannot find libgpumemrec.so (looked in " + looked + "); build it or point --library / GPUMEMREC_LIBRARY at it");
}

struct RunOptions {
  std::string dir, library, limit, log_level, dump_signal, simulate;
  uint64_t ring_events = 0, stack_depth = 0, episode_ms = 0, max_dumps = 0, max_total_mb = 0, fail_after = 0;
  bool no_python_stacks = false, no_python_hook = false, dump_at_exit = false;
  std::vector<std::string> command;
};

std::string default_dump_dir() {
  const char* env = getenv("GPUMEMREC_DIR");
  return env && *env ? env : "./gpumemrec-dumps";
}

// The GPUMEMREC_* variables for the options given on the command line (an
// option not given leaves the variable as the environment has it).
void export_settings(const CLI::App& app, const RunOptions& o, const std::string& dump_dir) {
  auto given = [&](const char* opt) { return app.get_option(opt)->count() > 0; };
  auto setu = [&](const char* name, const char* opt, uint64_t v) {
    if (given(opt)) setenv(name, std::to_string(v).c_str(), 1);
  };
  auto sets = [&](const char* name, const char* opt, const std::string& v) {
    if (given(opt)) setenv(name, v.c_str(), 1);
  };
  setenv("GPUMEMREC_DIR", dump_dir.c_str(), 1);
  setu("GPUMEMREC_RING_EVENTS", "--ring-events", o.ring_events);
  setu("GPUMEMREC_STACK_DEPTH", "--stack-depth", o.stack_depth);
  setu("GPUMEMREC_EPISODE_MS", "--episode-ms", o.episode_ms);
  setu("GPUMEMREC_MAX_DUMPS", "--max-dumps", o.max_dumps);
  setu("GPUMEMREC_MAX_TOTAL_MB", "--max-total-mb", o.max_total_mb);
  sets("GPUMEMREC_LOG_LEVEL", "--log-level", o.log_level);
  if (o.no_python_stacks) setenv("GPUMEMREC_PYTHON_STACKS", "0", 1);
  if (o.no_python_hook) setenv("GPUMEMREC_PYTHON_HOOK", "0", 1);
  sets("GPUMEMREC_LIMIT", "--limit", o.limit);
  setu("GPUMEMREC_FAIL_AFTER", "--fail-after", o.fail_after);
  sets("GPUMEMREC_DUMP_SIGNAL", "--dump-signal", o.dump_signal);
  if (o.dump_at_exit) setenv("GPUMEMREC_DUMP_AT_EXIT", "1", 1);
}

void prepend_preload(const std::string& lib) {
  std::string preload = lib;
  if (const char* old = getenv("LD_PRELOAD"); old && *old) preload += std::string(":") + old;
  setenv("LD_PRELOAD", preload.c_str(), 1);
}

const int kForwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
constexpr int kNumForwarded = 4;

// Forks and execs cmd with the signals above forwarded to it; returns its
// exit status (128+N when killed by signal N, 127/126 when exec fails).
int run_child(const std::vector<std::string>& cmd) {
  std::vector<char*> argv;
  for (auto& a : cmd) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = forward_signal;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  struct sigaction old[kNumForwarded];
  for (int i = 0; i < kNumForwarded; ++i) sigaction(kForwarded[i], &sa, &old[i]);
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid < 0) failure(std::string("fork failed: ") + strerror(errno));
  if (pid == 0) {
    for (int i = 0; i < kNumForwarded; ++i) signal(kForwarded[i], SIG_DFL);
    execvp(argv[0], argv.data());
    int e = errno;
    fprintf(stderr, "gpumemrec: error: cannot run '%s': %s\n", argv[0], strerror(e));
    _exit(e == ENOENT ? 127 : 126);
  }
  g_child = pid;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) failure(std::string("waitpid failed: ") + strerror(errno));
  }
  g_child = 0;
  for (int i = 0; i < kNumForwarded; ++i) sigaction(kForwarded[i], &old[i], nullptr);
  return WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 1;
}

void list_new_bundles(const std::string& dump_dir, const std::set<std::string>& before) {
  std::vector<std::string> fresh;
  for (auto& p : find_bundles(dump_dir))
    if (!before.count(p)) fresh.push_back(p);
  if (fresh.empty()) {
    fprintf(stderr, "gpumemrec: no new bundles in %s\n", dump_dir.c_str());
    return;
  }
  fprintf(stderr, "gpumemrec: %zu new bundle%s in %s:\n", fresh.size(), fresh.size() == 1 ? "" : "s", dump_dir.c_str());
  for (auto& p : fresh) fprintf(stderr, "  %s\n", p.c_str());
  fprintf(stderr, "gpumemrec: see 'gpumemrec report %s'\n", fresh.size() == 1 ? fresh[0].c_str() : dump_dir.c_str());
}

}  // namespace

RunFn add_run(CLI::App& root, std::vector<std::string>* after_dashdash) {
  auto o = std::make_shared<RunOptions>();
  CLI::App* app = root.add_subcommand("run", "Run a program with libgpumemrec.so preloaded");
  app->footer(
      "Usage: gpumemrec run [options] -- CMD ARGS...\n"
      "Exit status: the program's own (128+N when killed by signal N); 127 when it\n"
      "is not found, 126 when it cannot be executed, 1 when libgpumemrec.so is not\n"
      "found. When libgpumemrec.so cannot work here (built for another machine, or\n"
      "needing a newer glibc than this system's), the program runs without it,\n"
      "with one warning. SIGINT/SIGTERM/SIGHUP/SIGQUIT sent to gpumemrec are\n"
      "forwarded to the program. At the end the new bundles in the dump directory\n"
      "are listed on stderr.\n"
      "The library is looked up as --library, $GPUMEMREC_LIBRARY, then relative\n"
      "to gpumemrec: ../lib/gpumemrec/ (installed), ../lib/, and its own directory\n"
      "(the build tree; the Python wheel, which carries both side by side).");
  app->add_option("--dir", o->dir, "Dump directory (GPUMEMREC_DIR) [default: $GPUMEMREC_DIR or ./gpumemrec-dumps]");
  app->add_option("--ring-events", o->ring_events, "Events kept in the ring (GPUMEMREC_RING_EVENTS)");
  app->add_option("--stack-depth", o->stack_depth, "Native frames per stack (GPUMEMREC_STACK_DEPTH)");
  app->add_option("--episode-ms", o->episode_ms, "OOM episode window in ms (GPUMEMREC_EPISODE_MS)");
  app->add_option("--max-dumps", o->max_dumps, "Bundles kept in the dump directory (GPUMEMREC_MAX_DUMPS)");
  app->add_option("--max-total-mb", o->max_total_mb, "Size cap of the dump directory (GPUMEMREC_MAX_TOTAL_MB)");
  app->add_option("--log-level", o->log_level, "Shim log level (GPUMEMREC_LOG_LEVEL)");
  app->add_flag("--no-python-stacks", o->no_python_stacks, "Do not capture Python frames (GPUMEMREC_PYTHON_STACKS=0)");
  app->add_flag("--no-python-hook", o->no_python_hook,
                "No Python start-up hook: no PyTorch/JAX view at an out-of-memory (GPUMEMREC_PYTHON_HOOK=0)");
  app->add_option("--limit", o->limit, "Simulated memory limit, e.g. 24GiB or 0:24GiB,1:40GiB (GPUMEMREC_LIMIT)");
  app->add_option("--fail-after", o->fail_after, "Fail the Nth allocation with OOM (GPUMEMREC_FAIL_AFTER)");
  app->add_option("--dump-signal", o->dump_signal, "Signal that triggers a dump, e.g. USR2 (GPUMEMREC_DUMP_SIGNAL)");
  app->add_flag("--dump-at-exit", o->dump_at_exit, "Write a bundle when the program exits (GPUMEMREC_DUMP_AT_EXIT=1)");
  app->add_option("--library", o->library, "Path of libgpumemrec.so to preload");
  app->add_option("--simulate", o->simulate,
                  "Run on a simulated GPU, NAME or NAME:COUNT devices, e.g. h100-80gb:8 "
                  "(GPUMEMREC_SIMULATE; 'gpumemrec simulate --list'; docs/simulate.md)");
  app->prefix_command();

  return [=]() -> int {
    std::vector<std::string> cmd = app->remaining();
    if (!after_dashdash->empty()) {
      if (!cmd.empty()) throw CliError(kBadInput, "give the program either after '--' or directly, not both");
      cmd = *after_dashdash;
    }
    if (cmd.empty()) throw CliError(kBadInput, "run: no program given (usage: gpumemrec run [options] -- CMD ARGS...)");
    std::string lib = find_library(o->library);
    std::string dump_dir = absolute(o->dir.empty() ? default_dump_dir() : o->dir);
    export_settings(*app, *o, dump_dir);
    // Never stop the program (preload_check.h): without a preload it
    // runs as it would have, and says so once.
    std::string refusal = preload_refusal(lib);
    if (!o->simulate.empty() && !refusal.empty())
      throw CliError(kBadInput, "--simulate: " + lib + " cannot be preloaded here (" + refusal + ")");
    if (refusal.empty())
      prepend_preload(lib);
    else
      fprintf(stderr, "gpumemrec: warning: %s cannot be preloaded here (%s); running the program without it: "
              "nothing is recorded\n", lib.c_str(), refusal.c_str());
    if (!o->simulate.empty()) setup_simulation(o->simulate, lib, cmd);
    mkdir(dump_dir.c_str(), 0700);  // so bundles land inside it (the shim makes it too)
    std::set<std::string> before;
    for (auto& p : find_bundles(dump_dir)) before.insert(p);
    int rc = run_child(cmd);
    list_new_bundles(dump_dir, before);
    return rc;
  };
}

}  // namespace gpumemrec::cli
