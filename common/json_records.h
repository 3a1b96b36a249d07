// A large bundle file that is a JSON array of flat objects (events.json,
// allocations.json), streamed one object at a time through rapidjson's SAX
// reader: memory is one object plus one read block, whatever the file's
// size (`gpumemrec export --format tables` turns each object into a row).
//
// Each object's scalar members are kept as text: strings unescaped, numbers
// as the file spells them (exact: a 64-bit address is not rounded through a
// double), true/false, null. Nested arrays and objects are skipped (at most
// kMaxDepth levels, as the model's readers), so a key added later that holds
// an object does not break the reader.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "common/bundle_reader.h"

namespace gpumemrec::model::read {

enum class ScalarType : char { kString = 's', kNumber = 'n', kBool = 'b', kNull = 'z' };

struct FlatRecord {
  struct Member {
    std::string key;
    std::string text;  // the string's value, the number's digits, "true"/"false", "null"
    ScalarType type = ScalarType::kNull;
  };
  size_t index = 0;     // position in the array, from 0
  size_t size = 0;      // members in use (members beyond are reused storage)
  std::vector<Member> members;
  // The member named `key` among the first `size`; null when absent.
  const Member* find(std::string_view key) const;
};

// Calls `on_record` for each object of the top-level array in `path` (a
// regular file of at most `max_bytes`). `what` names an entry in errors
// ("event" -> "event #3 is not a JSON object"). Returns false with *err on
// bad JSON, a read error, or when on_record returns false (then *err is
// what on_record set).
bool stream_records(const std::string& path, uint64_t max_bytes, const char* what,
                    const std::function<bool(const FlatRecord&)>& on_record, ReadError* err);

}  // namespace gpumemrec::model::read
