// CPython line tables decoded without the interpreter
// (shim/record/python_linetable.cpp): 3.10's PEP 626 pairs and 3.11+'s
// PEP 657 location table, every entry form, and tables cut short (the copy
// is bounded at 1 MiB; a reader must never step past it).
// Formats as CPython documents them: Objects/lnotab_notes.txt (3.10) and
// InternalDocs/code_objects.md / Objects/locations.md (3.11+).
#include "shim/record/python_linetable.h"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <vector>

using namespace gpumemrec;

namespace {

std::vector<int32_t> decode(PyLineTableFormat f, const std::vector<uint8_t>& table, int first, uint32_t units) {
  // An exact-size heap copy: a read past the end is a sanitizer error.
  std::unique_ptr<uint8_t[]> copy(new uint8_t[table.size() ? table.size() : 1]);
  if (!table.empty()) std::memcpy(copy.get(), table.data(), table.size());
  std::vector<int32_t> lines(units, 12345);
  decode_python_line_table(f, table.empty() ? nullptr : copy.get(), table.size(), first, lines.data(), units);
  return lines;
}

// First byte of a PEP 657 entry: 1, code (4 bits), length - 1 (3 bits).
uint8_t entry(int code, int length) { return uint8_t(0x80 | (code << 3) | (length - 1)); }

}  // namespace

TEST(PythonLineTable, Pep626PairsWithNoLineMarker) {
  // (byte delta, line delta): 2 units at +1, 1 unit without a line (-128),
  // 3 units at +2 more; the table ends before unit 6.
  const std::vector<uint8_t> t = {4, 1, 2, 0x80, 6, 2};
  EXPECT_EQ(decode(PyLineTableFormat::kPep626, t, 10, 8), (std::vector<int32_t>{11, 11, -1, 13, 13, 13, 10, 10}));
}

TEST(PythonLineTable, Pep626NegativeDeltaAndOddLength) {
  const std::vector<uint8_t> t = {2, 5, 2, uint8_t(-3), 2};  // a trailing half pair is ignored
  EXPECT_EQ(decode(PyLineTableFormat::kPep626, t, 100, 3), (std::vector<int32_t>{105, 102, 100}));
}

TEST(PythonLineTable, LocationsEveryEntryForm) {
  const std::vector<uint8_t> t = {
      entry(0, 1), 0x05,              // short form: same line, 1 column byte
      entry(11, 2), 0x01, 0x02,       // one-line form: line + 1, 2 column bytes
      entry(13, 1), 3,                // no column: signed varint -1
      entry(14, 1), 10, 0, 1, 2,      // long form: +5, end line, columns
      entry(15, 2),                   // no location: 2 units
      entry(13, 1), 72, 3,            // no column, +100 as a two-chunk varint (200 = 8 + 3 * 64)
  };
  EXPECT_EQ(decode(PyLineTableFormat::kLocations, t, 20, 9),
            (std::vector<int32_t>{20, 21, 21, 20, 25, -1, -1, 125, 20}));
}

TEST(PythonLineTable, LocationsResynchroniseOnAStrayByte) {
  const std::vector<uint8_t> t = {0x12, 0x34, entry(13, 2), 2 << 1};  // two bytes that start no entry
  EXPECT_EQ(decode(PyLineTableFormat::kLocations, t, 1, 3), (std::vector<int32_t>{3, 3, 1}));
}

TEST(PythonLineTable, TablesCutShortAreReadOnlyToTheirEnd) {
  // Every prefix of a table whose last entry is a long form with multi-byte
  // varints: no read past the copy, and whatever was decoded is kept.
  const std::vector<uint8_t> full = {entry(13, 1), 2, entry(14, 2), 0x48, 0x43, 0x41, 0x01, 0x05, 0x06};
  for (size_t n = 0; n <= full.size(); ++n) {
    std::vector<uint8_t> t(full.begin(), full.begin() + long(n));
    const auto lines = decode(PyLineTableFormat::kLocations, t, 50, 4);
    ASSERT_EQ(lines.size(), 4u);
    if (n >= 2) {
      EXPECT_EQ(lines[0], 51) << n;
    }
    EXPECT_EQ(lines[3], 50) << n;  // never reached: the first line
    for (int32_t l : lines) EXPECT_NE(l, 12345) << n;  // every unit written
  }
  for (size_t n = 0; n <= 5; ++n) {
    std::vector<uint8_t> t = {4, 1, 2, 0x80, 6};
    t.resize(n);
    const auto lines = decode(PyLineTableFormat::kPep626, t, 7, 4);
    for (int32_t l : lines) EXPECT_NE(l, 12345) << n;
  }
}

TEST(PythonLineTable, MoreTableThanUnitsStopsAtTheUnits) {
  const std::vector<uint8_t> t = {entry(13, 4), 2, entry(13, 4), 2};
  EXPECT_EQ(decode(PyLineTableFormat::kLocations, t, 1, 2), (std::vector<int32_t>{2, 2}));
  EXPECT_EQ(decode(PyLineTableFormat::kPep626, {200, 1}, 1, 3), (std::vector<int32_t>{2, 2, 2}));
}

TEST(PythonLineTable, NoTableIsTheFirstLineEverywhere) {
  EXPECT_EQ(decode(PyLineTableFormat::kLocations, {}, 9, 3), (std::vector<int32_t>{9, 9, 9}));
  EXPECT_EQ(decode(PyLineTableFormat::kPep626, {}, 9, 2), (std::vector<int32_t>{9, 9}));
}
