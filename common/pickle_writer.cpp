#include "common/pickle_writer.h"

#include <cstring>

namespace gpumemrec {
namespace {
enum : uint8_t {
  kMark = '(',
  kStop = '.',
  kBinInt = 'J',
  kBinInt1 = 'K',
  kBinInt2 = 'M',
  kNone = 'N',
  kBinUnicode = 'X',
  kAppend = 'a',
  kDict = 'd',
  kEmptyDict = '}',
  kAppends = 'e',
  kBinGet = 'h',
  kLongBinGet = 'j',
  kList = 'l',
  kEmptyList = ']',
  kBinPut = 'q',
  kLongBinPut = 'r',
  kSetItem = 's',
  kTuple = 't',
  kEmptyTuple = ')',
  kSetItems = 'u',
  kBinFloat = 'G',
  kProto = 0x80,
  kTuple1 = 0x85,
  kTuple2 = 0x86,
  kTuple3 = 0x87,
  kNewTrue = 0x88,
  kNewFalse = 0x89,
  kLong1 = 0x8a,
};
}  // namespace

bool PickleWriter::flush() {
  if (len_ == 0) return ok_;
  if (ok_ && !sink_(ctx_, buf_, len_)) ok_ = false;
  total_ += len_;
  len_ = 0;
  return ok_;
}

void PickleWriter::bytes(const void* p, size_t n) {
  const uint8_t* s = static_cast<const uint8_t*>(p);
  while (n > 0) {
    if (len_ == sizeof buf_) flush();
    size_t k = sizeof buf_ - len_;
    if (k > n) k = n;
    memcpy(buf_ + len_, s, k);
    len_ += k;
    s += k;
    n -= k;
  }
}

void PickleWriter::u32le(uint32_t v) {
  uint8_t b[4] = {uint8_t(v), uint8_t(v >> 8), uint8_t(v >> 16), uint8_t(v >> 24)};
  bytes(b, 4);
}

void PickleWriter::begin() {
  byte(kProto);
  byte(2);
}

bool PickleWriter::end() {
  byte(kStop);
  return flush();
}

void PickleWriter::none() { byte(kNone); }
void PickleWriter::boolean(bool v) { byte(v ? kNewTrue : kNewFalse); }

void PickleWriter::integer(int64_t v) {
  if (v >= 0 && v <= 0xFF) {
    byte(kBinInt1);
    byte(static_cast<uint8_t>(v));
  } else if (v >= 0 && v <= 0xFFFF) {
    byte(kBinInt2);
    byte(static_cast<uint8_t>(v));
    byte(static_cast<uint8_t>(v >> 8));
  } else if (v >= INT32_MIN && v <= INT32_MAX) {
    byte(kBinInt);
    u32le(static_cast<uint32_t>(static_cast<int32_t>(v)));
  } else {
    // LONG1: little-endian two's complement, shortest form.
    uint8_t b[8];
    uint64_t u = static_cast<uint64_t>(v);
    for (int i = 0; i < 8; ++i) b[i] = static_cast<uint8_t>(u >> (8 * i));
    int n = 8;
    while (n > 1) {
      bool neg_ok = b[n - 1] == 0xFF && (b[n - 2] & 0x80);
      bool pos_ok = b[n - 1] == 0x00 && !(b[n - 2] & 0x80);
      if (!neg_ok && !pos_ok) break;
      --n;
    }
    byte(kLong1);
    byte(static_cast<uint8_t>(n));
    bytes(b, n);
  }
}

void PickleWriter::uinteger(uint64_t v) {
  if (v <= static_cast<uint64_t>(INT64_MAX)) {
    integer(static_cast<int64_t>(v));
    return;
  }
  uint8_t b[9];
  for (int i = 0; i < 8; ++i) b[i] = static_cast<uint8_t>(v >> (8 * i));
  b[8] = 0;  // sign byte: keeps it positive
  byte(kLong1);
  byte(9);
  bytes(b, 9);
}

void PickleWriter::floating(double v) {
  uint64_t u;
  memcpy(&u, &v, 8);
  uint8_t b[8];
  for (int i = 0; i < 8; ++i) b[i] = static_cast<uint8_t>(u >> (8 * (7 - i)));  // big-endian
  byte(kBinFloat);
  bytes(b, 8);
}

void PickleWriter::string(std::string_view s) {
  size_t n = s.size();
  if (n > 0xFFFFFFFFu) n = 0xFFFFFFFFu;
  byte(kBinUnicode);
  u32le(static_cast<uint32_t>(n));
  bytes(s.data(), n);
}

void PickleWriter::empty_dict() { byte(kEmptyDict); }
void PickleWriter::empty_list() { byte(kEmptyList); }
void PickleWriter::empty_tuple() { byte(kEmptyTuple); }
void PickleWriter::mark() { byte(kMark); }
void PickleWriter::setitem() { byte(kSetItem); }
void PickleWriter::setitems() { byte(kSetItems); }
void PickleWriter::append() { byte(kAppend); }
void PickleWriter::appends() { byte(kAppends); }
void PickleWriter::tuple() { byte(kTuple); }
void PickleWriter::tuple1() { byte(kTuple1); }
void PickleWriter::tuple2() { byte(kTuple2); }
void PickleWriter::tuple3() { byte(kTuple3); }
void PickleWriter::list() { byte(kList); }
void PickleWriter::dict() { byte(kDict); }

uint32_t PickleWriter::put() {
  uint32_t idx = next_memo_++;
  if (idx <= 0xFF) {
    byte(kBinPut);
    byte(static_cast<uint8_t>(idx));
  } else {
    byte(kLongBinPut);
    u32le(idx);
  }
  return idx;
}

void PickleWriter::get(uint32_t idx) {
  if (idx <= 0xFF) {
    byte(kBinGet);
    byte(static_cast<uint8_t>(idx));
  } else {
    byte(kLongBinGet);
    u32le(idx);
  }
}

void PickleWriter::memo_string(std::string_view s, uint32_t* slot) {
  if (*slot != UINT32_MAX) {
    get(*slot);
    return;
  }
  string(s);
  *slot = put();
}

}  // namespace gpumemrec
