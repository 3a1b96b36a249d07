// `gpumemrec export --format tables`: bundles as tables that DuckDB, Spark,
// pandas and polars read (docs/bundle-format.md, "Bundles as tables").
//
// OUT/<table>/<bundle_id>.jsonl.gz for the tables bundles, events,
// allocations and sites: one gzip-compressed JSON Lines file per bundle and
// table, every row with `bundle_id` (the bundle's directory name); or
// OUT/<table>/<bundle_id>.parquet (--table-format parquet: parquet_writer.h).
// OUT/schema.json names every column's type. A bundle
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

class ParquetWriter;

// Makes `out_dir` and its table folders, and writes OUT/schema.json (the
// tables' columns and types: tools/table_schema.h). Throws
// CliError(kFailure) when it cannot.
void prepare_tables_dir(const std::string& out_dir);

// Exports one bundle directory into `out_dir` (prepared as above): gzip JSON
// Lines, or Parquet through `parquet` when it is given (OUT/<table>/<id>.parquet).
// Throws CliError(kBadInput) for a bad bundle (nothing of it is left in
// out_dir), CliError(kFailure) when out_dir cannot be written.
TablesResult export_bundle_tables(const std::string& bundle_dir, const std::string& out_dir,
                                  ParquetWriter* parquet = nullptr);

}  // namespace gpumemrec::cli
