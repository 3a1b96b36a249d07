#include "shim/dump/status/status_names.h"

#include <algorithm>

#include "common/live_sites.h"
#include "common/names.h"
#include "shim/base/symbol_cache.h"
#include "shim/base/thread_clock.h"
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

}  // namespace

// New modules: the symbolizer reads the process's modules again (its names
// stay right). A module unloaded: addresses may now be another's, every
// name goes.
void SiteNamer::follow_loader() {
  const uint64_t adds = loader_adds(), subs = loader_subs();
  if (subs != subs_) names_.clear();
  if (!begun_ || adds != adds_ || subs != subs_) {
    sym_.end();
    sym_.begin();
    begun_ = true;
    adds_ = adds;
    subs_ = subs;
  }
}

SiteNamer::Named SiteNamer::name_one(Recorder* r, uint32_t stack_id) {
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
  model::Stack s = stack_model(r, stack_id, lazily);
  site::attribute(&s, rules_);
  const model::Frame* site = site::site_frame_of(s);
  if (site && site->kind == model::FrameKind::kNative && site->function.empty() &&
      !needs_function(rules_.classify(*site))) {
    // Every frame skipped: the site is a framework or runtime frame.
    s = stack_model(r, stack_id, [&](uint64_t ip) { return native_frame(sym_.describe(ip)); });
    site::attribute(&s, rules_);
    site = site::site_frame_of(s);
  }
  n.key = model::live_site_key(site ? &s : nullptr, stack_id);
  if (site) n.label = names::frame_label(*site, false);
  n.library = s.library;
  return n;
}

bool SiteNamer::name(Recorder* r, const std::vector<StackFigure>& stacks, size_t max_new, uint64_t budget_ns) {
  if (names_.size() + stacks.size() > kMaxNames) names_.clear();
  bool all = true;
  size_t made = 0;
  uint64_t start = 0;
  for (const StackFigure& s : stacks) {
    if (names_.count(s.stack_id)) continue;
    if (made == 0) {
      follow_loader();
      start = thread_cpu_ns();
    } else if (made >= max_new || thread_cpu_ns() - start > budget_ns) {
      all = false;
      break;
    }
    names_.emplace(s.stack_id, name_one(r, s.stack_id));
    ++made;
  }
  // Every name made: libdw's session goes (its memory, and the descriptors
  // it holds open on the modules' files); the next new stack begins another.
  if (all && begun_) {
    sym_.end();
    begun_ = false;
  }
  return all;
}

void SiteNamer::group(const std::vector<StackFigure>& stacks, std::vector<SiteFigure>* out) const {
  out->clear();
  std::unordered_map<std::string, size_t> index;
  for (const StackFigure& s : stacks) {  // largest first: the first of a site is shown
    auto it = names_.find(s.stack_id);
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
}

}  // namespace gpumemrec
