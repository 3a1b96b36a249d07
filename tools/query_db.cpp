#include "tools/query_db.h"

#include <optional>
#include <string>
#include <unordered_map>

#include "common/names.h"
#include "common/site_rules.h"
#include "tools/cli.h"
#include "tools/role_view.h"

using namespace gpumemrec::model;  // the tools' bundle model

namespace gpumemrec::cli {

const char* const kQuerySchema = R"(-- Every table has a `bundle` column (the bundle directory's name), last:
-- `gpumemrec query DIR` loads every bundle of a directory (all ranks of a
-- job) into one database.
-- Every event of the ring (events.json), oldest first.
CREATE TABLE events (
  seq INTEGER, timestamp REAL, event_type TEXT, api TEXT, device_id INTEGER,
  address INTEGER, size INTEGER, result INTEGER, thread_id INTEGER,
  stack_id INTEGER, duration_ns INTEGER, memory_allocated INTEGER,
  memory_change INTEGER, memory_type TEXT, stream INTEGER, bundle TEXT);
-- Allocations still live at the dump (allocations.json).
CREATE TABLE allocations (
  address INTEGER, size INTEGER, device_id INTEGER, api TEXT, memory_type TEXT,
  timestamp REAL, thread_id INTEGER, stack_id INTEGER, seq INTEGER, bundle TEXT);
-- Stacks (stacks.json); python is captured / borrowed / no_gil /
-- native_thread / not_python / disabled. site: the frame that names the
-- allocation site (the innermost frame of the user's code, as one label) and
-- site_depth its depth in frames; library: the owning library's file name
-- (NULL when unknown). docs/design.md, "Who holds the memory". autograd_node:
-- PyTorch's backward node the allocation ran in (NULL when none);
-- python_thread: the thread that lent a stack Python frames (borrowed, or a
-- hook's callers).
CREATE TABLE stacks (stack_id INTEGER, python TEXT, site TEXT, site_depth INTEGER, library TEXT, bundle TEXT,
  autograd_node TEXT, python_thread INTEGER, PRIMARY KEY (bundle, stack_id));
-- Frames of each stack, innermost first (depth 0), as stacks.json orders them.
CREATE TABLE frames (
  stack_id INTEGER, depth INTEGER, kind TEXT, module TEXT, offset INTEGER,
  function TEXT, file TEXT, line INTEGER, bundle TEXT);
-- Lifetimes: one row per allocation the bundle knows about. Freed in the
-- ring: start_time and end_time set (start_time NULL when it was allocated
-- before the ring). Live at the dump: end_time NULL.
CREATE TABLE intervals (
  address INTEGER, size INTEGER, device_id INTEGER, api TEXT,
  start_time REAL, end_time REAL, stack_id INTEGER, bundle TEXT);
-- metadata.json scalars and custom_metadata (as custom.<key>); the verdict
-- as outcome, outcome_detail (when the bundle has one), recovery.<key> (when
-- it recovered) and recovered_failures (the count, in every bundle).
CREATE TABLE metadata (key TEXT, value, bundle TEXT, PRIMARY KEY (bundle, key));
-- Out-of-memory failures recovered without a bundle since the previous
-- bundle (metadata.json recovered_failures.listed), oldest first.
CREATE TABLE recovered_failures (
  timestamp REAL, device_id INTEGER, size INTEGER, api TEXT, thread_id INTEGER,
  stack_id INTEGER, after_ms REAL, freed_bytes INTEGER, bundle TEXT);
-- Where each device's memory went at the dump (metadata.json
-- device_accounting): NULL where a figure is unknown; other_processes_bytes
-- sums the other processes NVML lists (see other_processes).
CREATE TABLE device_accounting (
  device INTEGER, total_bytes INTEGER, free_bytes INTEGER, recorded_live_bytes INTEGER,
  process_unrecorded_bytes INTEGER, other_processes_bytes INTEGER, unaccounted_bytes INTEGER, note TEXT,
  bundle TEXT);
-- The recorded live bytes of each device by owning library.
CREATE TABLE recorded_by_library (device INTEGER, library TEXT, bytes INTEGER, bundle TEXT);
-- The other processes NVML lists on each device (used_bytes NULL when NVML
-- does not say).
CREATE TABLE other_processes (device INTEGER, pid INTEGER, name TEXT, used_bytes INTEGER, bundle TEXT);
-- Memory by role on each device (docs/advice.md): layer
-- "framework" rows are the framework's roles (framework.json), "driver" rows
-- what the driver level knows (libraries, context, other processes, free);
-- bytes NULL when unknown.
CREATE TABLE roles (device INTEGER, role TEXT, layer TEXT, name TEXT, bytes INTEGER, bundle TEXT);
-- Each device's high-water mark (peak.json), and the sites live at it
-- (stack_id joins stacks).
CREATE TABLE peak (device INTEGER, peak_bytes INTEGER, peak_time_ns INTEGER, peak_seq INTEGER, exact INTEGER,
  why_inexact TEXT, live_now_bytes INTEGER, events_replayed INTEGER, bundle TEXT);
CREATE TABLE peak_sites (device INTEGER, stack_id INTEGER, bytes INTEGER, count INTEGER, bundle TEXT);
-- "What to try" (docs/advice.md): the rule, the figures that call for it,
-- the knob and where it is documented.
CREATE TABLE advice (device INTEGER, rule TEXT, evidence TEXT, action TEXT, source TEXT, bundle TEXT);
-- Live bytes per call site at the dump, named by its site frame and library.
CREATE VIEW sites AS
  SELECT a.stack_id, COUNT(*) AS count, SUM(a.size) AS bytes, s.site AS site, s.library AS library, a.bundle
  FROM allocations a LEFT JOIN stacks s ON s.bundle = a.bundle AND s.stack_id = a.stack_id
  GROUP BY a.bundle, a.stack_id ORDER BY bytes DESC;
)";

namespace {

struct Stmt {
  sqlite3_stmt* s = nullptr;
  Stmt(sqlite3* db, const char* sql) {
    if (sqlite3_prepare_v2(db, sql, -1, &s, nullptr) != SQLITE_OK) failure(std::string("SQLite: ") + sqlite3_errmsg(db));
  }
  ~Stmt() { sqlite3_finalize(s); }
  Stmt& i(int col, int64_t v) {
    sqlite3_bind_int64(s, col, v);
    return *this;
  }
  Stmt& d(int col, double v) {
    sqlite3_bind_double(s, col, v);
    return *this;
  }
  Stmt& null(int col) {
    sqlite3_bind_null(s, col);
    return *this;
  }
  Stmt& t(int col, const std::string& v) {
    sqlite3_bind_text(s, col, v.data(), static_cast<int>(v.size()), SQLITE_STATIC);
    return *this;
  }
  void step(sqlite3* db) {
    if (sqlite3_step(s) != SQLITE_DONE) failure(std::string("SQLite: ") + sqlite3_errmsg(db));
    sqlite3_reset(s);
  }
};

void exec(sqlite3* db, const char* sql) {
  char* err = nullptr;
  if (sqlite3_exec(db, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    std::string m = err ? err : "unknown error";
    sqlite3_free(err);
    failure("SQLite: " + m);
  }
}

int64_t as_i(uint64_t v) { return static_cast<int64_t>(v); }

// One function per table; `name` goes into the bundle column of every row.

void insert_events(sqlite3* db, const Bundle& b, const std::string& name) {
  Stmt ins(db, "INSERT INTO events VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
  for (const Event& e : b.events) {
    ins.i(1, as_i(e.seq)).d(2, e.timestamp).t(3, b.str(e.event_type)).t(4, b.str(e.api)).i(5, e.device_id);
    ins.i(6, as_i(e.address)).i(7, as_i(e.size)).i(8, e.result).i(9, e.thread_id).i(10, as_i(e.stack_id));
    ins.i(11, as_i(e.duration_ns)).i(12, as_i(e.memory_allocated)).i(13, e.memory_change);
    ins.t(14, b.str(e.memory_type)).i(15, as_i(e.stream)).t(16, name);
    ins.step(db);
  }
}

void insert_allocations(sqlite3* db, const Bundle& b, const std::string& name) {
  Stmt ins(db, "INSERT INTO allocations VALUES (?,?,?,?,?,?,?,?,?,?)");
  for (const Allocation& a : b.allocations) {
    ins.i(1, as_i(a.address)).i(2, as_i(a.size)).i(3, a.device_id).t(4, a.api).t(5, a.memory_type);
    ins.d(6, a.timestamp).i(7, a.thread_id).i(8, as_i(a.stack_id)).i(9, as_i(a.seq)).t(10, name);
    ins.step(db);
  }
}

void insert_stacks(sqlite3* db, const Bundle& b, const std::string& name) {
  Stmt st(db, "INSERT OR REPLACE INTO stacks VALUES (?,?,?,?,?,?,?,?)");
  Stmt fr(db, "INSERT INTO frames VALUES (?,?,?,?,?,?,?,?,?)");
  static const std::string kinds[] = {"python", "native", "other"};
  for (const Stack& s : b.stacks) {
    st.i(1, as_i(s.stack_id)).t(2, s.python);
    const Frame* site = site::site_frame_of(s);
    const std::string label = site ? names::frame_label(*site, false) : std::string();  // bound until step()
    if (site) st.t(3, label).i(4, site - s.frames.data());
    else st.null(3).null(4);
    if (s.library.empty()) st.null(5);
    else st.t(5, s.library);
    st.t(6, name);
    if (s.autograd_node.empty()) st.null(7);
    else st.t(7, s.autograd_node);
    if (s.has_lender()) st.i(8, as_i(s.python_thread));
    else st.null(8);
    st.step(db);
    for (size_t d = 0; d < s.frames.size(); ++d) {
      const Frame& f = s.frames[d];
      fr.i(1, as_i(s.stack_id)).i(2, static_cast<int64_t>(d)).t(3, kinds[static_cast<int>(f.kind)]).t(4, f.module);
      fr.i(5, as_i(f.offset)).t(6, f.function).t(7, f.file).i(8, f.line).t(9, name);
      fr.step(db);
    }
  }
}

// Intervals: alloc/free pairs of the ring, then the live allocations.
void insert_intervals(sqlite3* db, const Bundle& b, const std::string& name) {
  Stmt ins(db, "INSERT INTO intervals VALUES (?,?,?,?,?,?,?,?)");
  struct Open {
    double start;
    uint64_t size;
    int32_t device;
    uint16_t api;
    uint64_t stack_id;
  };
  std::unordered_map<uint64_t, Open> open;  // key: address*2 + physical
  for (const Event& e : b.events) {
    if (e.result != 0 || e.address == 0) continue;
    uint64_t key = e.address * 2 + (e.mem_kind == MemoryType::kPhysical);
    if (e.kind == EventKind::kAlloc) {
      open[key] = {e.timestamp, e.size, e.device_id, e.api, e.stack_id};
    } else if (e.kind == EventKind::kFree) {
      auto it = open.find(key);
      ins.i(1, as_i(e.address)).t(8, name);
      if (it != open.end()) {
        ins.i(2, as_i(it->second.size)).i(3, it->second.device).t(4, b.str(it->second.api)).d(5, it->second.start);
        ins.d(6, e.timestamp).i(7, as_i(it->second.stack_id));
        open.erase(it);
      } else {
        ins.i(2, as_i(e.size)).i(3, e.device_id).t(4, b.str(e.api)).null(5).d(6, e.timestamp).i(7, 0);
      }
      ins.step(db);
    }
  }
  for (const Allocation& a : b.allocations) {
    ins.i(1, as_i(a.address)).i(2, as_i(a.size)).i(3, a.device_id).t(4, a.api).d(5, a.timestamp).null(6);
    ins.i(7, as_i(a.stack_id)).t(8, name).step(db);
  }
}

// The verdict's metadata keys and the recovered_failures rows.
void insert_verdict(sqlite3* db, const Bundle& b, const std::string& name) {
  Stmt ins(db, "INSERT OR REPLACE INTO metadata VALUES (?,?,?)");
  const Metadata& m = b.metadata;
  if (!b.outcome().empty()) ins.t(1, "outcome").t(2, b.outcome()).t(3, name).step(db);
  if (!b.outcome_detail().empty()) ins.t(1, "outcome_detail").t(2, b.outcome_detail()).t(3, name).step(db);
  if (m.recovery) {
    ins.t(1, "recovery.after_ms").d(2, m.recovery->after_ms).t(3, name).step(db);
    ins.t(1, "recovery.freed_bytes").i(2, as_i(m.recovery->freed_bytes)).t(3, name).step(db);
    ins.t(1, "recovery.retry_size").i(2, as_i(m.recovery->retry_size)).t(3, name).step(db);
    ins.t(1, "recovery.retry_api").t(2, m.recovery->retry_api).t(3, name).step(db);
    ins.t(1, "recovery.thread_id").i(2, m.recovery->thread_id).t(3, name).step(db);
    if (!m.recovery->handler.empty()) ins.t(1, "recovery.handler").t(2, m.recovery->handler).t(3, name).step(db);
  }
  ins.t(1, "recovered_failures").i(2, as_i(m.recovered_count)).t(3, name).step(db);
  Stmt rf(db, "INSERT INTO recovered_failures VALUES (?,?,?,?,?,?,?,?,?)");
  for (const RecoveredFailure& f : m.recovered_listed) {
    rf.d(1, f.timestamp).i(2, f.device_id).i(3, as_i(f.size)).t(4, f.api).i(5, f.thread_id).i(6, as_i(f.stack_id));
    rf.d(7, f.after_ms).i(8, as_i(f.freed_bytes)).t(9, name).step(db);
  }
}

template <typename T>
void opt_i(Stmt& st, int col, const std::optional<T>& v) {
  if (v) st.i(col, static_cast<int64_t>(*v));
  else st.null(col);
}

void insert_accounting(sqlite3* db, const Bundle& b, const std::string& name) {
  Stmt acc(db, "INSERT INTO device_accounting VALUES (?,?,?,?,?,?,?,?,?)");
  Stmt lib(db, "INSERT INTO recorded_by_library VALUES (?,?,?,?)");
  Stmt oth(db, "INSERT INTO other_processes VALUES (?,?,?,?,?)");
  for (const DeviceAccounting& a : b.metadata.device_accounting) {
    std::optional<int64_t> others;
    if (a.other_processes) {
      others = 0;
      for (const GpuProcessUse& p : *a.other_processes) {
        *others += static_cast<int64_t>(p.used_bytes.value_or(0));
        oth.i(1, a.device).i(2, p.pid).t(3, p.name);
        opt_i(oth, 4, p.used_bytes);
        oth.t(5, name).step(db);
      }
    }
    acc.i(1, a.device);
    opt_i(acc, 2, a.total_bytes);
    opt_i(acc, 3, a.free_bytes);
    acc.i(4, as_i(a.recorded_live_bytes));
    opt_i(acc, 5, a.process_unrecorded_bytes);
    opt_i(acc, 6, others);
    opt_i(acc, 7, a.unaccounted_bytes);
    acc.t(8, a.note).t(9, name).step(db);
    for (auto& kv : a.recorded_by_library) lib.i(1, a.device).t(2, kv.first).i(3, as_i(kv.second)).t(4, name).step(db);
  }
}

void insert_metadata(sqlite3* db, const Bundle& b, const std::string& name) {
  Stmt ins(db, "INSERT OR REPLACE INTO metadata VALUES (?,?,?)");
  const Metadata& m = b.metadata;
  auto put_s = [&](const std::string& k, const std::string& v) { ins.t(1, k).t(2, v).t(3, name).step(db); };
  auto put_i = [&](const std::string& k, int64_t v) { ins.t(1, k).i(2, v).t(3, name).step(db); };
  put_s("bundle_name", b.manifest.bundle_name);
  put_s("reason", m.reason);
  put_s("api", m.api);
  put_i("error_code", m.error_code);
  put_s("error_name", m.error_name);
  put_i("requested_bytes", as_i(m.requested_bytes));
  put_i("device_id", m.device_id);
  if (m.device_free_bytes) put_i("device_free_bytes", as_i(*m.device_free_bytes));
  if (m.device_total_bytes) put_i("device_total_bytes", as_i(*m.device_total_bytes));
  put_i("live_bytes", as_i(m.live_bytes));
  put_i("live_allocations", as_i(m.live_allocations));
  put_i("thread_id", m.thread_id);
  put_i("stack_id", as_i(m.stack_id));
  put_s("backend", m.backend);
  put_i("pid", b.manifest.pid);
  if (m.rank) put_i("rank", *m.rank);
  std::string ts = "timestamp";
  ins.t(1, ts).d(2, m.timestamp).t(3, name).step(db);
  for (auto& kv : m.custom_metadata) put_s("custom." + kv.first, kv.second);
  insert_verdict(db, b, name);
  insert_accounting(db, b, name);
}

// roles, peak, peak_sites, advice (tools/role_view.h).
void insert_insight(sqlite3* db, const Bundle& b, const std::string& name) {
  const BundleInsight in = read_insight(b);
  Stmt role(db, "INSERT INTO roles VALUES (?,?,?,?,?,?)");
  for (const RoleTable& t : in.roles)
    for (const RoleRow& r : t.rows) {
      role.i(1, t.device).t(2, r.role).t(3, r.layer);
      if (r.name.empty()) role.null(4);
      else role.t(4, r.name);
      opt_i(role, 5, r.bytes);
      role.t(6, name).step(db);
    }
  Stmt peak(db, "INSERT INTO peak VALUES (?,?,?,?,?,?,?,?,?)");
  Stmt site(db, "INSERT INTO peak_sites VALUES (?,?,?,?,?)");
  for (const PeakDevice& d : in.peak.devices) {
    peak.i(1, d.device).i(2, as_i(d.peak_bytes)).i(3, as_i(d.peak_time_ns)).i(4, as_i(d.peak_seq)).i(5, d.exact);
    peak.t(6, d.why_inexact).i(7, as_i(d.live_now_bytes)).i(8, as_i(d.events_replayed)).t(9, name).step(db);
    for (const PeakSite& x : d.sites)
      site.i(1, d.device).i(2, as_i(x.stack_id)).i(3, as_i(x.bytes)).i(4, as_i(x.count)).t(5, name).step(db);
  }
  Stmt adv(db, "INSERT INTO advice VALUES (?,?,?,?,?,?)");
  for (const Advice& a : in.advice)
    adv.i(1, a.device).t(2, a.rule).t(3, a.evidence).t(4, a.action).t(5, a.source).t(6, name).step(db);
}

}  // namespace

void create_query_db(sqlite3* db) {
  exec(db, "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;");
  exec(db, kQuerySchema);
}

void load_query_db(sqlite3* db, Bundle& b, const std::string& name) {
  exec(db, "BEGIN");
  // The two tables made from the events first, then the events go: the
  // database and the model are never both whole (a 1M-event bundle: ~107 MiB
  // of Event records less at the peak).
  insert_intervals(db, b, name);
  insert_events(db, b, name);
  EventVector().swap(b.events);
  insert_allocations(db, b, name);
  insert_stacks(db, b, name);
  insert_metadata(db, b, name);
  insert_insight(db, b, name);
  exec(db, "COMMIT");
}

void finish_query_db(sqlite3* db) { exec(db, "CREATE INDEX frames_stack ON frames(bundle, stack_id);"); }

}  // namespace gpumemrec::cli
