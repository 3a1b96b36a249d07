#include "tools/export_tables.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <vector>

#include "common/bundle_keys.h"
#include "common/bundle_read_json.h"
#include "common/json_records.h"
#include "common/site_rules.h"
#include "tools/cli.h"
#include "tools/bundles_table.h"
#include "tools/parquet_writer.h"
#include "tools/table_file.h"
#include "tools/table_schema.h"

using namespace gpumemrec::model;  // the tools' bundle model

namespace gpumemrec::cli {
namespace {

using read::FlatRecord;
using read::ScalarType;

// A streamed table's column (events, allocations): its schema entry, the
// JSON type the bundle file must give it, and what an absent or null key
// becomes (the reader's default, docs/bundle-format.md "Keys left out").
struct Column {
  const char* name;
  ScalarType type;
  const char* absent;
};

const char* absent_value(const std::string& name) {
  static const char* const kNull[] = {key::kTimestamp, key::kTimestampNs, key::kEventType, key::kDeviceTotal,
                                      key::kDeviceFree};
  for (const char* k : kNull)
    if (name == k) return "null";
  if (name == key::kDeviceId) return "-1";
  if (name == key::kApi || name == key::kMemoryType) return "\"\"";
  return "0";
}

// The schema's columns after bundle_id (tools/table_schema.cpp).
std::vector<Column> streamed_columns(const char* table) {
  std::vector<Column> out;
  for (const TableColumn& c : table_schema(table).columns)
    if (std::string(c.name) != "bundle_id")
      out.push_back({c.name, c.type == ColumnType::kString ? ScalarType::kString : ScalarType::kNumber,
                     absent_value(c.name)});
  return out;
}

// Where a table file of the bundle goes: OUT/<table>/<id>.jsonl.gz, or,
// for Parquet, the plain JSON Lines file in the bundle's staging folder.
std::string table_path(const std::string& dir, const char* table, const std::string& id, bool staged) {
  return staged ? dir + "/" + table + ".jsonl" : dir + "/" + table + "/" + id + ".jsonl.gz";
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
                          (c.type == ScalarType::kNumber ? "a number" : "a string")};
        return false;
      } else if (c.type == ScalarType::kString) t->str(m->text);
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

// A private folder in OUT for the plain JSON Lines a bundle's Parquet files
// are made from (hidden: readers glob OUT/<table>/*); removed with what is in it.
class StagingDir {
 public:
  explicit StagingDir(const std::string& out_dir) {
    std::string tmpl = out_dir + "/.gpumemrec-staging-XXXXXX";
    if (!mkdtemp(&tmpl[0])) failure(out_dir + ": cannot create a staging folder: " + strerror(errno));
    path_ = tmpl;
  }
  ~StagingDir() {
    for (const TableSchema& t : table_schemas()) unlink(table_path(path_, t.name, "", true).c_str());
    rmdir(path_.c_str());
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// The four table files of one bundle, written (and, as JSON Lines,
// committed) in the order events, allocations, sites, bundles.
TablesResult write_tables(const std::string& bundle_dir, const std::string& dir, const std::string& id,
                          bool staged) {
  Bundle b;
  load_for_tables(bundle_dir, &b);
  TablesResult res;
  res.bundle_id = id;
  TableFile bundles(table_path(dir, "bundles", id, staged), table_schema("bundles"), !staged);
  TableFile events(table_path(dir, "events", id, staged), table_schema("events"), !staged);
  TableFile allocations(table_path(dir, "allocations", id, staged), table_schema("allocations"), !staged);
  TableFile sites(table_path(dir, "sites", id, staged), table_schema("sites"), !staged);
  LauncherKeys first;
  ReadError err;
  static const std::vector<Column> kEvents = streamed_columns("events");
  static const std::vector<Column> kAllocations = streamed_columns("allocations");
  if (!stream_table(read::bundle_file(bundle_dir, file::kEvents), "event", kEvents, id, &events, &first, &err) ||
      !stream_table(read::bundle_file(bundle_dir, file::kAllocations), "allocation", kAllocations, id,
                    &allocations, nullptr, &err))
    bad_input(err.file, err.what);
  write_sites(b, id, &sites);
  write_bundle_row(b, id, first, read_extras(bundle_dir, b), &bundles);
  res.events = events.rows();
  res.allocations = allocations.rows();
  res.sites = sites.rows();
  events.commit();
  allocations.commit();
  sites.commit();
  bundles.commit();  // last: a bundles row means the bundle's other tables are there
  return res;
}

}  // namespace

void prepare_tables_dir(const std::string& out_dir) {
  make_dir(out_dir);
  for (const TableSchema& t : table_schemas()) make_dir(out_dir + "/" + t.name);
  // The same text from every export: several writing into one OUT at once
  // each rename a whole file over it.
  std::string tmp = out_dir + "/.schema.json." + std::to_string(getpid()) + ".tmp", path = out_dir + "/schema.json";
  FILE* f = fopen(tmp.c_str(), "w");
  const std::string text = schema_json();
  if (!f) failure(tmp + ": cannot create: " + strerror(errno));
  bool ok = fwrite(text.data(), 1, text.size(), f) == text.size();
  ok = fclose(f) == 0 && ok;
  if (!ok || rename(tmp.c_str(), path.c_str()) != 0) {
    unlink(tmp.c_str());
    failure(path + ": cannot write");
  }
}

TablesResult export_bundle_tables(const std::string& bundle_dir, const std::string& out_dir,
                                  ParquetWriter* parquet) {
  const std::string id = basename_of(bundle_dir);
  if (!parquet) return write_tables(bundle_dir, out_dir, id, false);
  StagingDir stage(out_dir);
  TablesResult res = write_tables(bundle_dir, stage.path(), id, true);
  for (const char* t : {"events", "allocations", "sites", "bundles"})  // bundles last, as above
    parquet->convert(table_schema(t), table_path(stage.path(), t, id, true),
                     out_dir + "/" + t + "/" + id + ".parquet");
  return res;
}

}  // namespace gpumemrec::cli
