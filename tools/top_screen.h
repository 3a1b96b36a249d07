// The full-screen view of `gpumemrec top` (ncurses, the wide-character
// build): refreshed every interval, keys as `top` and nvitop have them
// (docs/cli.md). It asks the selected process to name its sites
// (TopSource::watch); the others publish numbers only.
#pragma once
#include <string>
#include <vector>

#include "tools/top_cards.h"
#include "tools/top_source.h"
#include "tools/top_view.h"

namespace gpumemrec::cli {

struct TopOptions {
  double interval_s = 1;
  uint64_t iterations = 0;  // plain text: frames to print (0: until stopped)
  bool once = false, json = false, batch = false;
  TopSort sort = TopSort::kLive;
  size_t top = 10;
  std::string dir;
  std::vector<int> pids;
};

// How long a reader's request for names lasts past the refresh that made it.
constexpr uint64_t kWatchSlackNs = 3000000000ull;

// Runs until `q`; the exit status.
int run_top_screen(TopSource& source, Cards& cards, const TopOptions& o);

}  // namespace gpumemrec::cli
