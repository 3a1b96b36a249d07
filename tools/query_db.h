// Loads a bundle into an in-memory SQLite database (gpumemrec query).
#pragma once

#include <sqlite3.h>

#include "common/bundle_model.h"

namespace gpumemrec::cli {

// The schema, as printed by `gpumemrec query --schema`.
extern const char* const kQuerySchema;

// Creates the tables in `db` and fills them from `b` (one transaction,
// prepared inserts). Throws CliError on SQLite failure.
void load_query_db(sqlite3* db, const model::Bundle& b);

}  // namespace gpumemrec::cli
