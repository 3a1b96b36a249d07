// cudnnBackendFinalize: what each descriptor type requires before it is
// finalized (the rules cudnn_graph_v9.h documents, where cheap to check) and
// the read-only attributes the library answers from then on.
#pragma once

#include "dnn/graph_store.h"

namespace sim::dnn::graph {

// Checks `n` and fills its read-only attributes; marks it finalized on
// success. The status and, on failure, the reason (cudnnGetLastErrorString).
cudnnStatus_t finalize(Node& n);

}  // namespace sim::dnn::graph
