// The pprof reader behind `report`'s JAX live buffers (tools/pprof_profile.h):
// a profile built here field by field (google/pprof proto/profile.proto, as
// jaxlib's heap profile writes it) reads back; hostile bytes are refused
// with a reason, never read past their end. The live buffers by creation
// site (tools/framework_view.h) as jaxlib 0.10.2's profile has them.
#include <gtest/gtest.h>
#include <zlib.h>

#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "tools/framework_view.h"
#include "tools/pprof_profile.h"

using namespace gpumemrec;

namespace {

std::string varint(uint64_t v) {
  std::string out;
  do {
    uint8_t b = v & 0x7F;
    v >>= 7;
    out.push_back(char(v ? b | 0x80 : b));
  } while (v);
  return out;
}
std::string num(uint32_t field, uint64_t v) { return varint(field << 3) + varint(v); }
std::string bytes(uint32_t field, const std::string& p) { return varint((field << 3) | 2) + varint(p.size()) + p; }

// Strings: 0 "", 1 space, 2 bytes, 3 train_step, 4 model.py, 5 kind, 6 buffer.
std::string profile() {
  std::string p = bytes(1, num(1, 1) + num(2, 2));
  p += bytes(2, bytes(1, varint(1) + varint(2)) + bytes(2, varint(4096)) + bytes(3, num(1, 5) + num(2, 6)));
  p += bytes(2, num(1, 2) + num(2, 100));  // unpacked ints are valid protobuf too
  p += bytes(4, num(1, 1) + bytes(4, num(1, 1) + num(2, 20)));
  p += bytes(4, num(1, 2) + bytes(4, num(1, 1) + num(2, 30)));
  p += bytes(5, num(1, 1) + num(2, 3) + num(4, 4));
  for (const char* s : {"", "space", "bytes", "train_step", "model.py", "kind", "buffer"}) p += bytes(6, s);
  return p;
}

std::string gzip(const std::string& in) {
  z_stream z{};
  deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&z, in.size()) + 64, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = uInt(in.size());
  z.next_out = reinterpret_cast<Bytef*>(&out[0]);
  z.avail_out = uInt(out.size());
  deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

}  // namespace

TEST(PprofProfile, ReadsSamplesStacksAndLabels) {
  pprof::Profile p;
  std::string why;
  ASSERT_TRUE(pprof::parse_gzip(gzip(profile()), &p, &why)) << why;
  ASSERT_EQ(p.samples.size(), 2u);
  EXPECT_EQ(p.bytes_index(), 0u);
  const pprof::Sample& s = p.samples[0];
  ASSERT_EQ(s.values.size(), 1u);
  EXPECT_EQ(s.values[0], 4096);
  ASSERT_EQ(s.frames.size(), 2u);
  EXPECT_EQ(s.frames[0].function, "train_step");
  EXPECT_EQ(s.frames[0].file, "model.py");
  EXPECT_EQ(s.frames[0].line, 20);
  EXPECT_EQ(s.frames[1].line, 30);
  ASSERT_EQ(s.labels.size(), 1u);
  EXPECT_EQ(s.labels[0].first, "kind");
  EXPECT_EQ(s.labels[0].second, "buffer");
  EXPECT_EQ(p.samples[1].values[0], 100);
  EXPECT_EQ(p.samples[1].frames.size(), 1u);
}

TEST(PprofProfile, HostileBytesAreRefused) {
  const std::string good = profile();
  pprof::Profile p;
  std::string why;
  for (size_t cut = 1; cut < good.size(); ++cut) {  // every truncation: refused or a prefix, never a crash
    pprof::Profile q;
    pprof::parse(good.substr(0, cut), &q, &why);
  }
  EXPECT_FALSE(pprof::parse(bytes(2, std::string("\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 11)), &p, &why));
  EXPECT_FALSE(pprof::parse(varint((2 << 3) | 2) + varint(1u << 30) + "x", &p, &why));  // length past the end
  EXPECT_FALSE(pprof::parse(std::string("\x0b", 1), &p, &why));  // wire type 3 (groups) is not read
  EXPECT_FALSE(pprof::parse_gzip("not gzip", &p, &why));
  const std::string gz = gzip(good);
  EXPECT_FALSE(pprof::parse_gzip(gz.substr(0, gz.size() / 2), &p, &why));  // a cut stream
  EXPECT_FALSE(pprof::parse_gzip(gz, &p, &why, 16));  // over the size limit
}

namespace {

// jaxlib 0.10.2's shape (run_real_jax.py): sample types (allocations,
// count) and (space, bytes); an executable is a sample of 0 bytes with
// kind "executable"; one sample counts every buffer made at its stack.
// Strings: 0 "", 1 allocations, 2 count, 3 space, 4 bytes, 5 kind, 6 buffer,
// 7 executable, 8 add, 9 .../site-packages/jax/_src/numpy/ufunc_api.py,
// 10 __call__, 11 .../site-packages/flax/linen/linear.py, 12 /home/u/model.py,
// 13 compile, 14 .../site-packages/jax/_src/compiler.py.
std::string jaxlib_profile() {
  std::string p = bytes(1, num(1, 1) + num(2, 2)) + bytes(1, num(1, 3) + num(2, 4));
  auto kind = [](int k) { return bytes(3, num(1, 5) + num(2, k)); };
  p += bytes(2, bytes(1, varint(4)) + bytes(2, varint(1) + varint(0)) + kind(7));  // an executable
  p += bytes(2, bytes(1, varint(1) + varint(2) + varint(3)) + bytes(2, varint(3) + varint(3072)) + kind(6));
  auto loc = [](int id, int fn, int line) { return bytes(4, num(1, id) + bytes(4, num(1, fn) + num(2, line))); };
  p += loc(1, 1, 182) + loc(2, 2, 294) + loc(3, 3, 39) + loc(4, 4, 353);
  auto fn = [](int id, int name, int file) { return bytes(5, num(1, id) + num(2, name) + num(4, file)); };
  p += fn(1, 8, 9) + fn(2, 10, 11) + fn(3, 10, 12) + fn(4, 13, 14);
  for (const char* s : {"", "allocations", "count", "space", "bytes", "kind", "buffer", "executable", "add",
                        "/v/lib/python3.11/site-packages/jax/_src/numpy/ufunc_api.py", "__call__",
                        "/v/lib/python3.11/site-packages/flax/linen/linear.py", "/home/u/model.py", "compile",
                        "/v/lib/python3.11/site-packages/jax/_src/compiler.py"})
    p += bytes(6, s);
  return p;
}

}  // namespace

TEST(PprofProfile, JaxBuffersByTheProgramsLine) {
  char dir[] = "/tmp/gmr_pprof_XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string digest = std::string(dir) + "/framework.json";
  const std::string path = std::string(dir) + "/framework_memory_profile.pb.gz";
  auto write = [](const std::string& file, const std::string& data) {
    FILE* f = fopen(file.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    fwrite(data.data(), 1, data.size(), f);
    fclose(f);
  };
  write(digest, R"({"framework": "jax", "device": -1, "request_bytes": 0, "error": "RESOURCE_EXHAUSTED: x"})");
  write(path, gzip(jaxlib_profile()));
  cli::FrameworkView v = cli::read_framework_view(dir);
  unlink(path.c_str());
  unlink(digest.c_str());
  rmdir(dir);
  EXPECT_EQ(v.problem, "");
  EXPECT_EQ(v.buffer_count, 3u);  // the sample's count, the executable left out
  EXPECT_EQ(v.buffer_bytes, 3072u);
  ASSERT_EQ(v.buffer_sites.size(), 1u);
  // Not jax's frame, nor flax's (an installed package): the program's line.
  EXPECT_EQ(v.buffer_sites[0].file, "/home/u/model.py");
  EXPECT_EQ(v.buffer_sites[0].line, 39);
  EXPECT_EQ(v.buffer_sites[0].count, 3u);
}
