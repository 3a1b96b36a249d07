// gpumemrec query BUNDLE "SQL" [--csv|--json]; gpumemrec query --schema
#include <sqlite3.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "tools/cli.h"
#include "tools/commands.h"
#include "tools/output_file.h"
#include "tools/query_db.h"

using namespace gpumemrec::model;  // the tools' bundle model

namespace gpumemrec::cli {
namespace {

struct QueryOptions {
  std::string bundle, sql;
  bool csv = false, json = false, schema = false;
};

struct Result {
  std::vector<std::string> names;
  std::vector<std::vector<std::string>> rows;  // text
  std::vector<std::vector<int>> types;         // SQLITE_INTEGER, ...
};

std::string csv_cell(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string o = "\"";
  for (char c : s) o += c == '"' ? std::string("\"\"") : std::string(1, c);
  return o + "\"";
}

void print(const Result& r, const QueryOptions& o) {
  std::string out;
  if (o.json) {
    out += "[";
    for (size_t i = 0; i < r.rows.size(); ++i) {
      out += i ? ",\n " : "\n ";
      out += "{";
      for (size_t c = 0; c < r.names.size(); ++c) {
        if (c) out += ", ";
        json_escape(out, r.names[c]);
        out += ": ";
        int t = r.types[i][c];
        if (t == SQLITE_NULL) out += "null";
        else if (t == SQLITE_INTEGER || t == SQLITE_FLOAT) out += r.rows[i][c];
        else json_escape(out, r.rows[i][c]);
      }
      out += "}";
    }
    out += r.rows.empty() ? "]\n" : "\n]\n";
  } else if (o.csv) {
    for (size_t c = 0; c < r.names.size(); ++c) out += (c ? "," : "") + csv_cell(r.names[c]);
    out += "\n";
    for (auto& row : r.rows) {
      for (size_t c = 0; c < row.size(); ++c) out += (c ? "," : "") + csv_cell(row[c]);
      out += "\n";
    }
  } else {
    std::string align;
    for (size_t c = 0; c < r.names.size(); ++c) {
      bool numeric = !r.rows.empty();
      for (size_t i = 0; i < r.rows.size() && numeric; ++i)
        numeric = r.types[i][c] == SQLITE_INTEGER || r.types[i][c] == SQLITE_FLOAT || r.types[i][c] == SQLITE_NULL;
      align += numeric ? 'r' : 'l';
    }
    Table t(r.names, align);
    for (auto row : r.rows) {
      for (auto& cell : row) std::replace(cell.begin(), cell.end(), '\n', ' ');
      t.add(std::move(row));
    }
    out += t.render();
    out += "(" + std::to_string(r.rows.size()) + " row" + (r.rows.size() == 1 ? "" : "s") + ")\n";
  }
  fputs(out.c_str(), stdout);
}

// Loads one bundle, or every bundle of a directory one at a time (so a
// directory of ranks never holds more than one bundle in memory).
void fill_db(sqlite3* db, const std::string& path) {
  std::vector<std::string> paths;
  if (!is_bundle_dir(path) && is_directory(path)) paths = find_bundles(path);
  if (paths.empty()) paths.push_back(path);  // a bundle, or the reader's error for anything else
  create_query_db(db);
  for (const auto& p : paths) {
    Bundle b;
    Progress progress;
    load_bundle(p, &b, false, &progress);
    if (progress.enabled()) progress.update("loading into SQLite", 0);
    load_query_db(db, b, basename_of(p));
    progress.done();
  }
  finish_query_db(db);
}

std::string cell_text(sqlite3_stmt* st, int c, int type, bool csv) {
  if (type == SQLITE_NULL) return csv ? "" : "NULL";
  if (type == SQLITE_FLOAT) {
    char buf[64];
    snprintf(buf, sizeof buf, "%.6f", sqlite3_column_double(st, c));
    return buf;
  }
  const unsigned char* t = sqlite3_column_text(st, c);
  return t ? reinterpret_cast<const char*>(t) : "";
}

// Runs every statement of `sql`; *last gets the rows of the last one that
// returns columns. Returns false when none did.
bool run_sql(sqlite3* db, const std::string& sql_text, bool csv, Result* last) {
  bool have = false;
  const char* sql = sql_text.c_str();
  while (sql && *sql) {
    sqlite3_stmt* st = nullptr;
    const char* tail = nullptr;
    if (sqlite3_prepare_v2(db, sql, -1, &st, &tail) != SQLITE_OK)
      throw CliError(kBadInput, std::string("SQL: ") + sqlite3_errmsg(db));
    sql = tail;
    if (!st) continue;  // whitespace or comment
    Result r;
    int n = sqlite3_column_count(st);
    for (int c = 0; c < n; ++c) r.names.push_back(sqlite3_column_name(st, c));
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
      std::vector<std::string> row(n);
      std::vector<int> types(n);
      for (int c = 0; c < n; ++c) {
        types[c] = sqlite3_column_type(st, c);
        row[c] = cell_text(st, c, types[c], csv);
      }
      r.rows.push_back(std::move(row));
      r.types.push_back(std::move(types));
    }
    std::string err = rc == SQLITE_DONE ? "" : sqlite3_errmsg(db);
    sqlite3_finalize(st);
    if (!err.empty()) throw CliError(kBadInput, "SQL: " + err);
    if (n > 0) {
      *last = std::move(r);
      have = true;
    }
  }
  return have;
}

}  // namespace

RunFn add_query(CLI::App& root) {
  auto o = std::make_shared<QueryOptions>();
  CLI::App* app = root.add_subcommand("query", "Run SQL over a bundle loaded into an in-memory SQLite database");
  app->add_option("BUNDLE", o->bundle, "A bundle, or a directory of bundles (all in one database; the bundle column tells them apart)");
  app->add_option("SQL", o->sql, "SQL statement(s); the rows of the last one that returns rows are printed");
  auto* csv = app->add_flag("--csv", o->csv, "Print CSV");
  app->add_flag("--json", o->json, "Print a JSON array of objects")->excludes(csv);
  app->add_flag("--schema", o->schema, "Print the tables and views, then exit");
  app->footer(
      "Tables: events, allocations, stacks, frames, intervals, metadata; view: sites (see --schema).\n"
      "Memory by role, the peak and what to try: tables roles, peak, peak_sites, advice.\n"
      "Every table has a bundle column (the bundle directory's name): given a directory, all its bundles\n"
      "(the ranks of a job) are loaded into one database.\n"
      "Allocations alive at time T:\n"
      "  SELECT * FROM intervals WHERE (start_time IS NULL OR start_time <= T)\n"
      "                            AND (end_time IS NULL OR end_time > T) ORDER BY size DESC\n"
      "Allocations whose stack contains X, largest first:\n"
      "  SELECT a.* FROM allocations a WHERE (a.bundle, a.stack_id) IN\n"
      "    (SELECT bundle, stack_id FROM frames WHERE function LIKE '%X%' OR file LIKE '%X%') ORDER BY a.size DESC\n"
      "SQL errors exit with 2.");
  return [=]() -> int {
    if (o->schema) {
      fputs(kQuerySchema, stdout);
      return kOk;
    }
    if (o->bundle.empty() || o->sql.empty())
      throw CliError(kBadInput, "query: give a BUNDLE and an SQL statement (or --schema)");
    sqlite3* db = nullptr;
    if (sqlite3_open(":memory:", &db) != SQLITE_OK) failure("SQLite: cannot open an in-memory database");
    struct Closer {
      sqlite3* db;
      ~Closer() { sqlite3_close(db); }
    } closer{db};
    fill_db(db, o->bundle);
    Result last;
    bool have = run_sql(db, o->sql, o->csv, &last);
    if (have) print(last, *o);
    return kOk;
  };
}

}  // namespace gpumemrec::cli
