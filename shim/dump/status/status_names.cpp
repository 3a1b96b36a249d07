#include "shim/dump/status/status_names.h"

#include <time.h>

#include <algorithm>
#include <cerrno>

#include "common/live_sites.h"
#include "common/names.h"
#include "shim/base/background_thread.h"
#include "shim/base/symbol_cache.h"
#include "shim/dump/query/stack_model.h"
#include "shim/record/recorder.h"
#include "shim/record/stack_table.h"

namespace gpumemrec {

namespace {

// Frames whose function a rule may look at: the user's (the site, its
// callers, GPUMEMREC_SITE_SKIP's function patterns) and the interpreter's
// (where the evaluation loop runs decides where the Python frames go:
// common/frame_order.h).
bool needs_function(site::FrameClass c) {
  return c == site::FrameClass::kUser || c == site::FrameClass::kInterpreter;
}

struct Lock {
  explicit Lock(pthread_mutex_t* m) : m_(m) { pthread_mutex_lock(m_); }
  ~Lock() { pthread_mutex_unlock(m_); }
  pthread_mutex_t* m_;
};

}  // namespace

SiteNamer::SiteNamer(Recorder* r, std::vector<std::string> skip_patterns) : r_(r), rules_(std::move(skip_patterns)) {
  pthread_condattr_t attr;
  pthread_condattr_init(&attr);
  pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
  pthread_cond_init(&cv_, &attr);
  pthread_condattr_destroy(&attr);
}

void SiteNamer::request(const std::vector<StackFigure>& stacks) {
  Lock l(&mu_);
  if (stopped_.load(std::memory_order_acquire)) return;
  wanted_.clear();
  for (const StackFigure& s : stacks)
    if (!names_.count(s.stack_id)) wanted_.push_back(s.stack_id);
  if (wanted_.empty()) return;
  if (!running_) running_ = start_background_thread(thread_main, this, "gpumemrec-names");
  pthread_cond_signal(&cv_);
}

bool SiteNamer::group(const std::vector<StackFigure>& stacks, std::vector<SiteFigure>* out) {
  out->clear();
  bool all = true;
  std::unordered_map<std::string, size_t> index;
  Lock l(&mu_);
  for (const StackFigure& s : stacks) {  // largest first: the first of a site is shown
    auto it = names_.find(s.stack_id);
    all = all && it != names_.end();
    const std::string key = it != names_.end() ? it->second.key : "\x1f" + std::to_string(s.stack_id);
    const auto [at, fresh] = index.emplace(key, out->size());
    if (!fresh) {
      SiteFigure& site = (*out)[at->second];
      site.bytes += s.bytes;
      site.count += s.count;
      ++site.stacks;
      continue;
    }
    SiteFigure f;
    f.bytes = s.bytes;
    f.count = s.count;
    f.stack_id = s.stack_id;
    f.stacks = 1;
    f.named = it != names_.end();
    if (f.named) {
      f.label = it->second.label;
      f.library = it->second.library;
    }
    out->push_back(std::move(f));
  }
  std::stable_sort(out->begin(), out->end(), [](const SiteFigure& a, const SiteFigure& b) {
    return a.bytes != b.bytes ? a.bytes > b.bytes : a.stack_id < b.stack_id;
  });
  return all;
}

void* SiteNamer::thread_main(void* self) {
  static_cast<SiteNamer*>(self)->run();
  return nullptr;
}

// The stacks wanted now; false (and the thread ends) after kIdleSeconds
// without any, or at exit.
bool SiteNamer::next(std::vector<uint32_t>* ids) {
  Lock l(&mu_);
  timespec until{};
  clock_gettime(CLOCK_MONOTONIC, &until);
  until.tv_sec += kIdleSeconds;
  while (wanted_.empty() && !stopped_.load(std::memory_order_acquire))
    if (pthread_cond_timedwait(&cv_, &mu_, &until) == ETIMEDOUT) break;
  if (wanted_.empty() || stopped_.load(std::memory_order_acquire)) {
    running_ = false;
    return false;
  }
  ids->swap(wanted_);
  wanted_.clear();
  if (names_.size() + ids->size() > kMaxNames) names_.clear();
  return true;
}

void SiteNamer::run() {
  std::vector<uint32_t> ids;
  while (next(&ids)) {
    for (uint32_t id : ids) {
      {
        Lock l(&mu_);
        if (stopped_.load(std::memory_order_acquire)) break;
        if (names_.count(id)) continue;
      }
      SpinGuard g(work_);
      follow_loader();
      Named n;
      try {
        n = name_one(id);
      } catch (...) {  // out of memory: this stack stays unnamed for now
        continue;
      }
      Lock l(&mu_);
      names_.emplace(id, std::move(n));
    }
    ids.clear();
  }
  // libdw's session goes with the thread: its memory, and the descriptors
  // it holds open on the modules' files.
  SpinGuard g(work_);
  sym_.end();
  begun_ = false;
}

// New modules: the symbolizer reads the process's modules again (its names
// stay right). A module unloaded: addresses may now be another's, every
// name goes.
void SiteNamer::follow_loader() {
  const uint64_t adds = loader_adds(), subs = loader_subs();
  if (subs != subs_) {
    Lock l(&mu_);
    names_.clear();
  }
  if (!begun_ || adds != adds_ || subs != subs_) {
    sym_.end();
    sym_.begin();
    begun_ = true;
    adds_ = adds;
    subs_ = subs;
  }
}

SiteNamer::Named SiteNamer::name_one(uint32_t stack_id) {
  Named n;
  if (stack_id == StackTable::kFull) {
    n.key = model::live_site_key(nullptr, stack_id);
    return n;
  }
  auto lazily = [&](uint64_t ip) {
    model::Frame f = native_frame(sym_.module_of(ip));
    if (needs_function(rules_.classify(f))) f = native_frame(sym_.describe(ip));
    return f;
  };
  model::Stack s = stack_model(r_, stack_id, lazily);
  site::attribute(&s, rules_);
  const model::Frame* site = site::site_frame_of(s);
  if (site && site->kind == model::FrameKind::kNative && site->function.empty() &&
      !needs_function(rules_.classify(*site))) {
    // Every frame skipped: the site is a framework or runtime frame.
    s = stack_model(r_, stack_id, [&](uint64_t ip) { return native_frame(sym_.describe(ip)); });
    site::attribute(&s, rules_);
    site = site::site_frame_of(s);
  }
  n.key = model::live_site_key(site ? &s : nullptr, stack_id);
  if (site) n.label = names::frame_label(*site, false);
  n.library = s.library;
  return n;
}

}  // namespace gpumemrec
