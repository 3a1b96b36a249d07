// What `gpumemrec top` shows, as rows and lines of text: one row per
// process and device (live bytes, peak so far, change over the last
// interval, the card's free and total memory), and for one process its top
// sites, roles and curve. The same lines make the full-screen view
// (top_screen.cpp), the plain text when stdout is not a terminal, and
// `--once`; `--json` is top_json.cpp.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "tools/top_cards.h"
#include "tools/top_source.h"

namespace gpumemrec::cli {

// Sort keys, as `top` and nvitop name their columns: the largest first.
enum class TopSort { kLive, kPeak, kGrowth };
const char* top_sort_name(TopSort s);
bool parse_top_sort(const std::string& text, TopSort* out);

struct TopRow {
  size_t process = 0;  // index into TopSnapshot::processes
  size_t device = 0;   // index into that process's devices
  bool change_known = false;
  int64_t change = 0;      // live bytes now minus `change_over_s` ago
  double change_over_s = 0;
  CardMemory card;
};

// The change of each row: against the previous refresh of the same process
// and device; at the first, against the region's curve (the highest live
// bytes of the last whole second).
class TopHistory {
 public:
  void fill(const TopSnapshot& s, std::vector<TopRow>* rows);

 private:
  using Key = std::tuple<int, uint64_t, int>;  // pid, start ticks, device
  std::map<Key, std::pair<uint64_t, uint64_t>> last_;  // live bytes, CLOCK_MONOTONIC of the reading
};

// The rows of a snapshot (by pid, then device), with their change and card.
std::vector<TopRow> top_rows(const TopSnapshot& s, Cards& cards, TopHistory* history);
// Sorted by `sort`, the largest first (ties keep their order).
void sort_rows(const TopSnapshot& s, TopSort sort, std::vector<TopRow>* rows);

enum class LineStyle { kPlain, kHeader, kSelected, kNote };
struct TopLine {
  std::string text;
  LineStyle style = LineStyle::kPlain;
};

struct ScreenState {
  int width = 80, height = 24;
  size_t selected = 0;  // index into rows
  TopSort sort = TopSort::kLive;
  double interval_s = 1;
  bool utf8 = true;     // block characters for the curve, else ASCII
  std::string message;  // the last key's answer ("" none)
  bool help = false;
};

// The full screen: header, process table (scrolled to keep the selection),
// the selected process's detail, the key line. Exactly `height` lines, none
// wider than `width` columns.
std::vector<TopLine> render_screen(const TopSnapshot& s, const std::vector<TopRow>& rows, const ScreenState& st,
                                   const std::string& cards_problem);
// Plain text for a pipe or a file: the table, then each process's top
// `top_sites` sites, then what was skipped.
std::string render_text(const TopSnapshot& s, const std::vector<TopRow>& rows, size_t top_sites,
                        const std::string& cards_problem);

// Helpers shared with the JSON output.
std::string roles_text(const status::RolesView& r);
const char* state_name(uint32_t state);
const char* names_name(uint32_t names);
// `text` cut to `width` display columns ("…" marks a cut).
std::string fit(const std::string& text, size_t width);
// The curve as one line of `width` columns: each column the highest sample of its slice.
std::string sparkline(const std::vector<uint64_t>& curve, size_t width, bool utf8);

}  // namespace gpumemrec::cli
