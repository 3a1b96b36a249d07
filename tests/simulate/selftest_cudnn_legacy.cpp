// The legacy API: tensor descriptors round-trip; the RNN weight space has
// the size and the layout PyTorch checks (RNN.cpp get_parameters: within a
// pseudo-layer each matrix, then each bias, starts where the previous ends).
#include "selftest_cudnn.h"

namespace {

void test_tensor_descriptor() {
  cudnnTensorDescriptor_t t = nullptr;
  CHECK_EQ(cudnnCreateTensorDescriptor(&t), CUDNN_STATUS_SUCCESS);
  cudnnDataType_t type = CUDNN_DATA_DOUBLE;
  int nb = 0, dims[4] = {}, strides[4] = {};
  CHECK_EQ(cudnnGetTensorNdDescriptor(t, 4, &type, &nb, dims, strides), CUDNN_STATUS_BAD_PARAM);  // never set
  const int d[4] = {2, 3, 4, 5}, s[4] = {60, 20, 5, 1}, zero[4] = {2, 0, 4, 5};
  CHECK_EQ(cudnnSetTensorNdDescriptor(t, CUDNN_DATA_HALF, 4, zero, s), CUDNN_STATUS_BAD_PARAM);
  CHECK_EQ(cudnnSetTensorNdDescriptor(t, CUDNN_DATA_HALF, 9, d, s), CUDNN_STATUS_BAD_PARAM);
  CHECK_EQ(cudnnSetTensorNdDescriptor(t, CUDNN_DATA_HALF, 4, d, nullptr), CUDNN_STATUS_BAD_PARAM);
  CHECK_EQ(cudnnSetTensorNdDescriptor(t, CUDNN_DATA_HALF, 4, d, s), CUDNN_STATUS_SUCCESS);
  CHECK_EQ(cudnnGetTensorNdDescriptor(t, 4, &type, &nb, dims, strides), CUDNN_STATUS_SUCCESS);
  CHECK(type == CUDNN_DATA_HALF && nb == 4 && dims[3] == 5 && strides[0] == 60);
  CHECK_EQ(cudnnDestroyTensorDescriptor(t), CUDNN_STATUS_SUCCESS);
  CHECK_EQ(cudnnCreateTensorDescriptor(nullptr), CUDNN_STATUS_BAD_PARAM);
}

// An LSTM of input 32, hidden 64, `layers` layers, float, double bias.
cudnnRNNDescriptor_t lstm(int layers, int dir, int proj) {
  cudnnRNNDescriptor_t r = nullptr;
  CHECK_EQ(cudnnCreateRNNDescriptor(&r), CUDNN_STATUS_SUCCESS);
  const auto lstm_mode = static_cast<cudnnRNNMode_t>(2);
  const auto double_bias = static_cast<cudnnRNNBiasMode_t>(2);
  CHECK_EQ(cudnnSetRNNDescriptor_v8(r, static_cast<cudnnRNNAlgo_t>(0), lstm_mode, double_bias,
                                    static_cast<cudnnDirectionMode_t>(dir), static_cast<cudnnRNNInputMode_t>(0),
                                    CUDNN_DATA_FLOAT, CUDNN_DATA_FLOAT, static_cast<cudnnMathType_t>(0), 32, 64, proj,
                                    layers, nullptr, 0),
           CUDNN_STATUS_SUCCESS);
  return r;
}

void test_rnn_weights(cudnnHandle_t h) {
  cudnnRNNDescriptor_t r = lstm(2, 0, 0);
  size_t bytes = 0;
  CHECK_EQ(cudnnGetRNNWeightSpaceSize(h, r, &bytes), CUDNN_STATUS_SUCCESS);
  // PyTorch's nn.LSTM(32, 64, 2) parameters: 4*64*(32+64) + 2*4*64 + 4*64*(64+64) + 2*4*64.
  CHECK_EQ(bytes, (4 * 64 * (32 + 64) + 512 + 4 * 64 * 128 + 512) * 4);
  char* base = reinterpret_cast<char*>(0x100000000000ull);
  cudnnTensorDescriptor_t m = nullptr, b = nullptr;
  cudnnCreateTensorDescriptor(&m);
  cudnnCreateTensorDescriptor(&b);
  size_t expect = 0;  // bytes
  for (int layer = 0; layer < 2; ++layer) {
    for (int lin = 0; lin < 8; ++lin) {
      void *ma = nullptr, *ba = nullptr;
      CHECK_EQ(cudnnGetRNNWeightParams(h, r, layer, bytes, base, lin, m, &ma, b, &ba), CUDNN_STATUS_SUCCESS);
      CHECK_EQ(static_cast<char*>(ma) - base, expect);
      cudnnDataType_t t;
      int nb = 0, dims[3] = {}, st[3] = {};
      CHECK_EQ(cudnnGetTensorNdDescriptor(m, 3, &t, &nb, dims, st), CUDNN_STATUS_SUCCESS);
      CHECK(nb == 3 && dims[0] == 1 && dims[1] == 64);
      CHECK_EQ(dims[2], lin < 4 ? (layer == 0 ? 32 : 64) : 64);
      expect += static_cast<size_t>(dims[1]) * dims[2] * 4;
    }
    for (int lin = 0; lin < 8; ++lin) {  // the biases follow the matrices
      void *ma = nullptr, *ba = nullptr;
      CHECK_EQ(cudnnGetRNNWeightParams(h, r, layer, bytes, base, lin, m, &ma, b, &ba), CUDNN_STATUS_SUCCESS);
      CHECK_EQ(static_cast<char*>(ba) - base, expect);
      expect += 64 * 4;
    }
  }
  CHECK_EQ(expect, bytes);
  void *ma = nullptr, *ba = nullptr;
  CHECK_EQ(cudnnGetRNNWeightParams(h, r, 2, bytes, base, 0, m, &ma, b, &ba), CUDNN_STATUS_BAD_PARAM);  // no layer 2
  CHECK_EQ(cudnnGetRNNWeightParams(h, r, 0, bytes, base, 8, m, &ma, b, &ba), CUDNN_STATUS_BAD_PARAM);  // no projection
  CHECK_EQ(cudnnGetRNNWeightParams(h, r, 0, bytes - 4, base, 0, m, &ma, b, &ba), CUDNN_STATUS_BAD_PARAM);
  cudnnDestroyRNNDescriptor(r);
  // A projection (linLayerID 8) of 16 x 64 after the biases.
  r = lstm(1, 0, 16);
  CHECK_EQ(cudnnGetRNNWeightSpaceSize(h, r, &bytes), CUDNN_STATUS_SUCCESS);
  CHECK_EQ(bytes, (4 * 64 * (32 + 16) + 512 + 16 * 64) * 4);
  CHECK_EQ(cudnnGetRNNWeightParams(h, r, 0, bytes, base, 8, m, &ma, b, &ba), CUDNN_STATUS_SUCCESS);
  CHECK_EQ(static_cast<char*>(ma) - base, (4 * 64 * (32 + 16) + 512) * 4);
  CHECK(ba == nullptr);
  cudnnDestroyRNNDescriptor(r);
  cudnnDestroyTensorDescriptor(m);
  cudnnDestroyTensorDescriptor(b);
}

}  // namespace

int test_legacy(cudnnHandle_t h) {
  test_tensor_descriptor();
  test_rnn_weights(h);
  return g_selftest_failures;
}
