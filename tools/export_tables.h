// `gpumemrec export --format tables`: bundles as tables that DuckDB, Spark,
// pandas and polars read (docs/bundle-format.md, "Bundles as tables").
//
// OUT/<table>/<bundle_id>.jsonl.gz for the tables bundles, events,
// allocations and sites: one gzip-compressed JSON Lines file per bundle and
// table, every row with `bundle_id` (the bundle's directory name). A bundle
// is read one at a time and its two large files (events.json,
// allocations.json) streamed object by object, so memory stays bounded
// whatever the number of bundles and time is linear in their size; each
// bundle's files appear together when it is complete (temporary names,
// then rename), so exports of different bundles may run in parallel into
// one OUT.
#pragma once

#include <string>

namespace gpumemrec::cli {

// Version of the tables' schema (the `tables_version` column of `bundles`).
constexpr int kTablesVersion = 1;

struct TablesResult {
  std::string bundle_id;
  unsigned long long events = 0, allocations = 0, sites = 0;
};

// Exports one bundle directory into `out_dir` (created with its table
// folders). Throws CliError(kBadInput) for a bad bundle (nothing of it is
// left in out_dir), CliError(kFailure) when out_dir cannot be written.
TablesResult export_bundle_tables(const std::string& bundle_dir, const std::string& out_dir);

}  // namespace gpumemrec::cli
