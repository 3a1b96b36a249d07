// PickleWriter emits the same bytes CPython's pickle (protocol 2) does for
// scalars, and only viewer-safe opcodes for containers and the memo.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/pickle_writer.h"

using gpumemrec::PickleWriter;

namespace {

bool to_vec(void* ctx, const uint8_t* d, size_t n) {
  auto* v = static_cast<std::vector<uint8_t>*>(ctx);
  v->insert(v->end(), d, d + n);
  return true;
}

std::string hex(const std::vector<uint8_t>& v) {
  static const char* h = "0123456789abcdef";
  std::string s;
  for (uint8_t b : v) {
    s += h[b >> 4];
    s += h[b & 15];
  }
  return s;
}

template <typename F>
std::string body(F f) {  // bytes between PROTO 2 and STOP
  std::vector<uint8_t> out;
  {
    PickleWriter w(to_vec, &out);
    w.begin();
    f(w);
    EXPECT_TRUE(w.end());
  }
  EXPECT_GE(out.size(), 3u);
  EXPECT_EQ(out[0], 0x80);
  EXPECT_EQ(out[1], 2);
  EXPECT_EQ(out.back(), '.');
  return hex(std::vector<uint8_t>(out.begin() + 2, out.end() - 1));
}

}  // namespace

TEST(PickleWriter, IntegersMatchCPython) {
  // Expected values from python3: pickle.dumps(v, 2)[2:-1].hex()
  EXPECT_EQ(body([](PickleWriter& w) { w.integer(0); }), "4b00");
  EXPECT_EQ(body([](PickleWriter& w) { w.integer(255); }), "4bff");
  EXPECT_EQ(body([](PickleWriter& w) { w.integer(256); }), "4d0001");
  EXPECT_EQ(body([](PickleWriter& w) { w.integer(65535); }), "4dffff");
  EXPECT_EQ(body([](PickleWriter& w) { w.integer(65536); }), "4a00000100");
  EXPECT_EQ(body([](PickleWriter& w) { w.integer(-1); }), "4affffffff");
  EXPECT_EQ(body([](PickleWriter& w) { w.integer(2147483647); }), "4affffff7f");
  EXPECT_EQ(body([](PickleWriter& w) { w.integer(2147483648LL); }), "8a050000008000");
  EXPECT_EQ(body([](PickleWriter& w) { w.integer(-2147483649LL); }), "8a05ffffff7fff");
  EXPECT_EQ(body([](PickleWriter& w) { w.integer(1LL << 40); }), "8a06000000000001");
  EXPECT_EQ(body([](PickleWriter& w) { w.integer(INT64_MAX); }), "8a08ffffffffffffff7f");
  EXPECT_EQ(body([](PickleWriter& w) { w.integer(INT64_MIN); }), "8a080000000000000080");
  EXPECT_EQ(body([](PickleWriter& w) { w.uinteger(UINT64_MAX); }), "8a09ffffffffffffffff00");
  EXPECT_EQ(body([](PickleWriter& w) { w.uinteger(300); }), "4d2c01");
}

TEST(PickleWriter, FloatsStringsAndConstants) {
  EXPECT_EQ(body([](PickleWriter& w) { w.floating(1.5); }), "473ff8000000000000");
  EXPECT_EQ(body([](PickleWriter& w) { w.string("h\xc3\xa9"); }), "580300000068c3a9");
  EXPECT_EQ(body([](PickleWriter& w) { w.string(""); }), "5800000000");
  EXPECT_EQ(body([](PickleWriter& w) { w.none(); }), "4e");
  EXPECT_EQ(body([](PickleWriter& w) { w.boolean(true); }), "88");
  EXPECT_EQ(body([](PickleWriter& w) { w.boolean(false); }), "89");
}

TEST(PickleWriter, ContainersAndMemo) {
  // {"a": [1, 2], "b": (0, 0)} then a memo reference to "a".
  std::string s = body([](PickleWriter& w) {
    w.empty_dict();
    w.mark();
    uint32_t slot = UINT32_MAX;
    w.memo_string("a", &slot);
    EXPECT_EQ(slot, 0u);
    w.empty_list();
    w.mark();
    w.integer(1);
    w.integer(2);
    w.appends();
    w.string("b");
    w.integer(0);
    w.integer(0);
    w.tuple2();
    w.setitems();
    w.memo_string("a", &slot);  // BINGET 0
    w.tuple2();
  });
  EXPECT_EQ(s, "7d28" "58010000006171" "00" "5d284b014b0265" "580100000062" "4b004b0086" "75" "6800" "86");
}

TEST(PickleWriter, LongMemoIndicesAndLargeOutput) {
  std::vector<uint8_t> out;
  PickleWriter w(to_vec, &out);
  w.begin();
  w.empty_list();
  for (int i = 0; i < 300; ++i) {
    w.mark();
    w.string(std::string(1000, 'x'));  // > 64 KiB in total: crosses the buffer
    uint32_t idx = w.put();
    EXPECT_EQ(idx, static_cast<uint32_t>(i));
    w.get(idx);
    w.tuple();
    w.append();
  }
  EXPECT_TRUE(w.end());
  EXPECT_EQ(w.bytes_written(), out.size());
  EXPECT_GT(out.size(), 300000u);
  // Index 256 and up use LONG_BINPUT 'r' / LONG_BINGET 'j'.
  std::string h = hex(out);
  EXPECT_NE(h.find("7200010000" "6a00010000"), std::string::npos);
}

TEST(PickleWriter, SinkFailureIsSticky) {
  int calls = 0;
  auto failing = [](void* ctx, const uint8_t*, size_t) {
    ++*static_cast<int*>(ctx);
    return false;
  };
  PickleWriter w(failing, &calls);
  w.begin();
  for (int i = 0; i < 100000; ++i) w.integer(i);
  EXPECT_FALSE(w.end());
  EXPECT_FALSE(w.ok());
  EXPECT_EQ(calls, 1);  // never called again after failing
}
