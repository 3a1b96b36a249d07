// Line tables of CPython code objects, decoded without the interpreter (the
// table is a copy taken when the code object was first seen, so this also
// works at dump time, when the dumping thread may not hold the GIL).
#pragma once
#include <cstddef>
#include <cstdint>

namespace gpumemrec {

enum class PyLineTableFormat : uint8_t {
  kPep626,     // 3.10: (byte delta, signed line delta) pairs, -128 = no line
  kLocations,  // 3.11+: PEP 657 location table, lengths in code units
};

// Fills lines[0..units) with the line of each code unit (2-byte instruction
// word); -1 where the table says "no line"; first_line where the table does
// not reach. Never reads outside table[0..len).
void decode_python_line_table(PyLineTableFormat format, const uint8_t* table, size_t len, int first_line,
                              int32_t* lines, uint32_t units);

}  // namespace gpumemrec
