// libFuzzer target: the status region reader (common/status_read.h), which
// `gpumemrec top` runs on files other processes wrote. Two inputs in one:
// the input as a whole region (any length), and the input as a patch over a
// valid region (bytes 0-2: the offset, byte 3 bit 0: cut the region at the
// patch's end, the rest: the bytes written there), which reaches the body's
// checks with small inputs. Checks the documented invariants: never a crash,
// and a region read is within its bounds, its strings printable.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "common/status_read.h"

using namespace gpumemrec::status;

namespace {

std::vector<unsigned char> base_region() {
  std::vector<unsigned char> b(sizeof(Region), 0);
  Region& r = *reinterpret_cast<Region*>(b.data());
  std::memcpy(r.magic, kMagic, sizeof kMagic);
  r.version = kVersion;
  r.size = sizeof(Region);
  r.pid = 42;
  r.world_size = 1;
  r.rank = -1;
  r.body.updates = 1;
  r.body.ndevices = 1;
  r.body.devices[0].live_bytes = 10;
  r.body.nsites = 1;
  r.body.sites_total = 1;
  r.body.sites[0].bytes = 10;
  r.body.sites[0].named = 1;
  r.body.curve_count = 300;
  return b;
}

bool printable(const std::string& s) {
  for (unsigned char c : s)
    if (c < 0x20 || c == 0x7f) return false;
  return true;
}

void check(const void* data, size_t n) {
  RegionView v;
  std::string why;
  if (!read_region(data, n, &v, &why)) {
    if (why.empty()) abort();
    return;
  }
  if (v.devices.size() > size_t(kDevices) || v.sites.size() > size_t(kSites) || v.seq % 2) abort();
  if (!printable(v.command) || !printable(v.dump_dir) || !printable(v.note) || !printable(v.boot_id)) abort();
  for (const DeviceView& d : v.devices)
    if (d.curve.size() > size_t(kCurvePoints) || !printable(d.bus_id)) abort();
  for (const SiteView& s : v.sites)
    if (!printable(s.label) || !printable(s.library)) abort();
  Expect e;
  e.uid = v.uid;
  e.pid = v.pid;
  e.start_ticks = v.start_ticks;
  e.alive = true;
  e.now_mono_ns = v.updated_mono_ns;
  if (!check_identity(v, e).empty()) abort();  // a region is its own identity
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  check(data, size);
  if (size < 4) return 0;
  static const std::vector<unsigned char> base = base_region();
  std::vector<unsigned char> r = base;
  const size_t off = (size_t(data[0]) | size_t(data[1]) << 8 | size_t(data[2]) << 16) % r.size();
  const size_t len = std::min(size - 4, r.size() - off);
  std::memcpy(r.data() + off, data + 4, len);
  check(r.data(), (data[3] & 1) ? off + len : r.size());
  return 0;
}
