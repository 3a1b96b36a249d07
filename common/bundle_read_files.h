// The reader of each bundle file into the model (common/bundle_model.h),
// every key named from the schema (common/bundle_keys.h). read_bundle
// (common/bundle_reader.cpp) calls them; each reports one ReadError naming
// the file and what is wrong with it.
#pragma once
#include <string>

#include "common/bundle_reader.h"

namespace gpumemrec::model::read {

bool read_manifest(const std::string& path, Manifest* m, ReadError* err);     // bundle_read_metadata.cpp
bool read_metadata(const std::string& path, Metadata* m, ReadError* err);     // bundle_read_metadata.cpp
bool read_allocations(const std::string& path, Bundle* b, ReadError* err);    // bundle_read_live.cpp
bool read_stacks(const std::string& path, Bundle* b, ReadError* err);         // bundle_read_live.cpp
bool read_environment(const std::string& path, Environment* e, ReadError* err);  // bundle_read_environment.cpp
// events.json, streamed (bundle_read_events.cpp).
bool read_events(const std::string& path, const ReadOptions& opts, Bundle* b, ReadError* err);

}  // namespace gpumemrec::model::read
