// Loads a bundle into an in-memory SQLite database (gpumemrec query).
#pragma once

#include <sqlite3.h>

#include <string>

#include "common/bundle_model.h"

namespace gpumemrec::cli {

// The schema, as printed by `gpumemrec query --schema`.
extern const char* const kQuerySchema;

// Creates the tables and the view in `db`.
void create_query_db(sqlite3* db);
// Adds the rows of `b` (one transaction, prepared inserts), with `name` in
// every row's bundle column. Throws CliError on SQLite failure.
// Inserts `b` and empties b.events on the way (the caller is done with it).
void load_query_db(sqlite3* db, model::Bundle& b, const std::string& name);
// Indexes, once every bundle is in.
void finish_query_db(sqlite3* db);

}  // namespace gpumemrec::cli
