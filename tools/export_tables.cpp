#include "tools/export_tables.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <optional>
#include <vector>

#include "common/bundle_keys.h"
#include "common/bundle_read_json.h"
#include "common/json_records.h"
#include "common/site_rules.h"
#include "tools/cli.h"
#include "tools/bundles_table.h"
#include "tools/table_file.h"

using namespace gpumemrec::model;  // the tools' bundle model

namespace gpumemrec::cli {
namespace {

using read::FlatRecord;
using read::ScalarType;

constexpr const char* kTables[] = {"bundles", "events", "allocations", "sites"};

// A column of a streamed table: its key in the bundle file (and name in the
// table), its JSON type, and what an absent or null key becomes (the
// reader's default, docs/bundle-format.md "Keys left out").
struct Column {
  const char* name;
  ScalarType type;
  const char* absent;
};
constexpr ScalarType N = ScalarType::kNumber, S = ScalarType::kString;

const std::vector<Column> kEventColumns = {
    {key::kSeq, N, "0"}, {key::kTimestamp, N, "null"}, {key::kTimestampNs, N, "null"},
    {key::kEventType, S, "null"}, {key::kMemoryAllocated, N, "0"}, {key::kMemoryChange, N, "0"},
    {key::kDeviceId, N, "-1"}, {key::kApi, S, "\"\""}, {key::kMemoryType, S, "\"\""},
    {key::kAddress, N, "0"}, {key::kSize, N, "0"}, {key::kResult, N, "0"}, {key::kThreadId, N, "0"},
    {key::kStackId, N, "0"}, {key::kDurationNs, N, "0"}, {key::kStream, N, "0"},
    {key::kDeviceTotal, N, "null"}, {key::kDeviceFree, N, "null"},
};
const std::vector<Column> kAllocationColumns = {
    {key::kAddress, N, "0"}, {key::kSize, N, "0"}, {key::kDeviceId, N, "-1"}, {key::kApi, S, "\"\""},
    {key::kMemoryType, S, "\"\""}, {key::kTimestamp, N, "null"}, {key::kThreadId, N, "0"},
    {key::kStackId, N, "0"}, {key::kSeq, N, "0"},
};

std::string table_path(const std::string& out_dir, const char* table, const std::string& id) {
  return out_dir + "/" + table + "/" + id + ".jsonl.gz";
}

void make_dir(const std::string& p) {
  if (mkdir(p.c_str(), 0755) != 0 && errno != EEXIST) failure(p + ": cannot create directory: " + strerror(errno));
  if (!is_directory(p)) failure(p + ": exists and is not a directory");
}

// One bundle file streamed into its table; the first event's launcher
// identity (rank, ...) is kept for the bundles row.
bool stream_table(const std::string& path, const char* what, const std::vector<Column>& cols,
                  const std::string& id, TableFile* t, LauncherKeys* first, ReadError* err) {
  auto on_record = [&](const FlatRecord& r) {
    if (first && r.index == 0) *first = launcher_keys_of(r);
    t->begin();
    t->key("bundle_id");
    t->str(id);
    for (const Column& c : cols) {
      t->key(c.name);
      const FlatRecord::Member* m = r.find(c.name);
      if (!m || m->type == ScalarType::kNull) t->raw(c.absent);
      else if (m->type != c.type) {
        *err = {path, std::string(what) + " #" + std::to_string(r.index) + ": key '" + c.name + "' is not " +
                          (c.type == N ? "a number" : "a string")};
        return false;
      } else if (c.type == S) t->str(m->text);
      else t->raw(m->text);
    }
    t->end();
    return true;
  };
  return read::stream_records(path, read::kMaxEventsFileBytes, what, on_record, err);
}

void write_sites(const Bundle& b, const std::string& id, TableFile* t) {
  for (const Stack& s : b.stacks) {
    const Frame* site = site::site_frame_of(s);
    t->begin();
    t->key("bundle_id");
    t->str(id);
    t->key(key::kStackId);
    t->u64(s.stack_id);
    t->key("python");
    t->str(s.python);
    t->key("site");
    site ? t->str(format_frame(*site)) : t->null();
    t->key("site_function");
    site ? t->str(site->function) : t->null();
    t->key("site_file");
    site ? t->str(site->file) : t->null();
    t->key("site_line");
    site ? t->i64(site->line) : t->null();
    t->key("site_module");
    site ? t->str(site->module.empty() ? "" : site::module_display_name(site->module)) : t->null();
    t->key("library");
    t->str(s.library);
    t->key("frames");
    t->raw("[");
    for (size_t i = 0; i < s.frames.size(); ++i) {
      if (i) t->raw(",");
      t->str(format_frame(s.frames[i]));
    }
    t->raw("]");
    t->end();
  }
}

void load_for_tables(const std::string& dir, Bundle* b) {
  ReadOptions opts;
  opts.events = false;       // streamed
  opts.allocations = false;  // streamed
  ReadError err;
  if (!read_bundle(dir, opts, b, &err)) bad_input(err.file, err.what);
  const site::Rules& rules = site::rules_from_environment();
  for (Stack& s : b->stacks)
    if (!s.attributed) site::attribute(&s, rules);
}

}  // namespace

TablesResult export_bundle_tables(const std::string& bundle_dir, const std::string& out_dir) {
  Bundle b;
  load_for_tables(bundle_dir, &b);
  TablesResult res;
  res.bundle_id = basename_of(bundle_dir);
  make_dir(out_dir);
  for (const char* t : kTables) make_dir(out_dir + "/" + t);
  TableFile bundles(table_path(out_dir, "bundles", res.bundle_id));
  TableFile events(table_path(out_dir, "events", res.bundle_id));
  TableFile allocations(table_path(out_dir, "allocations", res.bundle_id));
  TableFile sites(table_path(out_dir, "sites", res.bundle_id));
  LauncherKeys first;
  ReadError err;
  if (!stream_table(read::bundle_file(bundle_dir, file::kEvents), "event", kEventColumns, res.bundle_id, &events,
                    &first, &err) ||
      !stream_table(read::bundle_file(bundle_dir, file::kAllocations), "allocation", kAllocationColumns,
                    res.bundle_id, &allocations, nullptr, &err))
    bad_input(err.file, err.what);
  write_sites(b, res.bundle_id, &sites);
  write_bundle_row(b, res.bundle_id, first, read_extras(bundle_dir, b), &bundles);
  res.events = events.rows();
  res.allocations = allocations.rows();
  res.sites = sites.rows();
  events.commit();
  allocations.commit();
  sites.commit();
  bundles.commit();  // last: a bundles row means the bundle's other tables are there
  return res;
}

}  // namespace gpumemrec::cli
