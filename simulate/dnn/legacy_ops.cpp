// The legacy API's other calls PyTorch makes: batch normalization
// (aten/src/ATen/native/cudnn/BatchNorm.cpp), pooling, dropout states, the
// spatial transformer (AffineGridGenerator.cpp, GridSampler.cpp) and CTC loss
// (LossCTC.cpp). Sizes are the modelled figures of docs/simulate.md; the
// computations check their arguments and succeed without running.
#include "core/card.h"
#include "dnn/api.h"
#include "dnn/handle.h"
#include "dnn/legacy_descriptors.h"

namespace sim::dnn {
namespace {

bool set(cudnnTensorDescriptor_t t) { return t != nullptr && t->data_type >= 0; }

cudnnStatus_t need(bool ok, const char* what) {
  return ok ? CUDNN_STATUS_SUCCESS : fail(CUDNN_STATUS_BAD_PARAM, what);
}

cudnnStatus_t size_out(size_t* out, size_t value, const char* what) {
  if (out == nullptr) return fail(CUDNN_STATUS_BAD_PARAM, what);
  *out = value;
  return CUDNN_STATUS_SUCCESS;
}

// Batch normalization's workspace and reserve for CUDNN_BATCHNORM_OPS_BN,
// the only operation PyTorch asks for: 0. The reserve keeps what a fused
// activation needs for its backward (cuDNN 7.4.1 release notes; the
// activation's mask), and plain BN fuses none; no workspace is modelled for
// the spatial modes either (PyTorch allocates what these calls return,
// BatchNorm.cpp cudnn_batch_norm). With a fused activation: one bit per
// element of x, in bytes rounded up.
size_t bn_bytes(cudnnBatchNormOps_t ops, cudnnTensorDescriptor_t x) {
  if (static_cast<int>(ops) == 0 || !set(x)) return 0;
  size_t elements = 1;
  for (int i = 0; i < x->nb_dims; ++i) elements *= static_cast<size_t>(x->dims[i]);
  return (elements + 7) / 8;
}

}  // namespace
}  // namespace sim::dnn

using sim::dnn::fail;
using sim::dnn::need;

SIM_EXPORT cudnnStatus_t cudnnGetBatchNormalizationForwardTrainingExWorkspaceSize(
    cudnnHandle_t handle, cudnnBatchNormMode_t mode, cudnnBatchNormOps_t bnOps, const cudnnTensorDescriptor_t xDesc,
    const cudnnTensorDescriptor_t zDesc, const cudnnTensorDescriptor_t yDesc,
    const cudnnTensorDescriptor_t bnScaleBiasMeanVarDesc, const cudnnActivationDescriptor_t activationDesc,
    size_t* sizeInBytes) {
  (void)mode, (void)bnOps, (void)zDesc, (void)activationDesc;
  cudnnStatus_t st = need(sim::dnn::live_handle(handle) && sim::dnn::set(xDesc) && sim::dnn::set(yDesc) &&
                              sim::dnn::set(bnScaleBiasMeanVarDesc),
                          "cudnnGetBatchNormalizationForwardTrainingExWorkspaceSize: bad handle or descriptor");
  return st != CUDNN_STATUS_SUCCESS ? st : sim::dnn::size_out(sizeInBytes, 0, "NULL size");
}

SIM_EXPORT cudnnStatus_t cudnnGetBatchNormalizationBackwardExWorkspaceSize(
    cudnnHandle_t handle, cudnnBatchNormMode_t mode, cudnnBatchNormOps_t bnOps, const cudnnTensorDescriptor_t xDesc,
    const cudnnTensorDescriptor_t yDesc, const cudnnTensorDescriptor_t dyDesc, const cudnnTensorDescriptor_t dzDesc,
    const cudnnTensorDescriptor_t dxDesc, const cudnnTensorDescriptor_t dBnScaleBiasDesc,
    const cudnnActivationDescriptor_t activationDesc, size_t* sizeInBytes) {
  (void)mode, (void)bnOps, (void)yDesc, (void)dzDesc, (void)activationDesc;
  cudnnStatus_t st = need(sim::dnn::live_handle(handle) && sim::dnn::set(xDesc) && sim::dnn::set(dyDesc) &&
                              sim::dnn::set(dxDesc) && sim::dnn::set(dBnScaleBiasDesc),
                          "cudnnGetBatchNormalizationBackwardExWorkspaceSize: bad handle or descriptor");
  return st != CUDNN_STATUS_SUCCESS ? st : sim::dnn::size_out(sizeInBytes, 0, "NULL size");
}

SIM_EXPORT cudnnStatus_t cudnnGetBatchNormalizationTrainingExReserveSpaceSize(
    cudnnHandle_t handle, cudnnBatchNormMode_t mode, cudnnBatchNormOps_t bnOps,
    const cudnnActivationDescriptor_t activationDesc, const cudnnTensorDescriptor_t xDesc, size_t* sizeInBytes) {
  (void)mode, (void)activationDesc;
  cudnnStatus_t st = need(sim::dnn::live_handle(handle) && sim::dnn::set(xDesc),
                          "cudnnGetBatchNormalizationTrainingExReserveSpaceSize: bad handle or descriptor");
  return st != CUDNN_STATUS_SUCCESS ? st
                                    : sim::dnn::size_out(sizeInBytes, sim::dnn::bn_bytes(bnOps, xDesc), "NULL size");
}

SIM_EXPORT cudnnStatus_t cudnnBatchNormalizationForwardTrainingEx(
    cudnnHandle_t handle, cudnnBatchNormMode_t mode, cudnnBatchNormOps_t bnOps, const void* alpha, const void* beta,
    const cudnnTensorDescriptor_t xDesc, const void* xData, const cudnnTensorDescriptor_t zDesc, const void* zData,
    const cudnnTensorDescriptor_t yDesc, void* yData, const cudnnTensorDescriptor_t bnScaleBiasMeanVarDesc,
    const void* bnScale, const void* bnBias, double exponentialAverageFactor, void* resultRunningMean,
    void* resultRunningVariance, double epsilon, void* resultSaveMean, void* resultSaveInvVariance,
    cudnnActivationDescriptor_t activationDesc, void* workspace, size_t workSpaceSizeInBytes, void* reserveSpace,
    size_t reserveSpaceSizeInBytes) {
  (void)mode, (void)alpha, (void)beta, (void)xData, (void)zDesc, (void)zData, (void)yData, (void)bnScale, (void)bnBias,
      (void)exponentialAverageFactor, (void)resultRunningMean, (void)resultRunningVariance, (void)resultSaveMean,
      (void)resultSaveInvVariance, (void)activationDesc, (void)workspace, (void)workSpaceSizeInBytes,
      (void)reserveSpace;
  cudnnStatus_t st = need(sim::dnn::live_handle(handle) && sim::dnn::set(xDesc) && sim::dnn::set(yDesc) &&
                              sim::dnn::set(bnScaleBiasMeanVarDesc) && epsilon >= 0,
                          "cudnnBatchNormalizationForwardTrainingEx: bad handle, descriptor or epsilon");
  if (st == CUDNN_STATUS_SUCCESS && reserveSpaceSizeInBytes < sim::dnn::bn_bytes(bnOps, xDesc))
    st = fail(CUDNN_STATUS_BAD_PARAM, "cudnnBatchNormalizationForwardTrainingEx: reserve space too small");
  return st;
}

SIM_EXPORT cudnnStatus_t cudnnBatchNormalizationForwardInference(
    cudnnHandle_t handle, cudnnBatchNormMode_t mode, const void* alpha, const void* beta,
    const cudnnTensorDescriptor_t xDesc, const void* x, const cudnnTensorDescriptor_t yDesc, void* y,
    const cudnnTensorDescriptor_t bnScaleBiasMeanVarDesc, const void* bnScale, const void* bnBias,
    const void* estimatedMean, const void* estimatedVariance, double epsilon) {
  (void)mode, (void)alpha, (void)beta, (void)x, (void)y, (void)bnScale, (void)bnBias, (void)estimatedMean,
      (void)estimatedVariance;
  return need(sim::dnn::live_handle(handle) && sim::dnn::set(xDesc) && sim::dnn::set(yDesc) &&
                  sim::dnn::set(bnScaleBiasMeanVarDesc) && epsilon >= 0,
              "cudnnBatchNormalizationForwardInference: bad handle, descriptor or epsilon");
}

SIM_EXPORT cudnnStatus_t cudnnBatchNormalizationBackwardEx(
    cudnnHandle_t handle, cudnnBatchNormMode_t mode, cudnnBatchNormOps_t bnOps, const void* alphaDataDiff,
    const void* betaDataDiff, const void* alphaParamDiff, const void* betaParamDiff,
    const cudnnTensorDescriptor_t xDesc, const void* xData, const cudnnTensorDescriptor_t yDesc, const void* yData,
    const cudnnTensorDescriptor_t dyDesc, const void* dyData, const cudnnTensorDescriptor_t dzDesc, void* dzData,
    const cudnnTensorDescriptor_t dxDesc, void* dxData, const cudnnTensorDescriptor_t dBnScaleBiasDesc,
    const void* bnScaleData, const void* bnBiasData, void* dBnScaleData, void* dBnBiasData, double epsilon,
    const void* savedMean, const void* savedInvVariance, cudnnActivationDescriptor_t activationDesc, void* workSpace,
    size_t workSpaceSizeInBytes, void* reserveSpace, size_t reserveSpaceSizeInBytes) {
  (void)mode, (void)alphaDataDiff, (void)betaDataDiff, (void)alphaParamDiff, (void)betaParamDiff, (void)xData,
      (void)yDesc, (void)yData, (void)dyData, (void)dzDesc, (void)dzData, (void)dxData, (void)bnScaleData,
      (void)bnBiasData, (void)dBnScaleData, (void)dBnBiasData, (void)savedMean, (void)savedInvVariance,
      (void)activationDesc, (void)workSpace, (void)workSpaceSizeInBytes, (void)reserveSpace;
  cudnnStatus_t st = need(sim::dnn::live_handle(handle) && sim::dnn::set(xDesc) && sim::dnn::set(dyDesc) &&
                              sim::dnn::set(dxDesc) && sim::dnn::set(dBnScaleBiasDesc) && epsilon >= 0,
                          "cudnnBatchNormalizationBackwardEx: bad handle, descriptor or epsilon");
  if (st == CUDNN_STATUS_SUCCESS && reserveSpaceSizeInBytes < sim::dnn::bn_bytes(bnOps, xDesc))
    st = fail(CUDNN_STATUS_BAD_PARAM, "cudnnBatchNormalizationBackwardEx: reserve space too small");
  return st;
}

SIM_EXPORT cudnnStatus_t cudnnPoolingForward(cudnnHandle_t handle, const cudnnPoolingDescriptor_t poolingDesc,
                                             const void* alpha, const cudnnTensorDescriptor_t xDesc, const void* x,
                                             const void* beta, const cudnnTensorDescriptor_t yDesc, void* y) {
  (void)alpha, (void)x, (void)beta, (void)y;
  return need(sim::dnn::live_handle(handle) && poolingDesc != nullptr && sim::dnn::set(xDesc) && sim::dnn::set(yDesc),
              "cudnnPoolingForward: bad handle or descriptor");
}
