// The columns of `gpumemrec export --format tables` and their types, one
// list per table (docs/bundle-format.md, "Bundles as tables", documents
// them; tests/tools/fleet_engines.py checks that the document, the
// exported files and every engine that loads them agree). The writers
// follow it column by column (tools/table_file.h refuses a row that does
// not), the export writes it as OUT/schema.json, and the Parquet files
// carry it as their Arrow schema.
#pragma once

#include <string>
#include <vector>

namespace gpumemrec::cli {

// Arrow's names for the types (what pyarrow, polars and DuckDB call them
// too, give or take the spelling): string, int64, uint64, double, bool,
// list<string>. Every column may be null.
enum class ColumnType { kString, kInt64, kUInt64, kDouble, kBool, kStringList };
const char* column_type_name(ColumnType t);

struct TableColumn {
  const char* name;
  ColumnType type;
};

struct TableSchema {
  const char* name;  // bundles, events, allocations, sites
  std::vector<TableColumn> columns;
};

// The four tables, bundles first.
const std::vector<TableSchema>& table_schemas();
const TableSchema& table_schema(const std::string& name);  // one of the four

// {"tables_version": N, "tables": {"bundles": [["tables_version", "int64"], ...], ...}}
std::string schema_json();

}  // namespace gpumemrec::cli
