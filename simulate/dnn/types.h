// The types of cuDNN's API, as NVIDIA's headers declare them.
//
// NVIDIA's cudnn*.h are not in the CUDA toolkit headers this project builds
// against (only in the nvidia-cudnn-cu13 wheel), so the types the simulation
// needs are declared here with the same names, values (enums.h) and layouts.
// The check simulate.cudnn_headers compiles every source of simulate/dnn/
// with SIM_CUDNN_REAL_HEADERS against the wheel's headers instead: a
// signature or type that differs from NVIDIA's is a compile error there.
#pragma once

#include <driver_types.h>
#include <library_types.h>

#include <cstddef>
#include <cstdint>

#if defined(SIM_CUDNN_REAL_HEADERS)
#include <cudnn.h>
#else
#include "dnn/enums.h"

#define SIM_ENUMERATOR(name, value) name = value,

extern "C" {
typedef enum { SIM_CUDNN_STATUS(SIM_ENUMERATOR) } cudnnStatus_t;
typedef enum { SIM_CUDNN_DESCRIPTOR_TYPE(SIM_ENUMERATOR) } cudnnBackendDescriptorType_t;
typedef enum { SIM_CUDNN_ATTRIBUTE_TYPE(SIM_ENUMERATOR) } cudnnBackendAttributeType_t;
typedef enum { SIM_CUDNN_ATTRIBUTE_NAME(SIM_ENUMERATOR) } cudnnBackendAttributeName_t;
typedef enum { SIM_CUDNN_DATA_TYPE(SIM_ENUMERATOR) } cudnnDataType_t;
typedef enum { SIM_CUDNN_NUMERICAL_NOTE(SIM_ENUMERATOR) } cudnnBackendNumericalNote_t;
typedef enum { SIM_CUDNN_HEUR_MODE(SIM_ENUMERATOR) } cudnnBackendHeurMode_t;

struct cudnnContext;
typedef struct cudnnContext* cudnnHandle_t;
typedef void* cudnnBackendDescriptor_t;

typedef struct cudnnTensorStruct* cudnnTensorDescriptor_t;
typedef struct cudnnFilterStruct* cudnnFilterDescriptor_t;
typedef struct cudnnConvolutionStruct* cudnnConvolutionDescriptor_t;
typedef struct cudnnActivationStruct* cudnnActivationDescriptor_t;
typedef struct cudnnPoolingStruct* cudnnPoolingDescriptor_t;
typedef struct cudnnDropoutStruct* cudnnDropoutDescriptor_t;
typedef struct cudnnCTCLossStruct* cudnnCTCLossDescriptor_t;
typedef struct cudnnRNNStruct* cudnnRNNDescriptor_t;
typedef struct cudnnRNNDataStruct* cudnnRNNDataDescriptor_t;
typedef struct cudnnSpatialTransformerStruct* cudnnSpatialTransformerDescriptor_t;
typedef struct cudnnRuntimeTag_t cudnnRuntimeTag_t;

// The legacy API's enumerations: int-sized, with the values of enums.h.
enum SimCudnnLegacy { SIM_CUDNN_LEGACY(SIM_ENUMERATOR) };
typedef int cudnnTensorFormat_t;
typedef int cudnnMathType_t;
typedef int cudnnDeterminism_t;
typedef int cudnnConvolutionMode_t;
typedef int cudnnConvolutionFwdAlgo_t;
typedef int cudnnConvolutionBwdDataAlgo_t;
typedef int cudnnConvolutionBwdFilterAlgo_t;
typedef int cudnnBatchNormMode_t;
typedef int cudnnBatchNormOps_t;
typedef int cudnnActivationMode_t;
typedef int cudnnNanPropagation_t;
typedef int cudnnPoolingMode_t;
typedef int cudnnCTCLossAlgo_t;
typedef int cudnnLossNormalizationMode_t;
typedef int cudnnCTCGradMode_t;
typedef int cudnnRNNAlgo_t;
typedef int cudnnRNNMode_t;
typedef int cudnnRNNBiasMode_t;
typedef int cudnnDirectionMode_t;
typedef int cudnnRNNInputMode_t;
typedef int cudnnForwardMode_t;
typedef int cudnnRNNDataLayout_t;
typedef int cudnnWgradMode_t;
typedef int cudnnSamplerType_t;
typedef int cudnnErrQueryMode_t;

#define SIM_CUDNN_ALGO_PERF(name, algo_type) \
  typedef struct {                           \
    algo_type algo;                          \
    cudnnStatus_t status;                    \
    float time;                              \
    size_t memory;                           \
    cudnnDeterminism_t determinism;          \
    cudnnMathType_t mathType;                \
    int reserved[3];                         \
  } name;
SIM_CUDNN_ALGO_PERF(cudnnConvolutionFwdAlgoPerf_t, cudnnConvolutionFwdAlgo_t)
SIM_CUDNN_ALGO_PERF(cudnnConvolutionBwdDataAlgoPerf_t, cudnnConvolutionBwdDataAlgo_t)
SIM_CUDNN_ALGO_PERF(cudnnConvolutionBwdFilterAlgoPerf_t, cudnnConvolutionBwdFilterAlgo_t)
}  // extern "C"
#endif
