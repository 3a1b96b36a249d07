// JSON output of the subcommands (--json): RapidJSON's pretty writer plus
// the shapes more than one command prints (frames, an optional number).
// The keys are a stable interface, documented in docs/cli.md.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <rapidjson/prettywriter.h>
#include <rapidjson/stringbuffer.h>

#include "common/bundle_model.h"

namespace gpumemrec::cli {

using JsonWriter = rapidjson::PrettyWriter<rapidjson::StringBuffer>;

void json_kv(JsonWriter& w, const char* key, const std::string& v);
void json_kv(JsonWriter& w, const char* key, uint64_t v);
void json_kv(JsonWriter& w, const char* key, int64_t v);
void json_kv(JsonWriter& w, const char* key, double v);
void json_kv(JsonWriter& w, const char* key, const std::optional<uint64_t>& v);  // null when absent
void json_kv(JsonWriter& w, const char* key, const std::optional<int64_t>& v);   // null when absent
void json_kv_or_null(JsonWriter& w, const char* key, const std::string& v);     // null when empty

// {"kind", "function", "short", "file", "line", "module", "offset"}
void json_frame(JsonWriter& w, const model::Frame& f);
// "site": {"frame", "index", "library"} (null without frames; common/site_rules.h).
void json_site(JsonWriter& w, const model::Stack* s);
// "site", "python" and "frames": [...] (at most max_frames, innermost first).
void json_stack(JsonWriter& w, const model::Bundle& b, uint64_t stack_id, size_t max_frames);
void json_frames(JsonWriter& w, const std::vector<model::Frame>& frames, size_t max_frames);

// Writes the document and a newline to stdout.
void print_json(const rapidjson::StringBuffer& buf);

}  // namespace gpumemrec::cli
