// gpumemrec ls [DIR]: the bundles in a dump directory, newest first.
#include <algorithm>
#include <cstdio>

#include <CLI/CLI.hpp>

#include "tools/cli.h"
#include "tools/commands.h"
#include "tools/json_out.h"
#include "tools/verdict.h"

using namespace gpumemrec::model;  // the tools' bundle model

namespace gpumemrec::cli {
namespace {

struct Row {
  std::string path;
  std::string error;  // unreadable bundle: the reader's message
  Bundle b;           // light: manifest, metadata, environment
};

std::vector<Row> read_rows(const std::vector<std::string>& paths) {
  std::vector<Row> rows(paths.size());
  for (size_t i = 0; i < paths.size(); ++i) {
    rows[i].path = paths[i];
    try {
      load_bundle(paths[i], &rows[i].b, /*light=*/true);
    } catch (const CliError& e) {
      rows[i].error = e.what();
    }
  }
  std::stable_sort(rows.begin(), rows.end(),
                   [](const Row& x, const Row& y) { return x.b.metadata.timestamp > y.b.metadata.timestamp; });
  return rows;
}

std::string reason_of(const Bundle& b) { return b.metadata.reason.empty() ? b.manifest.reason : b.metadata.reason; }
int64_t pid_of(const Bundle& b) { return b.manifest.pid ? b.manifest.pid : b.environment.pid; }

void print_table(const std::vector<Row>& rows) {
  Table t({"TIME", "HOST", "PID", "RANK", "REASON", "OUTCOME", "API", "ASKED", "LIVE", "BUNDLE"}, "llrrlllrrl");
  for (const Row& r : rows) {
    if (!r.error.empty()) {
      t.add({"-", "-", "-", "-", "-", "-", "-", "-", "-", basename_of(r.path) + "  (unreadable: " + r.error + ")"});
      continue;
    }
    const Metadata& m = r.b.metadata;
    std::string host = r.b.hostname();
    t.add({utc_time(m.timestamp), host.empty() ? "-" : host, std::to_string(pid_of(r.b)),
           m.rank ? std::to_string(*m.rank) : "-", reason_of(r.b), outcome_cell(r.b), m.api.empty() ? "-" : m.api,
           m.requested_bytes ? format_bytes(m.requested_bytes) : "-", format_bytes(m.live_bytes), basename_of(r.path)});
  }
  fputs(t.render().c_str(), stdout);
}

void print_json_rows(const std::vector<Row>& rows) {
  rapidjson::StringBuffer buf;
  JsonWriter w(buf);
  w.StartArray();
  for (const Row& r : rows) {
    const Metadata& m = r.b.metadata;
    w.StartObject();
    json_kv(w, "bundle", basename_of(r.path));
    json_kv(w, "path", r.path);
    w.Key("error");
    if (r.error.empty()) w.Null();
    else w.String(r.error.c_str());
    json_kv(w, "timestamp", m.timestamp);
    json_kv(w, "time_utc", utc_time(m.timestamp));
    json_kv(w, "host", r.b.hostname());
    json_kv(w, "pid", pid_of(r.b));
    w.Key("rank");
    if (m.rank) w.Int64(*m.rank);
    else w.Null();
    json_kv(w, "reason", reason_of(r.b));
    json_kv_or_null(w, "outcome", r.b.outcome());
    json_kv(w, "recovered_failures", m.recovered_count);
    json_kv(w, "api", m.api);
    json_kv(w, "requested_bytes", m.requested_bytes);
    json_kv(w, "live_bytes", m.live_bytes);
    json_kv(w, "live_allocations", m.live_allocations);
    w.EndObject();
  }
  w.EndArray();
  print_json(buf);
}

}  // namespace

RunFn add_ls(CLI::App& root) {
  auto dir = std::make_shared<std::string>("./gpumemrec-dumps");
  auto json = std::make_shared<bool>(false);
  CLI::App* app = root.add_subcommand("ls", "List the bundles in a dump directory, newest first");
  app->add_option("DIR", *dir, "Dump directory")->capture_default_str();
  app->add_flag("--json", *json, "Print a JSON array, one object per bundle (keys: see docs/cli.md)");
  app->footer("Columns: time of the failure (UTC), host, pid, rank, reason, outcome (recovered, fatal, unknown;\n"
              "- for signal/exit dumps and older bundles), API, size asked, live bytes, bundle.\n"
              "Directories named .tmp-* (bundles being written) are skipped.");
  return [=]() -> int {
    if (!is_directory(*dir)) bad_input(*dir, is_bundle_dir(*dir) ? "not a directory" : "no such directory");
    std::vector<std::string> paths = is_bundle_dir(*dir) ? std::vector<std::string>{*dir} : find_bundles(*dir);
    std::vector<Row> rows = read_rows(paths);
    if (*json) {
      print_json_rows(rows);
      return kOk;
    }
    if (rows.empty()) {
      fprintf(stderr, "gpumemrec: no bundles in %s\n", dir->c_str());
      return kOk;
    }
    print_table(rows);
    return kOk;
  };
}

}  // namespace gpumemrec::cli
