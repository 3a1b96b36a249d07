#include "tools/site_diff.h"

#include <algorithm>
#include <unordered_map>

#include "tools/analysis.h"
#include "common/names.h"

using namespace gpumemrec::model;  // the tools' bundle model

namespace gpumemrec::diff {
namespace {

std::string site_key(const Stack* s, uint64_t stack_id) {
  if (!s) return stack_id ? "\x1e(stack not in stacks.json)" : "\x1e(no stack recorded)";
  if (s->frames.empty()) return "\x1e(empty stack)";
  std::string k;
  for (const Frame& f : s->frames) {
    k += names::frame_key(f);
    k += '\x1d';
  }
  return k;
}

}  // namespace

void SiteTotals::add(const Bundle& b) {
  bundles.push_back(b.path);
  outcomes.push_back(b.outcome());
  std::unordered_map<std::string, size_t> index;
  for (size_t i = 0; i < keys.size(); ++i) index[keys[i]] = i;
  for (const analysis::Site& s : model::live_stacks(b)) {  // keyed by the whole stack
    const Stack* st = s.stack_id ? b.find_stack(s.stack_id) : nullptr;
    std::string k = site_key(st, s.stack_id);
    auto it = index.find(k);
    if (it == index.end()) {
      it = index.emplace(k, entries.size()).first;
      keys.push_back(k);
      Entry e;
      if (st) {
        e.frames = st->frames;
        e.python = st->python;
        e.site_frame = st->site_frame;
        e.library = st->library;
      } else {
        Frame f;
        f.function = k.substr(1);
        e.frames.push_back(f);
      }
      entries.push_back(std::move(e));
    }
    entries[it->second].bytes += s.bytes;
    entries[it->second].count += s.count;
    bytes += s.bytes;
    count += s.count;
  }
}

const model::Frame* site_of(const SiteTotals::Entry& e) {
  if (e.site_frame >= 0 && static_cast<size_t>(e.site_frame) < e.frames.size())
    return &e.frames[static_cast<size_t>(e.site_frame)];
  return e.frames.empty() ? nullptr : &e.frames.front();
}

const char* status_name(Status s) {
  switch (s) {
    case Status::kGrew: return "grew";
    case Status::kNew: return "new";
    case Status::kShrank: return "shrank";
    case Status::kGone: return "gone";
    case Status::kSame: return "same";
  }
  return "same";
}

std::vector<SiteDelta> compare(const SiteTotals& o, const SiteTotals& n) {
  std::unordered_map<std::string, size_t> old_index;
  for (size_t i = 0; i < o.keys.size(); ++i) old_index[o.keys[i]] = i;
  std::vector<SiteDelta> out;
  std::vector<bool> matched(o.keys.size(), false);
  for (size_t i = 0; i < n.keys.size(); ++i) {
    SiteDelta d;
    d.site = &n.entries[i];
    d.new_bytes = n.entries[i].bytes;
    d.new_count = n.entries[i].count;
    auto it = old_index.find(n.keys[i]);
    if (it == old_index.end()) {
      d.status = Status::kNew;
    } else {
      matched[it->second] = true;
      d.old_bytes = o.entries[it->second].bytes;
      d.old_count = o.entries[it->second].count;
      d.status = d.new_bytes > d.old_bytes ? Status::kGrew : d.new_bytes < d.old_bytes ? Status::kShrank : Status::kSame;
    }
    out.push_back(d);
  }
  for (size_t i = 0; i < o.keys.size(); ++i) {
    if (matched[i]) continue;
    SiteDelta d;
    d.site = &o.entries[i];
    d.status = Status::kGone;
    d.old_bytes = o.entries[i].bytes;
    d.old_count = o.entries[i].count;
    out.push_back(d);
  }
  std::stable_sort(out.begin(), out.end(), [](const SiteDelta& x, const SiteDelta& y) {
    if (x.delta() != y.delta()) return x.delta() > y.delta();
    return x.new_bytes > y.new_bytes;
  });
  return out;
}

}  // namespace gpumemrec::diff
