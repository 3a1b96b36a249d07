// Prints the sizes of the recorder's records, for run_bench.py's memory
// section (the ring and the live table are arrays of these).
#include <cstdio>

#include "common/event.h"
#include "shim/record/live_table.h"

int main() {
  std::printf("SIZES event=%zu live_entry=%zu live_table=%zu\n", sizeof(gpumemrec::Event),
              sizeof(gpumemrec::LiveEntry), sizeof(gpumemrec::LiveTable));
  return 0;
}
