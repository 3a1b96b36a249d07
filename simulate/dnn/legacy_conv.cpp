// The legacy convolution API (PyTorch's Conv_v7.cpp path, taken with
// TORCH_CUDNN_V8_API_DISABLED=1): one algorithm per direction, the
// implicit-GEMM one, which NVIDIA documents as needing no workspace
// (cudnn_cnn_v9.h: CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM "No extra
// workspace"; BWD_DATA_ALGO_1 and BWD_FILTER_ALGO_1 are the implicit-GEMM,
// deterministic ones of the backward directions). Every other algorithm is
// CUDNN_STATUS_NOT_SUPPORTED. The computations succeed without running.
#include "dnn/api.h"
#include "dnn/handle.h"
#include "dnn/legacy_descriptors.h"

namespace sim::dnn {
namespace {

bool set(cudnnTensorDescriptor_t t) { return t != nullptr && t->data_type >= 0; }
bool set(cudnnFilterDescriptor_t f) { return f != nullptr && f->data_type >= 0; }
bool set(cudnnConvolutionDescriptor_t c) { return c != nullptr && c->spatial > 0; }

template <typename A, typename B, typename C>
cudnnStatus_t check_args(cudnnHandle_t handle, A a, B b, cudnnConvolutionDescriptor_t conv, C c, const char* what) {
  if (!live_handle(handle) || !set(a) || !set(b) || !set(conv) || !set(c)) return fail(CUDNN_STATUS_BAD_PARAM, what);
  return CUDNN_STATUS_SUCCESS;
}

// The one result of an algorithm query: `algo`, no workspace, deterministic.
template <typename Perf>
cudnnStatus_t one_result(cudnnConvolutionDescriptor_t conv, int algo, int requested, int* returned, Perf* perf) {
  if (returned == nullptr || perf == nullptr || requested < 1)
    return fail(CUDNN_STATUS_BAD_PARAM, "convolution algorithm query: NULL output or a count below 1");
  *perf = Perf{};
  perf->algo = static_cast<decltype(perf->algo)>(algo);
  perf->status = CUDNN_STATUS_SUCCESS;
  perf->time = 0.0f;
  perf->memory = 0;
  perf->determinism = static_cast<cudnnDeterminism_t>(CUDNN_DETERMINISTIC);
  perf->mathType = static_cast<cudnnMathType_t>(conv->math_type);
  *returned = 1;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t workspace(int algo, int ours, size_t* size) {
  if (size == nullptr) return fail(CUDNN_STATUS_BAD_PARAM, "convolution workspace query: NULL size");
  if (algo != ours) return fail(CUDNN_STATUS_NOT_SUPPORTED,
                                "convolution: only the implicit-GEMM algorithm is simulated");
  *size = 0;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t run(int algo, int ours, const char* what) {
  return algo == ours ? CUDNN_STATUS_SUCCESS : fail(CUDNN_STATUS_NOT_SUPPORTED, what);
}

}  // namespace
}  // namespace sim::dnn

using sim::dnn::check_args;
using sim::dnn::fail;

SIM_EXPORT cudnnStatus_t cudnnGetConvolutionForwardAlgorithm_v7(
    cudnnHandle_t handle, const cudnnTensorDescriptor_t srcDesc, const cudnnFilterDescriptor_t filterDesc,
    const cudnnConvolutionDescriptor_t convDesc, const cudnnTensorDescriptor_t destDesc, const int requestedAlgoCount,
    int* returnedAlgoCount, cudnnConvolutionFwdAlgoPerf_t* perfResults) {
  cudnnStatus_t st = check_args(handle, srcDesc, filterDesc, convDesc, destDesc,
                                "cudnnGetConvolutionForwardAlgorithm_v7");
  return st != CUDNN_STATUS_SUCCESS ? st
                                    : sim::dnn::one_result(convDesc, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,
                                                           requestedAlgoCount, returnedAlgoCount, perfResults);
}

SIM_EXPORT cudnnStatus_t cudnnGetConvolutionBackwardDataAlgorithm_v7(
    cudnnHandle_t handle, const cudnnFilterDescriptor_t filterDesc, const cudnnTensorDescriptor_t diffDesc,
    const cudnnConvolutionDescriptor_t convDesc, const cudnnTensorDescriptor_t gradDesc, const int requestedAlgoCount,
    int* returnedAlgoCount, cudnnConvolutionBwdDataAlgoPerf_t* perfResults) {
  cudnnStatus_t st = check_args(handle, filterDesc, diffDesc, convDesc, gradDesc,
                                "cudnnGetConvolutionBackwardDataAlgorithm_v7");
  return st != CUDNN_STATUS_SUCCESS ? st
                                    : sim::dnn::one_result(convDesc, CUDNN_CONVOLUTION_BWD_DATA_ALGO_1,
                                                           requestedAlgoCount, returnedAlgoCount, perfResults);
}

SIM_EXPORT cudnnStatus_t cudnnGetConvolutionBackwardFilterAlgorithm_v7(
    cudnnHandle_t handle, const cudnnTensorDescriptor_t srcDesc, const cudnnTensorDescriptor_t diffDesc,
    const cudnnConvolutionDescriptor_t convDesc, const cudnnFilterDescriptor_t gradDesc, const int requestedAlgoCount,
    int* returnedAlgoCount, cudnnConvolutionBwdFilterAlgoPerf_t* perfResults) {
  cudnnStatus_t st = check_args(handle, srcDesc, diffDesc, convDesc, gradDesc,
                                "cudnnGetConvolutionBackwardFilterAlgorithm_v7");
  return st != CUDNN_STATUS_SUCCESS ? st
                                    : sim::dnn::one_result(convDesc, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1,
                                                           requestedAlgoCount, returnedAlgoCount, perfResults);
}

// The Find*Ex calls would time every algorithm on the given buffers; with one
// algorithm and no kernels they answer as the _v7 heuristics do.
SIM_EXPORT cudnnStatus_t cudnnFindConvolutionForwardAlgorithmEx(
    cudnnHandle_t handle, const cudnnTensorDescriptor_t xDesc, const void* x, const cudnnFilterDescriptor_t wDesc,
    const void* w, const cudnnConvolutionDescriptor_t convDesc, const cudnnTensorDescriptor_t yDesc, void* y,
    const int requestedAlgoCount, int* returnedAlgoCount, cudnnConvolutionFwdAlgoPerf_t* perfResults,
    void* workSpace, size_t workSpaceSizeInBytes) {
  (void)x, (void)w, (void)y, (void)workSpace, (void)workSpaceSizeInBytes;
  return cudnnGetConvolutionForwardAlgorithm_v7(handle, xDesc, wDesc, convDesc, yDesc, requestedAlgoCount,
                                                returnedAlgoCount, perfResults);
}

SIM_EXPORT cudnnStatus_t cudnnFindConvolutionBackwardDataAlgorithmEx(
    cudnnHandle_t handle, const cudnnFilterDescriptor_t wDesc, const void* w, const cudnnTensorDescriptor_t dyDesc,
    const void* dy, const cudnnConvolutionDescriptor_t convDesc, const cudnnTensorDescriptor_t dxDesc, void* dx,
    const int requestedAlgoCount, int* returnedAlgoCount, cudnnConvolutionBwdDataAlgoPerf_t* perfResults,
    void* workSpace, size_t workSpaceSizeInBytes) {
  (void)w, (void)dy, (void)dx, (void)workSpace, (void)workSpaceSizeInBytes;
  return cudnnGetConvolutionBackwardDataAlgorithm_v7(handle, wDesc, dyDesc, convDesc, dxDesc, requestedAlgoCount,
                                                     returnedAlgoCount, perfResults);
}

SIM_EXPORT cudnnStatus_t cudnnFindConvolutionBackwardFilterAlgorithmEx(
    cudnnHandle_t handle, const cudnnTensorDescriptor_t xDesc, const void* x, const cudnnTensorDescriptor_t dyDesc,
    const void* y, const cudnnConvolutionDescriptor_t convDesc, const cudnnFilterDescriptor_t dwDesc, void* dw,
    const int requestedAlgoCount, int* returnedAlgoCount, cudnnConvolutionBwdFilterAlgoPerf_t* perfResults,
    void* workSpace, size_t workSpaceSizeInBytes) {
  (void)x, (void)y, (void)dw, (void)workSpace, (void)workSpaceSizeInBytes;
  return cudnnGetConvolutionBackwardFilterAlgorithm_v7(handle, xDesc, dyDesc, convDesc, dwDesc, requestedAlgoCount,
                                                       returnedAlgoCount, perfResults);
}

SIM_EXPORT cudnnStatus_t cudnnGetConvolutionForwardWorkspaceSize(cudnnHandle_t handle,
                                                                 const cudnnTensorDescriptor_t xDesc,
                                                                 const cudnnFilterDescriptor_t wDesc,
                                                                 const cudnnConvolutionDescriptor_t convDesc,
                                                                 const cudnnTensorDescriptor_t yDesc,
                                                                 cudnnConvolutionFwdAlgo_t algo, size_t* sizeInBytes) {
  cudnnStatus_t st = check_args(handle, xDesc, wDesc, convDesc, yDesc, "cudnnGetConvolutionForwardWorkspaceSize");
  return st != CUDNN_STATUS_SUCCESS ? st
                                    : sim::dnn::workspace(algo, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, sizeInBytes);
}

SIM_EXPORT cudnnStatus_t cudnnGetConvolutionBackwardDataWorkspaceSize(
    cudnnHandle_t handle, const cudnnFilterDescriptor_t wDesc, const cudnnTensorDescriptor_t dyDesc,
    const cudnnConvolutionDescriptor_t convDesc, const cudnnTensorDescriptor_t dxDesc,
    cudnnConvolutionBwdDataAlgo_t algo,
    size_t* sizeInBytes) {
  cudnnStatus_t st = check_args(handle, wDesc, dyDesc, convDesc, dxDesc,
                                "cudnnGetConvolutionBackwardDataWorkspaceSize");
  return st != CUDNN_STATUS_SUCCESS ? st : sim::dnn::workspace(algo, CUDNN_CONVOLUTION_BWD_DATA_ALGO_1, sizeInBytes);
}

SIM_EXPORT cudnnStatus_t cudnnGetConvolutionBackwardFilterWorkspaceSize(
    cudnnHandle_t handle, const cudnnTensorDescriptor_t xDesc, const cudnnTensorDescriptor_t dyDesc,
    const cudnnConvolutionDescriptor_t convDesc, const cudnnFilterDescriptor_t gradDesc,
    cudnnConvolutionBwdFilterAlgo_t algo, size_t* sizeInBytes) {
  cudnnStatus_t st = check_args(handle, xDesc, dyDesc, convDesc, gradDesc,
                                "cudnnGetConvolutionBackwardFilterWorkspaceSize");
  return st != CUDNN_STATUS_SUCCESS ? st : sim::dnn::workspace(algo, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1, sizeInBytes);
}

SIM_EXPORT cudnnStatus_t cudnnConvolutionForward(cudnnHandle_t handle, const void* alpha,
                                                 const cudnnTensorDescriptor_t xDesc, const void* x,
                                                 const cudnnFilterDescriptor_t wDesc, const void* w,
                                                 const cudnnConvolutionDescriptor_t convDesc,
                                                 cudnnConvolutionFwdAlgo_t algo, void* workSpace,
                                                 size_t workSpaceSizeInBytes, const void* beta,
                                                 const cudnnTensorDescriptor_t yDesc, void* y) {
  (void)alpha, (void)x, (void)w, (void)workSpace, (void)workSpaceSizeInBytes, (void)beta, (void)y;
  cudnnStatus_t st = check_args(handle, xDesc, wDesc, convDesc, yDesc, "cudnnConvolutionForward");
  return st != CUDNN_STATUS_SUCCESS ? st
                                    : sim::dnn::run(algo, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,
                                                    "cudnnConvolutionForward: algorithm not simulated");
}

SIM_EXPORT cudnnStatus_t cudnnConvolutionBiasActivationForward(
    cudnnHandle_t handle, const void* alpha1, const cudnnTensorDescriptor_t xDesc, const void* x,
    const cudnnFilterDescriptor_t wDesc, const void* w, const cudnnConvolutionDescriptor_t convDesc,
    cudnnConvolutionFwdAlgo_t algo, void* workSpace, size_t workSpaceSizeInBytes, const void* alpha2,
    const cudnnTensorDescriptor_t zDesc, const void* z, const cudnnTensorDescriptor_t biasDesc, const void* bias,
    const cudnnActivationDescriptor_t activationDesc, const cudnnTensorDescriptor_t yDesc, void* y) {
  (void)alpha1, (void)x, (void)w, (void)workSpace, (void)workSpaceSizeInBytes, (void)alpha2, (void)zDesc, (void)z,
      (void)biasDesc, (void)bias, (void)y;
  cudnnStatus_t st = check_args(handle, xDesc, wDesc, convDesc, yDesc, "cudnnConvolutionBiasActivationForward");
  if (st == CUDNN_STATUS_SUCCESS && activationDesc == nullptr)
    st = fail(CUDNN_STATUS_BAD_PARAM, "cudnnConvolutionBiasActivationForward: NULL activation descriptor");
  return st != CUDNN_STATUS_SUCCESS ? st
                                    : sim::dnn::run(algo, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,
                                                    "cudnnConvolutionBiasActivationForward: algorithm not simulated");
}

SIM_EXPORT cudnnStatus_t cudnnConvolutionBackwardData(cudnnHandle_t handle, const void* alpha,
                                                      const cudnnFilterDescriptor_t wDesc, const void* w,
                                                      const cudnnTensorDescriptor_t dyDesc, const void* dy,
                                                      const cudnnConvolutionDescriptor_t convDesc,
                                                      cudnnConvolutionBwdDataAlgo_t algo, void* workSpace,
                                                      size_t workSpaceSizeInBytes, const void* beta,
                                                      const cudnnTensorDescriptor_t dxDesc, void* dx) {
  (void)alpha, (void)w, (void)dy, (void)workSpace, (void)workSpaceSizeInBytes, (void)beta, (void)dx;
  cudnnStatus_t st = check_args(handle, wDesc, dyDesc, convDesc, dxDesc, "cudnnConvolutionBackwardData");
  return st != CUDNN_STATUS_SUCCESS ? st
                                    : sim::dnn::run(algo, CUDNN_CONVOLUTION_BWD_DATA_ALGO_1,
                                                    "cudnnConvolutionBackwardData: algorithm not simulated");
}

SIM_EXPORT cudnnStatus_t cudnnConvolutionBackwardFilter(cudnnHandle_t handle, const void* alpha,
                                                        const cudnnTensorDescriptor_t xDesc, const void* x,
                                                        const cudnnTensorDescriptor_t dyDesc, const void* dy,
                                                        const cudnnConvolutionDescriptor_t convDesc,
                                                        cudnnConvolutionBwdFilterAlgo_t algo, void* workSpace,
                                                        size_t workSpaceSizeInBytes, const void* beta,
                                                        const cudnnFilterDescriptor_t dwDesc, void* dw) {
  (void)alpha, (void)x, (void)dy, (void)workSpace, (void)workSpaceSizeInBytes, (void)beta, (void)dw;
  cudnnStatus_t st = check_args(handle, xDesc, dyDesc, convDesc, dwDesc, "cudnnConvolutionBackwardFilter");
  return st != CUDNN_STATUS_SUCCESS ? st
                                    : sim::dnn::run(algo, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1,
                                                    "cudnnConvolutionBackwardFilter: algorithm not simulated");
}
