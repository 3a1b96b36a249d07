// One table file of `gpumemrec export --format tables`: JSON Lines (one
// object per line) compressed with gzip, written under a temporary name in
// the same directory and renamed into place by commit(), so a reader that
// globs `*.jsonl.gz` never sees half a file, and exports of different
// bundles into one folder (one process per bundle) never collide. Each row
// has the columns of its table's schema (tools/table_schema.h), in order:
// a key out of order, or a row short of a column, is an internal error.
// Plain (uncompressed) for the JSON Lines a Parquet file is made from.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <zlib.h>

#include "tools/table_schema.h"

namespace gpumemrec::cli {

class TableFile {
 public:
  // Throws CliError(kFailure) when it cannot be created.
  TableFile(std::string path, const TableSchema& schema, bool gzip = true);
  ~TableFile();                          // removes the temporary file unless committed
  TableFile(const TableFile&) = delete;
  TableFile& operator=(const TableFile&) = delete;

  // Row building: begin(), then key()+value pairs, then end().
  void begin() {
    row_ += '{';
    first_ = true;
    column_ = 0;
  }
  void key(std::string_view name);
  void str(std::string_view v);
  void raw(std::string_view json);  // a number or literal as JSON text
  void u64(uint64_t v);
  void i64(int64_t v);
  void dbl(double v);
  void null() { row_ += "null"; }
  void end();
  uint64_t rows() const { return rows_; }

  void commit();  // throws CliError(kFailure) on a write error

 private:
  void flush();
  const TableSchema& schema_;
  size_t column_ = 0;
  std::string path_, tmp_;
  gzFile gz_ = nullptr;
  std::string row_;
  bool first_ = true;
  bool committed_ = false;
  uint64_t rows_ = 0;
};

}  // namespace gpumemrec::cli
