// What communicator creation (init.cpp) shares with ncclCommSplit and
// ncclCommShrink (split.cpp) and with teardown.
#pragma once

#include "nccl/comm.h"

namespace sim::nccl {

// What a config asks for, read only as far as its `size` reaches (a program
// built against an older nccl.h passes a shorter struct), with NCCL's
// defaults for what it leaves undefined (init.cc parseCommConfig); a child
// without a config inherits its parent's (ncclCommSplit's documentation).
struct InitOptions {
  bool blocking = true;
  int min_ctas = NCCL_CONFIG_UNDEF_INT;
  int max_ctas = NCCL_CONFIG_UNDEF_INT;
  bool split_share = false;
};
ncclResult_t read_config(const ncclConfig_t* config, const ncclComm* parent, InitOptions* out);

// A registered communicator of `nranks` with its plan; not yet initialized.
ncclComm* new_comm(int nranks, int rank, int device, const InitOptions& o);
// Takes init's memory (and, without runtime connection, the ring's); sets
// the communicator's state.
ncclResult_t finish_init(ncclComm* c);
// Frees everything and forgets the communicator.
void delete_comm(ncclComm* c);
// The end of a blocking creation: *out = c when rc is ncclSuccess, else c
// is deleted. Returns rc.
ncclResult_t hand_over(ncclComm* c, ncclResult_t rc, ncclComm_t* out);

}  // namespace sim::nccl
