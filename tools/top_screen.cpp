#include "tools/top_screen.h"

#define NCURSES_WIDECHAR 1
#include <curses.h>
#include <langinfo.h>

#include <clocale>
#include <cstdlib>
#include <cstring>
#include <tuple>

#include "tools/cli.h"

namespace gpumemrec::cli {

namespace {

using RowKey = std::tuple<int, uint64_t, int>;  // pid, start ticks, device

RowKey key_of(const TopSnapshot& s, const TopRow& r) {
  const status::RegionView& v = s.processes[r.process].v;
  return {v.pid, v.start_ticks, v.devices[r.device].device};
}

// What a refresh reads, kept until the next one (keys re-sort and redraw it).
struct View {
  TopSnapshot snap;
  std::vector<TopRow> rows;
  uint64_t next_ns = 0;
};

void refresh_view(TopSource& source, Cards& cards, TopHistory* history, const TopOptions& o, View* v) {
  v->snap = source.read();
  v->rows = top_rows(v->snap, cards, history);
  v->next_ns = v->snap.mono_ns + uint64_t(o.interval_s * 1e9);
}

// The selected process names its sites until a while after the next refresh.
void watch_selected(TopSource& source, const View& v, size_t selected, const TopOptions& o) {
  if (selected >= v.rows.size()) return;
  const TopProcess& p = v.snap.processes[v.rows[selected].process];
  source.watch(p, v.next_ns + kWatchSlackNs + uint64_t(o.interval_s * 1e9));
}

attr_t attr_of(LineStyle s) {
  switch (s) {
    case LineStyle::kHeader: return A_BOLD;
    case LineStyle::kSelected: return A_REVERSE;
    case LineStyle::kNote: return A_DIM;
    default: return A_NORMAL;
  }
}

void draw(const View& v, const ScreenState& st, const std::string& cards_problem) {
  const std::vector<TopLine> lines = render_screen(v.snap, v.rows, st, cards_problem);
  for (size_t i = 0; i < lines.size() && int(i) < st.height; ++i) {
    move(int(i), 0);
    clrtoeol();
    attrset(attr_of(lines[i].style));
    addnstr(lines[i].text.c_str(), int(lines[i].text.size()));
    attrset(A_NORMAL);
  }
  refresh();
}

// A key; false to quit.
bool on_key(int ch, TopSource& source, View* v, ScreenState* st) {
  if (st->help && ch != ERR && ch != KEY_RESIZE) {
    st->help = false;
    return true;
  }
  const size_t n = v->rows.size();
  switch (ch) {
    case 'q': case 'Q': case 27: return false;
    case KEY_UP: case 'k': if (st->selected > 0) --st->selected; break;
    case KEY_DOWN: case 'j': if (st->selected + 1 < n) ++st->selected; break;
    case KEY_HOME: st->selected = 0; break;
    case KEY_END: st->selected = n ? n - 1 : 0; break;
    case 'l': st->sort = TopSort::kLive; break;
    case 'p': st->sort = TopSort::kPeak; break;
    case 'g': st->sort = TopSort::kGrowth; break;
    case '>': st->sort = st->sort == TopSort::kLive ? TopSort::kPeak : st->sort == TopSort::kPeak ? TopSort::kGrowth : TopSort::kLive; break;
    case '<': st->sort = st->sort == TopSort::kLive ? TopSort::kGrowth : st->sort == TopSort::kPeak ? TopSort::kLive : TopSort::kPeak; break;
    case 'h': case '?': st->help = true; break;
    case 'd':
      st->message = st->selected < n ? source.request_dump(v->snap.processes[v->rows[st->selected].process])
                                     : "no process selected";
      return true;
    default: break;
  }
  st->message.clear();
  return true;
}

// The selection follows its process and device across a refresh or a new
// sort order.
struct Selection {
  RowKey key;
  bool set = false;
  void place(View* v, ScreenState* st) {
    sort_rows(v->snap, st->sort, &v->rows);
    for (size_t i = 0; set && i < v->rows.size(); ++i)
      if (key_of(v->snap, v->rows[i]) == key) st->selected = i;
    if (st->selected >= v->rows.size()) st->selected = v->rows.empty() ? 0 : v->rows.size() - 1;
    take(*v, *st);
  }
  void take(const View& v, const ScreenState& st) {
    if (st.selected >= v.rows.size()) return;
    key = key_of(v.snap, v.rows[st.selected]);
    set = true;
  }
};

bool moves(int ch) { return ch == KEY_UP || ch == 'k' || ch == KEY_DOWN || ch == 'j' || ch == KEY_HOME || ch == KEY_END; }

}  // namespace

int run_top_screen(TopSource& source, Cards& cards, const TopOptions& o) {
  std::setlocale(LC_ALL, "");
  ScreenState st;
  st.sort = o.sort;
  st.interval_s = o.interval_s;
  st.utf8 = std::strcmp(nl_langinfo(CODESET), "UTF-8") == 0;
  // newterm, not initscr: initscr ends the program on a terminal it cannot drive.
  SCREEN* screen = newterm(nullptr, stdout, stdin);
  if (!screen) failure(std::string("cannot drive this terminal (TERM=") + (getenv("TERM") ? getenv("TERM") : "") + "); use --batch");
  cbreak();
  noecho();
  keypad(stdscr, TRUE);
  curs_set(0);
  set_escdelay(25);
  TopHistory history;
  View v;
  Selection sel;
  refresh_view(source, cards, &history, o, &v);
  sel.place(&v, &st);
  for (bool run = true; run;) {
    watch_selected(source, v, st.selected, o);
    getmaxyx(stdscr, st.height, st.width);
    draw(v, st, cards.problem());
    const uint64_t now = top_mono_ns();
    timeout(now >= v.next_ns ? 0 : int((v.next_ns - now) / 1000000) + 1);
    const int ch = getch();
    if (ch != ERR) {
      run = on_key(ch, source, &v, &st);
      if (moves(ch)) sel.take(v, st);
      sel.place(&v, &st);
      if (ch != KEY_RESIZE) clear();
    }
    if (top_mono_ns() >= v.next_ns) {
      refresh_view(source, cards, &history, o, &v);
      sel.place(&v, &st);
    }
  }
  endwin();
  delscreen(screen);
  return kOk;
}

}  // namespace gpumemrec::cli
