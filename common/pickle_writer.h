// A small streaming pickle writer (protocol 2) for PyTorch memory snapshots.
// It emits only opcodes that PyTorch's memory viewer's unpickler knows (see
// memory-viz-format.md): PROTO, STOP, EMPTY_DICT, EMPTY_LIST, EMPTY_TUPLE,
// MARK, SETITEM, SETITEMS, APPEND, APPENDS, TUPLE, TUPLE1-3, LIST, DICT,
// BININT, BININT1, BININT2, LONG1, BINFLOAT, BINUNICODE, NONE, NEWTRUE,
// NEWFALSE, BINPUT, LONG_BINPUT, BINGET, LONG_BINGET.
//
// No exceptions, no allocation per value: bytes are buffered and handed to
// a sink callback. The first sink failure makes the writer sticky-failed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace gpumemrec {

class PickleWriter {
 public:
  // Returns false on failure (e.g. disk full).
  using Sink = bool (*)(void* ctx, const uint8_t* data, size_t n);

  PickleWriter(Sink sink, void* ctx) : sink_(sink), ctx_(ctx) {}
  ~PickleWriter() { flush(); }
  PickleWriter(const PickleWriter&) = delete;
  PickleWriter& operator=(const PickleWriter&) = delete;

  void begin();  // PROTO 2
  bool end();    // STOP, then flush; returns ok()

  void none();
  void boolean(bool v);
  void integer(int64_t v);
  void uinteger(uint64_t v);
  void floating(double v);
  void string(std::string_view s);

  void empty_dict();
  void empty_list();
  void empty_tuple();
  void mark();
  void setitem();   // dict[key] = value (both on the stack)
  void setitems();  // pairs since the mark
  void append();
  void appends();   // items since the mark
  void tuple();     // items since the mark
  void tuple1();
  void tuple2();
  void tuple3();
  void list();      // items since the mark
  void dict();      // pairs since the mark

  // Stores the object on top of the stack in the memo; returns its index.
  uint32_t put();
  // Pushes the memoized object `index`.
  void get(uint32_t index);

  // Convenience: a string that is memoized on first use (by the caller's
  // slot). `*slot` must start at UINT32_MAX.
  void memo_string(std::string_view s, uint32_t* slot);

  bool flush();
  bool ok() const { return ok_; }
  uint64_t bytes_written() const { return total_ + len_; }

 private:
  void byte(uint8_t b) {
    if (len_ == sizeof buf_) flush();
    buf_[len_++] = b;
  }
  void bytes(const void* p, size_t n);
  void u32le(uint32_t v);

  Sink sink_;
  void* ctx_;
  bool ok_ = true;
  uint32_t next_memo_ = 0;
  size_t len_ = 0;
  uint64_t total_ = 0;
  uint8_t buf_[64 * 1024];
};

}  // namespace gpumemrec
