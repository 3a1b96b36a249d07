// Dropout states, the spatial transformer and CTC loss of the legacy API.
//
// Modelled figures (docs/simulate.md, "cuDNN"):
//  * cudnnDropoutGetStatesSize: one 48-byte XORWOW generator state
//    (sizeof(curandStateXORWOW_t)) per thread the card can keep resident,
//    SMs x maxThreadsPerMultiProcessor: 12,976,128 B on an H100 SXM. cuDNN
//    documents the states as the random generators' and their size as
//    depending on the GPU; NVIDIA gives no formula.
//  * CTC loss workspace: the forward and backward lattices (alpha, beta) of
//    the deterministic algorithm in fp32, T x N x (2 L + 1) each, with L the
//    longest label (the host lengths, or the descriptor's maxLabelLength, or
//    256, cuDNN's documented limit on a label's length).
#include "core/card.h"
#include "dnn/api.h"
#include "dnn/handle.h"
#include "dnn/legacy_descriptors.h"

namespace sim::dnn {
namespace {

constexpr size_t kXorwowStateBytes = 48;
constexpr int kMaxLabelLength = 256;

cudnnStatus_t need(bool ok, const char* what) { return ok ? CUDNN_STATUS_SUCCESS : fail(CUDNN_STATUS_BAD_PARAM, what); }

bool set(cudnnTensorDescriptor_t t) { return t != nullptr && t->data_type >= 0; }

size_t states_bytes() {
  const Profile& p = sim::card();
  return static_cast<size_t>(p.sm_count) * static_cast<size_t>(p.max_threads_per_sm) * kXorwowStateBytes;
}

// probs are [T, N, A] (cudnnCTCLoss: "T is the timing steps, N is the
// mini-batch size, A is the alphabet size").
size_t ctc_bytes(cudnnTensorDescriptor_t probs, int longest_label) {
  if (!set(probs) || probs->nb_dims < 2) return 0;
  const size_t t = static_cast<size_t>(probs->dims[0]), n = static_cast<size_t>(probs->dims[1]);
  return 2 * t * n * (2 * static_cast<size_t>(longest_label) + 1) * sizeof(float);
}

int longest(const int* lengths, cudnnTensorDescriptor_t probs) {
  int l = 0;
  if (lengths != nullptr && set(probs) && probs->nb_dims >= 2)
    for (int i = 0; i < probs->dims[1]; ++i) l = lengths[i] > l ? lengths[i] : l;
  return l;
}

int descriptor_longest(cudnnCTCLossDescriptor_t d) {
  return d != nullptr && d->max_label_length > 0 ? d->max_label_length : kMaxLabelLength;
}

cudnnStatus_t dropout_set(cudnnDropoutDescriptor_t d, cudnnHandle_t h, float dropout, void* states, size_t bytes,
                          unsigned long long seed, const char* what) {
  cudnnStatus_t st = need(d != nullptr && live_handle(h) && dropout >= 0.0f && dropout <= 1.0f, what);
  if (st == CUDNN_STATUS_SUCCESS && states != nullptr && bytes < states_bytes())
    st = fail(CUDNN_STATUS_BAD_PARAM, "dropout: the states buffer is smaller than cudnnDropoutGetStatesSize");
  if (st == CUDNN_STATUS_SUCCESS) *d = cudnnDropoutStruct{dropout, states, bytes, seed};
  return st;
}

}  // namespace
}  // namespace sim::dnn

using sim::dnn::need;

SIM_EXPORT cudnnStatus_t cudnnDropoutGetStatesSize(cudnnHandle_t handle, size_t* sizeInBytes) {
  cudnnStatus_t st = need(sim::dnn::live_handle(handle) && sizeInBytes != nullptr,
                          "cudnnDropoutGetStatesSize: bad handle or NULL size");
  if (st == CUDNN_STATUS_SUCCESS) *sizeInBytes = sim::dnn::states_bytes();
  return st;
}

SIM_EXPORT cudnnStatus_t cudnnSetDropoutDescriptor(cudnnDropoutDescriptor_t dropoutDesc, cudnnHandle_t handle,
                                                   float dropout, void* states, size_t stateSizeInBytes,
                                                   unsigned long long seed) {
  return sim::dnn::dropout_set(dropoutDesc, handle, dropout, states, stateSizeInBytes, seed,
                               "cudnnSetDropoutDescriptor: bad descriptor, handle or probability");
}

SIM_EXPORT cudnnStatus_t cudnnRestoreDropoutDescriptor(cudnnDropoutDescriptor_t dropoutDesc, cudnnHandle_t handle,
                                                       float dropout, void* states, size_t stateSizeInBytes,
                                                       unsigned long long seed) {
  return sim::dnn::dropout_set(dropoutDesc, handle, dropout, states, stateSizeInBytes, seed,
                               "cudnnRestoreDropoutDescriptor: bad descriptor, handle or probability");
}

SIM_EXPORT cudnnStatus_t cudnnSpatialTfGridGeneratorForward(cudnnHandle_t handle,
                                                            const cudnnSpatialTransformerDescriptor_t stDesc,
                                                            const void* theta, void* grid) {
  return need(sim::dnn::live_handle(handle) && stDesc != nullptr && theta != nullptr && grid != nullptr,
              "cudnnSpatialTfGridGeneratorForward: bad handle, descriptor or pointer");
}

SIM_EXPORT cudnnStatus_t cudnnSpatialTfGridGeneratorBackward(cudnnHandle_t handle,
                                                             const cudnnSpatialTransformerDescriptor_t stDesc,
                                                             const void* dgrid, void* dtheta) {
  return need(sim::dnn::live_handle(handle) && stDesc != nullptr && dgrid != nullptr && dtheta != nullptr,
              "cudnnSpatialTfGridGeneratorBackward: bad handle, descriptor or pointer");
}

SIM_EXPORT cudnnStatus_t cudnnSpatialTfSamplerForward(cudnnHandle_t handle, cudnnSpatialTransformerDescriptor_t stDesc,
                                                      const void* alpha, const cudnnTensorDescriptor_t xDesc,
                                                      const void* x, const void* grid, const void* beta,
                                                      cudnnTensorDescriptor_t yDesc, void* y) {
  (void)alpha, (void)x, (void)grid, (void)beta, (void)y;
  return need(sim::dnn::live_handle(handle) && stDesc != nullptr && sim::dnn::set(xDesc) && sim::dnn::set(yDesc),
              "cudnnSpatialTfSamplerForward: bad handle or descriptor");
}

SIM_EXPORT cudnnStatus_t cudnnSpatialTfSamplerBackward(cudnnHandle_t handle, cudnnSpatialTransformerDescriptor_t stDesc,
                                                       const void* alpha, const cudnnTensorDescriptor_t xDesc,
                                                       const void* x, const void* beta,
                                                       const cudnnTensorDescriptor_t dxDesc, void* dx,
                                                       const void* alphaDgrid, const cudnnTensorDescriptor_t dyDesc,
                                                       const void* dy, const void* grid, const void* betaDgrid,
                                                       void* dgrid) {
  (void)alpha, (void)x, (void)beta, (void)dx, (void)alphaDgrid, (void)dy, (void)grid, (void)betaDgrid, (void)dgrid;
  return need(sim::dnn::live_handle(handle) && stDesc != nullptr && sim::dnn::set(xDesc) && sim::dnn::set(dxDesc) &&
                  sim::dnn::set(dyDesc),
              "cudnnSpatialTfSamplerBackward: bad handle or descriptor");
}

SIM_EXPORT cudnnStatus_t cudnnGetCTCLossWorkspaceSize(cudnnHandle_t handle, const cudnnTensorDescriptor_t probsDesc,
                                                      const cudnnTensorDescriptor_t gradientsDesc, const int* labels,
                                                      const int* labelLengths, const int* inputLengths,
                                                      cudnnCTCLossAlgo_t algo, cudnnCTCLossDescriptor_t ctcLossDesc,
                                                      size_t* sizeInBytes) {
  (void)gradientsDesc, (void)labels, (void)inputLengths, (void)algo;
  cudnnStatus_t st = need(sim::dnn::live_handle(handle) && sim::dnn::set(probsDesc) && ctcLossDesc != nullptr &&
                              labelLengths != nullptr && sizeInBytes != nullptr,
                          "cudnnGetCTCLossWorkspaceSize: bad handle, descriptor or pointer");
  if (st == CUDNN_STATUS_SUCCESS)
    *sizeInBytes = sim::dnn::ctc_bytes(probsDesc, sim::dnn::longest(labelLengths, probsDesc));
  return st;
}

SIM_EXPORT cudnnStatus_t cudnnGetCTCLossWorkspaceSize_v8(cudnnHandle_t handle, cudnnCTCLossAlgo_t algo,
                                                         cudnnCTCLossDescriptor_t ctcLossDesc,
                                                         const cudnnTensorDescriptor_t probsDesc,
                                                         const cudnnTensorDescriptor_t gradientsDesc,
                                                         size_t* sizeInBytes) {
  (void)algo, (void)gradientsDesc;
  cudnnStatus_t st = need(sim::dnn::live_handle(handle) && sim::dnn::set(probsDesc) && ctcLossDesc != nullptr &&
                              sizeInBytes != nullptr,
                          "cudnnGetCTCLossWorkspaceSize_v8: bad handle, descriptor or pointer");
  if (st == CUDNN_STATUS_SUCCESS)
    *sizeInBytes = sim::dnn::ctc_bytes(probsDesc, sim::dnn::descriptor_longest(ctcLossDesc));
  return st;
}

SIM_EXPORT cudnnStatus_t cudnnCTCLoss(cudnnHandle_t handle, const cudnnTensorDescriptor_t probsDesc, const void* probs,
                                      const int hostLabels[], const int hostLabelLengths[],
                                      const int hostInputLengths[], void* costs,
                                      const cudnnTensorDescriptor_t gradientsDesc, void* gradients,
                                      cudnnCTCLossAlgo_t algo, cudnnCTCLossDescriptor_t ctcLossDesc, void* workspace,
                                      size_t workSpaceSizeInBytes) {
  (void)probs, (void)hostLabels, (void)hostInputLengths, (void)costs, (void)gradientsDesc, (void)gradients, (void)algo,
      (void)workspace;
  cudnnStatus_t st = need(sim::dnn::live_handle(handle) && sim::dnn::set(probsDesc) && ctcLossDesc != nullptr &&
                              hostLabelLengths != nullptr,
                          "cudnnCTCLoss: bad handle, descriptor or pointer");
  if (st == CUDNN_STATUS_SUCCESS &&
      workSpaceSizeInBytes < sim::dnn::ctc_bytes(probsDesc, sim::dnn::longest(hostLabelLengths, probsDesc)))
    st = sim::dnn::fail(CUDNN_STATUS_BAD_PARAM, "cudnnCTCLoss: the workspace is smaller than its size query says");
  return st;
}

SIM_EXPORT cudnnStatus_t cudnnCTCLoss_v8(cudnnHandle_t handle, cudnnCTCLossAlgo_t algo,
                                         cudnnCTCLossDescriptor_t ctcLossDesc, const cudnnTensorDescriptor_t probsDesc,
                                         const void* probs, const int labels[], const int labelLengths[],
                                         const int inputLengths[], void* costs,
                                         const cudnnTensorDescriptor_t gradientsDesc, void* gradients,
                                         size_t workSpaceSizeInBytes, void* workspace) {
  (void)algo, (void)probs, (void)labels, (void)labelLengths, (void)inputLengths, (void)costs, (void)gradientsDesc,
      (void)gradients, (void)workspace;
  cudnnStatus_t st = need(sim::dnn::live_handle(handle) && sim::dnn::set(probsDesc) && ctcLossDesc != nullptr,
                          "cudnnCTCLoss_v8: bad handle or descriptor");
  if (st == CUDNN_STATUS_SUCCESS &&
      workSpaceSizeInBytes < sim::dnn::ctc_bytes(probsDesc, sim::dnn::descriptor_longest(ctcLossDesc)))
    st = sim::dnn::fail(CUDNN_STATUS_BAD_PARAM, "cudnnCTCLoss_v8: the workspace is smaller than its size query says");
  return st;
}
