#include "common/live_sites.h"

#include <algorithm>
#include <unordered_map>

namespace gpumemrec::model {

std::vector<LiveSite> live_sites(const Bundle& b) {
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
  std::sort(out.begin(), out.end(), [](const LiveSite& x, const LiveSite& y) {
    return x.bytes != y.bytes ? x.bytes > y.bytes : x.stack_id < y.stack_id;
  });
  return out;
}

}  // namespace gpumemrec::model
