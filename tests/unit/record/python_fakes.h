// CPython 3.12 objects laid out in plain memory for the Python-stack unit
// tests (python_layout.h): compact str objects, bytes objects, code objects
// (co_filename, co_qualname, co_firstlineno, co_linetable, Py_SIZE). They
// live as long as the test program: entries keep pointers to them.
#pragma once
#include <cstdint>
#include <cstring>
#include <deque>
#include <string>
#include <vector>

#include "shim/record/python_layout.h"

namespace gpumemrec::pyfakes {

inline const pylayout::Layout& L312() { return *pylayout::layout_for(12); }

// Objects live as long as the test program: entries keep pointers to them.
struct Obj {
  alignas(16) char b[512] = {};
};
inline std::deque<Obj>& heap() {
  static std::deque<Obj> h;
  return h;
}
inline char* new_obj() { return heap().emplace_back().b; }

inline void put64(char* p, int64_t v) { std::memcpy(p, &v, 8); }
inline void put32(char* p, int32_t v) { std::memcpy(p, &v, 4); }
inline void put_ptr(char* p, const void* v) { std::memcpy(p, &v, 8); }

// A compact str of `kind` bytes per character (PyASCIIObject.state: kind in
// bits 2-4, compact bit 5, ascii bit 6; data after the header).
inline char* make_str(const std::u32string& chars, int kind, int64_t hash = -1) {
  char* o = new_obj();
  const bool ascii = kind == 1;
  put64(o + pylayout::kStrLength, int64_t(chars.size()));
  put64(o + 24, hash);
  put32(o + pylayout::kStrState, (kind << 2) | (1 << 5) | (ascii ? 1 << 6 : 0));
  char* data = o + (ascii ? L312().ascii_size : L312().compact_size);
  for (size_t i = 0; i < chars.size(); ++i) {
    const uint32_t c = chars[i];
    std::memcpy(data + i * kind, &c, size_t(kind));  // little-endian: the low bytes
  }
  return o;
}
inline char* ascii(const std::string& s, int64_t hash = -1) { return make_str(std::u32string(s.begin(), s.end()), 1, hash); }

inline char* make_bytes(const std::vector<uint8_t>& data) {
  char* o = new_obj();
  put64(o + pylayout::kObSize, int64_t(data.size()));
  std::memcpy(o + pylayout::kBytesData, data.data(), data.size());
  return o;
}

// PEP 657 location table: entries "no column" (code 13: a signed varint
// line delta) and "no location" (code 15).
inline std::vector<uint8_t> table_for(int d1) {
  return {uint8_t(0xE8 | 1), uint8_t(d1 << 1),  // 2 units at first_line + d1
          uint8_t(0xE8 | 0), uint8_t(2 << 1),   // 1 unit, 2 lines further
          uint8_t(0xF8)};                       // 1 unit without a line
}

inline char* make_code(char* name, char* file, int first_line, char* table, int64_t units = 4) {
  char* o = new_obj();
  const auto& L = L312();
  put64(o + pylayout::kObSize, units);
  put_ptr(o + L.code_filename, file);
  put_ptr(o + L.code_name, name);
  put32(o + L.code_firstlineno, first_line);
  put_ptr(o + L.code_linetable, table);
  return o;
}

}  // namespace gpumemrec::pyfakes
