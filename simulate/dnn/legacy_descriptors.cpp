// Create, set, get and destroy of the legacy descriptors PyTorch uses
// (aten/src/ATen/cudnn/Descriptors.cpp): tensors, filters, convolutions,
// activations, pooling, dropout, CTC loss, spatial transformers. The sets
// check what cuDNN documents as CUDNN_STATUS_BAD_PARAM: a NULL descriptor or
// array, a dimension count outside 1..CUDNN_DIM_MAX, a dimension that is not
// positive.
#include "dnn/legacy_descriptors.h"

#include <new>

#include "dnn/api.h"
#include "dnn/graph_store.h"

namespace sim::dnn {
namespace {

template <typename T>
cudnnStatus_t create(T** out, const char* what) {
  if (out == nullptr) return fail(CUDNN_STATUS_BAD_PARAM, what);
  *out = new (std::nothrow) T();
  return *out != nullptr ? CUDNN_STATUS_SUCCESS : fail(CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED, what);
}

template <typename T>
cudnnStatus_t destroy(T* d) {
  delete d;  // NULL: nothing, as cuDNN
  return CUDNN_STATUS_SUCCESS;
}

bool good_dims(int nb, const int* dims) {
  if (nb < 1 || nb > kDimMax || dims == nullptr) return false;
  for (int i = 0; i < nb; ++i)
    if (dims[i] <= 0) return false;
  return true;
}

}  // namespace

size_t packed_bytes(int data_type, int nb_dims, const int* dims) {
  size_t n = graph::data_type_size(data_type);
  for (int i = 0; i < nb_dims; ++i) n *= static_cast<size_t>(dims[i]);
  return n;
}

}  // namespace sim::dnn

using sim::dnn::fail;

#define SIM_LEGACY_LIFETIME(Name, Type)                                                    \
  SIM_EXPORT cudnnStatus_t cudnnCreate##Name##Descriptor(Type* d) {                        \
    return sim::dnn::create(d, "cudnnCreate" #Name "Descriptor: NULL output");             \
  }                                                                                        \
  SIM_EXPORT cudnnStatus_t cudnnDestroy##Name##Descriptor(Type d) { return sim::dnn::destroy(d); }
SIM_LEGACY_LIFETIME(Tensor, cudnnTensorDescriptor_t)
SIM_LEGACY_LIFETIME(Filter, cudnnFilterDescriptor_t)
SIM_LEGACY_LIFETIME(Convolution, cudnnConvolutionDescriptor_t)
SIM_LEGACY_LIFETIME(Activation, cudnnActivationDescriptor_t)
SIM_LEGACY_LIFETIME(Pooling, cudnnPoolingDescriptor_t)
SIM_LEGACY_LIFETIME(Dropout, cudnnDropoutDescriptor_t)
SIM_LEGACY_LIFETIME(CTCLoss, cudnnCTCLossDescriptor_t)
SIM_LEGACY_LIFETIME(SpatialTransformer, cudnnSpatialTransformerDescriptor_t)
#undef SIM_LEGACY_LIFETIME

SIM_EXPORT cudnnStatus_t cudnnSetTensorNdDescriptor(cudnnTensorDescriptor_t tensorDesc, cudnnDataType_t dataType,
                                                    int nbDims, const int dimA[], const int strideA[]) {
  if (tensorDesc == nullptr || strideA == nullptr || !sim::dnn::good_dims(nbDims, dimA) ||
      sim::dnn::graph::data_type_size(dataType) == 0)
    return fail(CUDNN_STATUS_BAD_PARAM, "cudnnSetTensorNdDescriptor: NULL argument, bad dims or data type");
  for (int i = 0; i < nbDims; ++i)
    if (strideA[i] < 0) return fail(CUDNN_STATUS_BAD_PARAM, "cudnnSetTensorNdDescriptor: a negative stride");
  tensorDesc->data_type = dataType;
  tensorDesc->nb_dims = nbDims;
  for (int i = 0; i < nbDims; ++i) {
    tensorDesc->dims[i] = dimA[i];
    tensorDesc->strides[i] = strideA[i];
  }
  return CUDNN_STATUS_SUCCESS;
}

SIM_EXPORT cudnnStatus_t cudnnGetTensorNdDescriptor(const cudnnTensorDescriptor_t tensorDesc, int nbDimsRequested,
                                                    cudnnDataType_t* dataType, int* nbDims, int dimA[],
                                                    int strideA[]) {
  if (tensorDesc == nullptr || tensorDesc->data_type < 0 || dataType == nullptr || nbDims == nullptr ||
      nbDimsRequested < 0 || (nbDimsRequested > 0 && (dimA == nullptr || strideA == nullptr)))
    return fail(CUDNN_STATUS_BAD_PARAM, "cudnnGetTensorNdDescriptor: NULL argument or a descriptor never set");
  *dataType = static_cast<cudnnDataType_t>(tensorDesc->data_type);
  *nbDims = tensorDesc->nb_dims;
  for (int i = 0; i < nbDimsRequested && i < tensorDesc->nb_dims; ++i) {
    dimA[i] = tensorDesc->dims[i];
    strideA[i] = tensorDesc->strides[i];
  }
  return CUDNN_STATUS_SUCCESS;
}

SIM_EXPORT cudnnStatus_t cudnnSetFilterNdDescriptor(cudnnFilterDescriptor_t filterDesc, cudnnDataType_t dataType,
                                                    cudnnTensorFormat_t format, int nbDims, const int filterDimA[]) {
  if (filterDesc == nullptr || !sim::dnn::good_dims(nbDims, filterDimA) ||
      sim::dnn::graph::data_type_size(dataType) == 0 ||
      (format != CUDNN_TENSOR_NCHW && format != CUDNN_TENSOR_NHWC && static_cast<int>(format) != 2))
    return fail(CUDNN_STATUS_BAD_PARAM, "cudnnSetFilterNdDescriptor: NULL argument, bad dims, data type or format");
  filterDesc->data_type = dataType;
  filterDesc->format = format;
  filterDesc->nb_dims = nbDims;
  for (int i = 0; i < nbDims; ++i) filterDesc->dims[i] = filterDimA[i];
  return CUDNN_STATUS_SUCCESS;
}

SIM_EXPORT cudnnStatus_t cudnnGetFilterNdDescriptor(const cudnnFilterDescriptor_t filterDesc, int nbDimsRequested,
                                                    cudnnDataType_t* dataType, cudnnTensorFormat_t* format,
                                                    int* nbDims, int filterDimA[]) {
  if (filterDesc == nullptr || filterDesc->data_type < 0 || dataType == nullptr || format == nullptr ||
      nbDims == nullptr || nbDimsRequested < 0 || (nbDimsRequested > 0 && filterDimA == nullptr))
    return fail(CUDNN_STATUS_BAD_PARAM, "cudnnGetFilterNdDescriptor: NULL argument or a descriptor never set");
  *dataType = static_cast<cudnnDataType_t>(filterDesc->data_type);
  *format = static_cast<cudnnTensorFormat_t>(filterDesc->format);
  *nbDims = filterDesc->nb_dims;
  for (int i = 0; i < nbDimsRequested && i < filterDesc->nb_dims; ++i) filterDimA[i] = filterDesc->dims[i];
  return CUDNN_STATUS_SUCCESS;
}

SIM_EXPORT cudnnStatus_t cudnnSetConvolutionNdDescriptor(cudnnConvolutionDescriptor_t convDesc, int arrayLength,
                                                         const int padA[], const int filterStrideA[],
                                                         const int dilationA[], cudnnConvolutionMode_t mode,
                                                         cudnnDataType_t computeType) {
  if (convDesc == nullptr || arrayLength < 1 || arrayLength > sim::dnn::kDimMax - 2 || padA == nullptr ||
      !sim::dnn::good_dims(arrayLength, filterStrideA) || !sim::dnn::good_dims(arrayLength, dilationA) ||
      (mode != 0 && mode != 1))
    return fail(CUDNN_STATUS_BAD_PARAM, "cudnnSetConvolutionNdDescriptor: NULL argument or a bad value");
  for (int i = 0; i < arrayLength; ++i) {
    if (padA[i] < 0) return fail(CUDNN_STATUS_BAD_PARAM, "cudnnSetConvolutionNdDescriptor: a negative padding");
    convDesc->pads[i] = padA[i];
    convDesc->strides[i] = filterStrideA[i];
    convDesc->dilations[i] = dilationA[i];
  }
  convDesc->spatial = arrayLength;
  convDesc->mode = mode;
  convDesc->compute_type = computeType;
  return CUDNN_STATUS_SUCCESS;
}

SIM_EXPORT cudnnStatus_t cudnnSetConvolutionGroupCount(cudnnConvolutionDescriptor_t convDesc, int groupCount) {
  if (convDesc == nullptr || groupCount < 1)
    return fail(CUDNN_STATUS_BAD_PARAM, "cudnnSetConvolutionGroupCount: NULL descriptor or a count below 1");
  convDesc->groups = groupCount;
  return CUDNN_STATUS_SUCCESS;
}

SIM_EXPORT cudnnStatus_t cudnnSetConvolutionMathType(cudnnConvolutionDescriptor_t convDesc, cudnnMathType_t mathType) {
  if (convDesc == nullptr || mathType < 0 || mathType > 3)
    return fail(CUDNN_STATUS_BAD_PARAM, "cudnnSetConvolutionMathType: NULL descriptor or unknown math type");
  convDesc->math_type = mathType;
  return CUDNN_STATUS_SUCCESS;
}

SIM_EXPORT cudnnStatus_t cudnnSetActivationDescriptor(cudnnActivationDescriptor_t activationDesc,
                                                      cudnnActivationMode_t mode, cudnnNanPropagation_t reluNanOpt,
                                                      double coef) {
  if (activationDesc == nullptr || mode < 0 || mode > 6 || reluNanOpt < 0 || reluNanOpt > 1)
    return fail(CUDNN_STATUS_BAD_PARAM, "cudnnSetActivationDescriptor: NULL descriptor or unknown mode");
  *activationDesc = cudnnActivationStruct{mode, reluNanOpt, coef};
  return CUDNN_STATUS_SUCCESS;
}

SIM_EXPORT cudnnStatus_t cudnnSetPooling2dDescriptor(cudnnPoolingDescriptor_t poolingDesc, cudnnPoolingMode_t mode,
                                                     cudnnNanPropagation_t maxpoolingNanOpt, int windowHeight,
                                                     int windowWidth, int verticalPadding, int horizontalPadding,
                                                     int verticalStride, int horizontalStride) {
  if (poolingDesc == nullptr || mode < 0 || mode > 3 || windowHeight <= 0 || windowWidth <= 0 || verticalStride <= 0 ||
      horizontalStride <= 0 || verticalPadding < 0 || horizontalPadding < 0)
    return fail(CUDNN_STATUS_BAD_PARAM, "cudnnSetPooling2dDescriptor: NULL descriptor or a bad value");
  *poolingDesc = cudnnPoolingStruct{mode, maxpoolingNanOpt, {windowHeight, windowWidth},
                                    {verticalPadding, horizontalPadding}, {verticalStride, horizontalStride}};
  return CUDNN_STATUS_SUCCESS;
}

SIM_EXPORT cudnnStatus_t cudnnSetCTCLossDescriptorEx(cudnnCTCLossDescriptor_t ctcLossDesc, cudnnDataType_t compType,
                                                     cudnnLossNormalizationMode_t normMode,
                                                     cudnnNanPropagation_t gradMode) {
  if (ctcLossDesc == nullptr) return fail(CUDNN_STATUS_BAD_PARAM, "cudnnSetCTCLossDescriptorEx: NULL descriptor");
  *ctcLossDesc = cudnnCTCLossStruct{compType, normMode, gradMode, 0};
  return CUDNN_STATUS_SUCCESS;
}

SIM_EXPORT cudnnStatus_t cudnnSetCTCLossDescriptor_v9(cudnnCTCLossDescriptor_t ctcLossDesc, cudnnDataType_t compType,
                                                      cudnnLossNormalizationMode_t normMode,
                                                      cudnnCTCGradMode_t ctcGradMode, int maxLabelLength) {
  if (ctcLossDesc == nullptr || maxLabelLength < 0)
    return fail(CUDNN_STATUS_BAD_PARAM, "cudnnSetCTCLossDescriptor_v9: NULL descriptor or a negative label length");
  *ctcLossDesc = cudnnCTCLossStruct{compType, normMode, ctcGradMode, maxLabelLength};
  return CUDNN_STATUS_SUCCESS;
}

SIM_EXPORT cudnnStatus_t cudnnSetSpatialTransformerNdDescriptor(cudnnSpatialTransformerDescriptor_t stDesc,
                                                                cudnnSamplerType_t samplerType,
                                                                cudnnDataType_t dataType, const int nbDims,
                                                                const int dimA[]) {
  if (stDesc == nullptr || nbDims != 4 || !sim::dnn::good_dims(nbDims, dimA))
    return fail(CUDNN_STATUS_BAD_PARAM, "cudnnSetSpatialTransformerNdDescriptor: NULL argument or not 4 dims");
  stDesc->sampler = samplerType;
  stDesc->data_type = dataType;
  stDesc->nb_dims = nbDims;
  for (int i = 0; i < nbDims; ++i) stDesc->dims[i] = dimA[i];
  return CUDNN_STATUS_SUCCESS;
}
