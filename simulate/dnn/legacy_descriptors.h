// The legacy API's descriptors (cudnnCreateTensorDescriptor ...): plain
// records of what was set, which the legacy compute calls read.
#pragma once

#include "dnn/types.h"

namespace sim::dnn {

constexpr int kDimMax = 8;  // CUDNN_DIM_MAX

// Bytes of a packed tensor of these dims and data type (0: unknown type).
size_t packed_bytes(int data_type, int nb_dims, const int* dims);

}  // namespace sim::dnn

struct cudnnTensorStruct {
  int data_type = -1;  // -1: never set
  int nb_dims = 0;
  int dims[sim::dnn::kDimMax] = {};
  int strides[sim::dnn::kDimMax] = {};
};

struct cudnnFilterStruct {
  int data_type = -1;
  int format = 0;
  int nb_dims = 0;
  int dims[sim::dnn::kDimMax] = {};
};

struct cudnnConvolutionStruct {
  int spatial = 0;  // arrayLength; 0: never set
  int pads[sim::dnn::kDimMax] = {};
  int strides[sim::dnn::kDimMax] = {};
  int dilations[sim::dnn::kDimMax] = {};
  int mode = 0;
  int compute_type = 0;
  int math_type = 0;  // CUDNN_DEFAULT_MATH
  int groups = 1;
};

struct cudnnActivationStruct {
  int mode = 0, nan_opt = 0;
  double coef = 0;
};

struct cudnnPoolingStruct {
  int mode = 0, nan_opt = 0;
  int window[2] = {}, padding[2] = {}, stride[2] = {};
};

struct cudnnDropoutStruct {
  float dropout = 0;
  void* states = nullptr;
  size_t state_bytes = 0;
  unsigned long long seed = 0;
};

struct cudnnCTCLossStruct {
  int comp_type = 0, norm_mode = 0, grad_mode = 0, max_label_length = 0;
};

struct cudnnSpatialTransformerStruct {
  int sampler = 0, data_type = 0, nb_dims = 0;
  int dims[sim::dnn::kDimMax] = {};
};
