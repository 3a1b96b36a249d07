// A ring over a vector of zeroed events, for the ring's unit tests.
#pragma once
#include <cstdint>
#include <vector>

#include "shim/record/ring.h"

namespace gpumemrec {

struct RingFixture {
  explicit RingFixture(uint64_t cap) : mem(cap) { ring.init(mem.data(), cap); }
  std::vector<Event> mem;
  Ring ring;
};

}  // namespace gpumemrec
