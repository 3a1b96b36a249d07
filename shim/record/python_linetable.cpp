#include "shim/record/python_linetable.h"

namespace gpumemrec {

namespace {

struct Reader {
  const uint8_t* p;
  const uint8_t* end;
  bool ok() const { return p < end; }
  // 6-bit chunks, least significant first, 0x40 = more follow.
  uint32_t varint() {
    uint32_t v = 0;
    int shift = 0;
    while (p < end) {
      uint8_t b = *p++;
      if (shift < 32) v |= uint32_t(b & 63) << shift;
      shift += 6;
      if (!(b & 64)) break;
    }
    return v;
  }
  void skip(size_t n) { p = size_t(end - p) < n ? end : p + n; }
  int32_t svarint() {
    uint32_t u = varint();
    return (u & 1) ? -int32_t(u >> 1) : int32_t(u >> 1);
  }
};

void fill(int32_t* lines, uint32_t units, uint32_t from, uint32_t to, int32_t line) {
  if (to > units) to = units;
  for (uint32_t i = from; i < to; ++i) lines[i] = line;
}

}  // namespace

void decode_python_line_table(PyLineTableFormat format, const uint8_t* table, size_t len, int first_line,
                              int32_t* lines, uint32_t units) {
  for (uint32_t i = 0; i < units; ++i) lines[i] = first_line;
  if (!table) return;
  int32_t line = first_line;
  uint32_t unit = 0;
  if (format == PyLineTableFormat::kPep626) {
    uint32_t byte_addr = 0;
    for (size_t i = 0; i + 1 < len && unit < units; i += 2) {
      uint32_t start_delta = table[i];
      int ldelta = int8_t(table[i + 1]);
      int32_t this_line = -1;
      if (ldelta != -128) {
        line += ldelta;
        this_line = line;
      }
      uint32_t end_addr = byte_addr + start_delta;
      fill(lines, units, byte_addr / 2, end_addr / 2, this_line);
      byte_addr = end_addr;
      unit = end_addr / 2;
    }
    return;
  }
  Reader r{table, table + len};
  while (r.ok() && unit < units) {
    uint8_t first = *r.p++;
    if (!(first & 0x80)) continue;  // not at an entry start: resynchronise
    int code = (first >> 3) & 15;
    uint32_t length = (first & 7) + 1;
    int32_t this_line = -1;
    switch (code) {
      case 15:  // no location
        break;
      case 14:  // long form: line delta, end line delta, column, end column
        line += r.svarint();
        this_line = line;
        r.varint();
        r.varint();
        r.varint();
        break;
      case 13:  // no column
        line += r.svarint();
        this_line = line;
        break;
      case 10: case 11: case 12:  // one line form: line delta 0..2, 2 column bytes
        line += code - 10;
        this_line = line;
        r.skip(2);
        break;
      default:  // short form: same line, 1 column byte
        this_line = line;
        r.skip(1);
        break;
    }
    fill(lines, units, unit, unit + length, this_line);
    unit += length;
  }
}

}  // namespace gpumemrec
