#include "common/live_sites.h"

#include <algorithm>
#include <string>
#include <unordered_map>

#include "common/names.h"
#include "common/site_rules.h"

namespace gpumemrec::model {

namespace {

bool larger(const LiveSite& x, const LiveSite& y) {
  return x.bytes != y.bytes ? x.bytes > y.bytes : x.stack_id < y.stack_id;
}

}  // namespace

// The owning library, the site frame and its callers, as one key: the
// Python frames outside it and, for a native site, the frames of its own
// module (the program's main, a user library's entry point). Stacks that
// differ only inside the framework (below the site), in the interpreter's
// native frames or in libc's are one site; two callers of one helper stay
// apart. String compares only: summary.txt computes this for every stack
// of a dump (10,000 in the large case). A stack without frames (or not in
// stacks.json) keys by its id.
std::string live_site_key(const Stack* s, uint64_t stack_id) {
  const Frame* site = s ? site::site_frame_of(*s) : nullptr;
  if (!site) return "\x1e" + std::to_string(stack_id);
  std::string key = s->attributed ? s->library : site::owning_library(*s, site::rules_from_environment());
  for (size_t i = size_t(site - s->frames.data()); i < s->frames.size(); ++i) {
    const Frame& f = s->frames[i];
    const bool caller = f.kind == FrameKind::kPython || (site->kind != FrameKind::kPython && f.module == site->module);
    if (&f != site && !caller) continue;
    key += '\x1d';
    key += names::frame_key(f);
  }
  return key;
}

std::vector<LiveSite> live_stacks(const Bundle& b) {
  std::unordered_map<uint64_t, LiveSite> by_stack;
  for (const Allocation& a : b.allocations) {
    if (a.memory_type == "mapping") continue;
    LiveSite& s = by_stack[a.stack_id];
    s.stack_id = a.stack_id;
    s.bytes += a.size;
    s.count += 1;
  }
  std::vector<LiveSite> out;
  out.reserve(by_stack.size());
  for (auto& kv : by_stack) out.push_back(kv.second);
  std::sort(out.begin(), out.end(), larger);
  return out;
}

std::vector<LiveSite> live_sites(const Bundle& b) {
  std::unordered_map<std::string, size_t> index;
  std::vector<LiveSite> out;
  for (const LiveSite& s : live_stacks(b)) {  // largest first: the first of a site is shown
    const Stack* stack = s.stack_id ? b.find_stack(s.stack_id) : nullptr;
    const auto [it, fresh] = index.emplace(live_site_key(stack, s.stack_id), out.size());
    if (fresh) {
      out.push_back(s);
      out.back().stack_ids.push_back(s.stack_id);
      continue;
    }
    LiveSite& site = out[it->second];
    site.bytes += s.bytes;
    site.count += s.count;
    site.stack_ids.push_back(s.stack_id);
  }
  std::stable_sort(out.begin(), out.end(), larger);
  return out;
}

}  // namespace gpumemrec::model
