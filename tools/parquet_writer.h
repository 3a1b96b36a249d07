// `gpumemrec export --format tables --table-format parquet`: the tables as
// Parquet files, written by pyarrow (Debian 12 packages no Parquet writer
// library, and where a fleet's tables are read, pyarrow usually is).
//
// One Python process per export (GPUMEMREC_PYTHON, else python3 from PATH;
// the wheel's console script sets its own interpreter) runs a small script
// carried in the command (parquet_writer.cpp): it is given the tables'
// schema (tools/table_schema.h) and, for each table file, the path of a
// plain JSON Lines file the export wrote; it streams it in blocks
// (pyarrow.json.open_json with the schema as its explicit schema: a key the
// schema lacks is an error) into a zstd-compressed Parquet file, written
// under a temporary name and renamed into place.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <cstdio>
#include <string>

#include "tools/table_schema.h"

namespace gpumemrec::cli {

class ParquetWriter {
 public:
  // Starts the Python process; throws CliError(kFailure) with one line
  // when there is no such Python or it has no pyarrow.
  ParquetWriter();
  ~ParquetWriter();  // ends the process (closes its input, waits)
  ParquetWriter(const ParquetWriter&) = delete;
  ParquetWriter& operator=(const ParquetWriter&) = delete;

  // Writes the Parquet file `dst` from the JSON Lines file `src` of table
  // `t`; returns its rows. Throws CliError(kFailure) when it cannot.
  uint64_t convert(const TableSchema& t, const std::string& src, const std::string& dst);

  const std::string& python() const { return python_; }
  const std::string& version() const { return version_; }  // "pyarrow 26.0.1"

 private:
  std::string reply();  // the helper's next line, without the newline
  std::string python_, version_;
  pid_t pid_ = -1;
  FILE* to_ = nullptr;
  FILE* from_ = nullptr;
};

}  // namespace gpumemrec::cli
