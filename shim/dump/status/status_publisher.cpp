#include "shim/dump/status/status_publisher.h"

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <new>

#include "common/status_dir.h"
#include "shim/base/asan_build.h"
#include "shim/base/clock.h"
#include "shim/base/log.h"
#include "shim/base/spinlock.h"
#include "shim/dump/capture/framework_report.h"
#include "shim/dump/status/status_figures.h"
#include "shim/dump/status/status_names.h"
#include "shim/dump/status/status_writer.h"
#include "shim/record/recorder.h"

namespace gpumemrec {

namespace {

struct State {
  State(Recorder* rec, const StatusIdentity& ident)
      : r(rec), id(ident), namer(rec, rec->cfg.site_skip),
        dir(status::resolve_dir(rec->cfg.status_dir, unsigned(geteuid()))) {}
  Recorder* r;
  StatusIdentity id;
  FigureCollector collector;
  StatusFigures figures;
  SiteNamer namer;
  RegionWriter writer;
  std::vector<SiteFigure> sites;
  std::string dir;
  status::Region* region = nullptr;
  bool refused = false;  // the file could not be made: said once, not tried again
  bool due = false;      // figures collected, not written yet
  uint64_t last_ns = 0;
};

State* g_state = nullptr;
std::atomic<bool> g_stopped{false};
SpinLock g_update_lock;  // around an update (an ASan build's fork waits for it)

void at_exit() { status_stop(); }

// Asks for names while a reader wants them (the naming thread makes them:
// status_names.h) and groups into sites with the names there are.
uint32_t make_sites(State& s, uint64_t now, uint64_t* sites_total) {
  const bool watched = s.region && __atomic_load_n(&s.region->watch_until_mono_ns, __ATOMIC_RELAXED) > now;
  const std::vector<StackFigure>& stacks = s.figures.stacks;
  if (watched) s.namer.request(stacks);
  const bool all = s.namer.group(stacks, &s.sites);
  *sites_total = s.sites.size() + (s.figures.stacks_total - stacks.size());
  return all ? status::kNamesDone : watched ? status::kNamesPartial : status::kNamesOff;
}

void update(State& s, uint64_t now) {
  // A process that never held GPU memory (a launcher's shell, a data
  // loader worker) publishes nothing.
  if (!s.region && s.figures.devices.empty()) return;
  StatusUpdate u;
  u.figures = &s.figures;
  u.sites = &s.sites;
  u.now_mono_ns = now;
  u.now_real_ns = realtime_ns();
  u.names = make_sites(s, now, &u.sites_total);
  s.writer.follow_roles(framework_report_latest(), u.now_real_ns);
  if (s.region) {
    s.writer.write(s.region, u);
    return;
  }
  std::string why;
  s.region = status_file_create(s.dir, s.id, [&](status::Region* reg) { s.writer.write(reg, u); }, &why);
  if (!s.region) {
    s.refused = true;
    GM_WARN("no status region for 'gpumemrec top' in {}: {}", s.dir, why);
  } else if (g_stopped.load(std::memory_order_acquire)) {
    status_file_remove();  // exit came while it was being made
  }
}

}  // namespace

bool status_start(Recorder* r, const StatusIdentity& id) {
  if (!r || !r->cfg.status) return false;
  g_state = new (std::nothrow) State(r, id);
  if (!g_state) return false;
  std::atexit(at_exit);
  return true;
}

void status_after_pass_locked(const PeakKept& kept, uint64_t now_ns) {
  State* s = g_state;
  if (!s || s->refused || g_stopped.load(std::memory_order_relaxed)) return;
  if (s->last_ns != 0 && now_ns - s->last_ns < status::kUpdateNs) return;
  SpinGuard g(g_update_lock);
  try {
    s->collector.collect(s->r->ring, s->r->live_bytes, kept, now_ns, &s->figures);
    s->due = true;
    s->last_ns = now_ns;
  } catch (...) {  // out of memory: no update this time
  }
}

void status_after_pass(uint64_t now_ns) {
  State* s = g_state;
  if (!s || !s->due || g_stopped.load(std::memory_order_acquire)) return;
  SpinGuard g(g_update_lock);
  s->due = false;
  try {
    update(*s, now_ns);
  } catch (...) {  // out of memory: no update this time
  }
}

void status_stop() {
  g_stopped.store(true, std::memory_order_release);
  status_file_remove();
  if (State* s = g_state) s->namer.stop();
}

void status_atfork_prepare() {
  if (!kAsanBuild || !g_state) return;
  g_update_lock.lock();
  g_state->namer.fork_prepare();
}

void status_atfork_parent() {
  if (!kAsanBuild || !g_state) return;
  g_state->namer.fork_parent();
  g_update_lock.unlock();
}

void status_atfork_child() {
  new (&g_update_lock) SpinLock();
  State* s = g_state;
  if (!s || g_stopped.load(std::memory_order_relaxed)) return;
  // The parent's state may have been cut in the middle of an update: it is
  // left as it is (leaked) and the child starts afresh.
  status_file_forget(s->region);
  g_state = nullptr;
  try {
    g_state = new State(s->r, s->id);
  } catch (...) {
  }
}

const status::Region* status_region_for_tests() { return g_state ? g_state->region : nullptr; }

}  // namespace gpumemrec
