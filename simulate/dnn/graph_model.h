// What the simulated cuDNN answers about an operation graph: its engines, the
// notes on each, the order heuristics rank them in, and the workspace each
// engine's execution plan asks for (docs/simulate.md, "cuDNN").
//
// Engine 0 is the tensor-core engine every graph has. A graph with a
// convolution has engine 1 too, an implicit-GEMM engine without notes. The
// workspace is a deterministic function of the graph and the card:
//
//  * the unified SDPA forward operation (CUDNN_BACKEND_OPERATION_SDPA_FWD_
//    DESCRIPTOR, what cudnn-frontend 1.23 builds for PyTorch's attention on
//    cuDNN 9.24) on compute capability 9.x: 16 B, a 4-byte tile counter
//    16-byte aligned for the persistent Hopper kernel. NVIDIA open-sourced
//    that kernel in cudnn-frontend (include/cudnn_frontend/experimental/
//    sm90_sdpa_prefill_engine.h, Sm90SdpaPrefillEngine::get_workspace_size);
//    XLA found cuDNN's SDPA forward needing 16 B on Hopper and 0 on Blackwell
//    (openxla/xla #20564, #20739). Elsewhere 0;
//  * a convolution on engine 0 with half (from compute capability 7.0),
//    bfloat16 or float as TF32 (from 8.0): its non-virtual operands that are not in
//    channels-last layout, at their packed size. Tensor cores read NHWC and
//    cuDNN transposes NCHW operands (NVIDIA's Convolutional Layers User's
//    Guide, "Tensor Layouts In Memory: NCHW vs NHWC"); an execution gets no
//    scratch but the workspace pointer of its variant pack, so the copies are
//    counted there. A modelled figure; engine 1 (implicit GEMM, which cuDNN
//    documents as needing no workspace: CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM)
//    asks 0, and PyTorch picks it for float convolutions when TF32 is off
//    (Conv_v8.cpp filterEngineConfigs drops TENSOR_CORE engines then);
//  * every other graph (the composite SDPA backward, matmul, pointwise and
//    normalization fusions): 0. The scratch the SDPA backward needs (the fp32
//    dQ accumulator, the softmax sums) is a non-virtual tensor the frontend
//    puts in its own share of the workspace (cudnn-frontend
//    scaled_dot_product_flash_attention.h, get_fe_workspace_size_node), which
//    PyTorch allocates with the plan's (Graph::get_workspace_size()).
#pragma once

#include <cstdint>
#include <vector>

#include "dnn/graph_store.h"

namespace sim::dnn::graph {

// CUDNN_ATTR_OPERATIONGRAPH_ENGINE_GLOBAL_COUNT of a finalized operation graph.
int64_t engine_count(const Node& opgraph);
// Whether `engine` can run the graph (engine 0 runs a convolution only in a
// data type this card's tensor cores take).
bool engine_supports(const Node& opgraph, int64_t engine);
// CUDNN_ATTR_ENGINE_NUMERICAL_NOTE: TENSOR_CORE on engine 0 of a graph with a
// convolution, a matmul or an SDPA operation; none otherwise.
std::vector<int32_t> numerical_notes(const Node& opgraph, int64_t engine);
// Bytes of workspace the engine's plans ask for.
int64_t workspace_bytes(const Node& opgraph, int64_t engine);
// The supported engines in the order heuristics return them (any mode).
std::vector<int64_t> ranked_engines(const Node& opgraph);
// The unique ids of the tensors an execution must be given a pointer for:
// the non-virtual, not-by-value tensors the graph's operations name.
std::vector<int64_t> required_uids(const Node& opgraph);

}  // namespace sim::dnn::graph
