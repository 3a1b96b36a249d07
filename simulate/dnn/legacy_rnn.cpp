// The RNN API PyTorch's cuDNN RNNs use (aten/src/ATen/native/cudnn/RNN.cpp,
// the v8 API): descriptors, the weight space and where each matrix and bias
// lives in it, the temporary space sizes, and the computations (which check
// their buffers' sizes and succeed without running).
//
// The weight space is laid out as cuDNN documents cudnnGetRNNWeightParams
// and as PyTorch checks it (get_parameters asserts each matrix, then each
// bias, starts where the one before it ends): per pseudo-layer (layer, or
// 2 x layer + direction when bidirectional), the input matrices W of every
// gate, then the recurrent ones R, then their biases in the same order, then
// the LSTM projection. Gates: 1 (ReLU/tanh RNN), 4 (LSTM), 3 (GRU). W is
// hidden x input on layer 0 and hidden x (output x directions) above; R is
// hidden x output; the projection output x hidden; output is projSize.
//
// Modelled figures (docs/simulate.md): the workspace holds every step's
// input-GEMM results, T x N x directions x gates x hidden elements; training
// keeps in the reserve what the backward needs: every layer's and step's gate
// activations and output (plus the LSTM cell), layers x directions x T x N x
// (gates x hidden + output [+ hidden]) elements.
#include <new>

#include "dnn/api.h"
#include "dnn/graph_store.h"
#include "dnn/handle.h"
#include "dnn/legacy_descriptors.h"

struct cudnnRNNStruct {
  bool set = false;
  int cell = 0, bias = 0, dir = 0, input_mode = 0, data_type = 0;
  int input = 0, hidden = 0, proj = 0, layers = 0;
};

struct cudnnRNNDataStruct {
  bool set = false;
  int data_type = 0, layout = 0, max_seq = 0, batch = 0, vector = 0;
};

namespace sim::dnn {
namespace {

constexpr int kLstm = 2, kGru = 3;
constexpr int kNoBias = 0, kInputBias = 1, kDoubleBias = 2, kRecurrentBias = 3;

int gates(const cudnnRNNStruct& r) { return r.cell == kLstm ? 4 : r.cell == kGru ? 3 : 1; }
int dirs(const cudnnRNNStruct& r) { return r.dir == 1 ? 2 : 1; }
int output(const cudnnRNNStruct& r) { return r.proj > 0 ? r.proj : r.hidden; }
bool has_projection(const cudnnRNNStruct& r) { return r.cell == kLstm && r.proj > 0 && r.proj < r.hidden; }
size_t elem(const cudnnRNNStruct& r) { return graph::data_type_size(r.data_type); }

struct Piece {
  size_t offset = 0;  // elements from the start of the weight space
  int rows = 0, cols = 0;
  bool present = false;
};

// Matrices and biases of one pseudo-layer, in weight-space order: W[g], R[g],
// bW[g], bR[g], projection.
std::vector<Piece> pieces(const cudnnRNNStruct& r, int pseudo, size_t start) {
  const int g = gates(r), layer = pseudo / dirs(r);
  const int w_cols = layer == 0 ? r.input : output(r) * dirs(r);
  const bool skip_w = layer == 0 && r.input_mode == 1;
  const bool bw = r.bias == kDoubleBias || r.bias == kInputBias, br = r.bias == kDoubleBias || r.bias == kRecurrentBias;
  std::vector<Piece> out;
  size_t at = start;
  auto add = [&](bool present, int rows, int cols) {
    out.push_back(Piece{at, rows, cols, present});
    if (present) at += static_cast<size_t>(rows) * static_cast<size_t>(cols);
  };
  for (int i = 0; i < g; ++i) add(!skip_w, r.hidden, w_cols);
  for (int i = 0; i < g; ++i) add(true, r.hidden, output(r));
  for (int i = 0; i < g; ++i) add(bw, r.hidden, 1);
  for (int i = 0; i < g; ++i) add(br, r.hidden, 1);
  add(has_projection(r), output(r), r.hidden);
  return out;
}

size_t pseudo_elements(const cudnnRNNStruct& r, int pseudo) {
  size_t n = 0;
  for (const Piece& p : pieces(r, pseudo, 0))
    if (p.present) n += static_cast<size_t>(p.rows) * static_cast<size_t>(p.cols);
  return n;
}

size_t weight_bytes(const cudnnRNNStruct& r) {
  size_t n = 0;
  for (int p = 0; p < r.layers * dirs(r); ++p) n += pseudo_elements(r, p);
  return n * elem(r);
}

void describe(cudnnTensorDescriptor_t d, const cudnnRNNStruct& r, const Piece& p) {
  if (d == nullptr) return;
  d->data_type = r.data_type;
  d->nb_dims = 3;
  const int rows = p.present ? p.rows : 0, cols = p.present ? p.cols : 0;
  d->dims[0] = p.present ? 1 : 0, d->dims[1] = rows, d->dims[2] = cols;
  d->strides[0] = rows * cols, d->strides[1] = cols, d->strides[2] = 1;
}

size_t temp_elements(const cudnnRNNStruct& r, const cudnnRNNDataStruct& x, bool training, size_t* reserve) {
  const size_t tn = static_cast<size_t>(x.max_seq) * static_cast<size_t>(x.batch);
  const size_t per_step = static_cast<size_t>(gates(r)) * r.hidden + output(r) + (r.cell == kLstm ? r.hidden : 0);
  *reserve = training ? static_cast<size_t>(r.layers) * dirs(r) * tn * per_step : 0;
  return tn * dirs(r) * gates(r) * static_cast<size_t>(r.hidden);
}

bool ready(cudnnHandle_t h, cudnnRNNDescriptor_t r) { return live_handle(h) && r != nullptr && r->set; }

}  // namespace
}  // namespace sim::dnn

using sim::dnn::fail;

SIM_EXPORT cudnnStatus_t cudnnCreateRNNDescriptor(cudnnRNNDescriptor_t* rnnDesc) {
  if (rnnDesc == nullptr) return fail(CUDNN_STATUS_BAD_PARAM, "cudnnCreateRNNDescriptor: NULL output");
  *rnnDesc = new (std::nothrow) cudnnRNNStruct();
  return *rnnDesc != nullptr ? CUDNN_STATUS_SUCCESS
                              : fail(CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED, "cudnnCreateRNNDescriptor");
}

SIM_EXPORT cudnnStatus_t cudnnDestroyRNNDescriptor(cudnnRNNDescriptor_t rnnDesc) {
  delete rnnDesc;
  return CUDNN_STATUS_SUCCESS;
}

SIM_EXPORT cudnnStatus_t cudnnCreateRNNDataDescriptor(cudnnRNNDataDescriptor_t* rnnDataDesc) {
  if (rnnDataDesc == nullptr) return fail(CUDNN_STATUS_BAD_PARAM, "cudnnCreateRNNDataDescriptor: NULL output");
  *rnnDataDesc = new (std::nothrow) cudnnRNNDataStruct();
  return *rnnDataDesc != nullptr ? CUDNN_STATUS_SUCCESS
                                 : fail(CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED,
                                        "cudnnCreateRNNDataDescriptor");
}

SIM_EXPORT cudnnStatus_t cudnnDestroyRNNDataDescriptor(cudnnRNNDataDescriptor_t rnnDataDesc) {
  delete rnnDataDesc;
  return CUDNN_STATUS_SUCCESS;
}

SIM_EXPORT cudnnStatus_t cudnnSetRNNDescriptor_v8(cudnnRNNDescriptor_t rnnDesc, cudnnRNNAlgo_t algo,
                                                  cudnnRNNMode_t cellMode, cudnnRNNBiasMode_t biasMode,
                                                  cudnnDirectionMode_t dirMode, cudnnRNNInputMode_t inputMode,
                                                  cudnnDataType_t dataType, cudnnDataType_t mathPrec,
                                                  cudnnMathType_t mathType, int32_t inputSize, int32_t hiddenSize,
                                                  int32_t projSize, int32_t numLayers,
                                                  cudnnDropoutDescriptor_t dropoutDesc, uint32_t auxFlags) {
  (void)algo, (void)mathPrec, (void)mathType, (void)dropoutDesc, (void)auxFlags;
  if (rnnDesc == nullptr || cellMode < 0 || cellMode > 3 || biasMode < 0 || biasMode > 3 || dirMode < 0 ||
      dirMode > 1 || inputMode < 0 || inputMode > 1 || sim::dnn::graph::data_type_size(dataType) == 0 ||
      inputSize <= 0 || hiddenSize <= 0 || numLayers <= 0 || projSize < 0 || projSize > hiddenSize)
    return fail(CUDNN_STATUS_BAD_PARAM, "cudnnSetRNNDescriptor_v8: NULL descriptor or a bad value");
  *rnnDesc = cudnnRNNStruct{true, cellMode, biasMode, dirMode, inputMode, dataType, inputSize, hiddenSize,
                            projSize, numLayers};
  return CUDNN_STATUS_SUCCESS;
}

SIM_EXPORT cudnnStatus_t cudnnSetRNNDataDescriptor(cudnnRNNDataDescriptor_t rnnDataDesc, cudnnDataType_t dataType,
                                                   cudnnRNNDataLayout_t layout, int maxSeqLength, int batchSize,
                                                   int vectorSize, const int seqLengthArray[], void* paddingFill) {
  (void)paddingFill;
  if (rnnDataDesc == nullptr || seqLengthArray == nullptr || maxSeqLength <= 0 || batchSize <= 0 || vectorSize <= 0 ||
      layout < 0 || layout > 2)
    return fail(CUDNN_STATUS_BAD_PARAM, "cudnnSetRNNDataDescriptor: NULL argument or a bad value");
  for (int i = 0; i < batchSize; ++i)
    if (seqLengthArray[i] < 0 || seqLengthArray[i] > maxSeqLength)
      return fail(CUDNN_STATUS_BAD_PARAM, "cudnnSetRNNDataDescriptor: a sequence length outside 0..maxSeqLength");
  *rnnDataDesc = cudnnRNNDataStruct{true, dataType, layout, maxSeqLength, batchSize, vectorSize};
  return CUDNN_STATUS_SUCCESS;
}

SIM_EXPORT cudnnStatus_t cudnnGetRNNWeightSpaceSize(cudnnHandle_t handle, cudnnRNNDescriptor_t rnnDesc,
                                                    size_t* weightSpaceSize) {
  if (!sim::dnn::ready(handle, rnnDesc) || weightSpaceSize == nullptr)
    return fail(CUDNN_STATUS_BAD_PARAM, "cudnnGetRNNWeightSpaceSize: bad handle or descriptor, or NULL size");
  *weightSpaceSize = sim::dnn::weight_bytes(*rnnDesc);
  return CUDNN_STATUS_SUCCESS;
}

// linLayerID: 0..gates-1 the input matrices, gates..2 gates-1 the recurrent
// ones (and their biases), 2 gates (8 for an LSTM) the projection. An absent
// piece is a NULL address and a descriptor of zero dimensions.
SIM_EXPORT cudnnStatus_t cudnnGetRNNWeightParams(cudnnHandle_t handle, cudnnRNNDescriptor_t rnnDesc,
                                                 int32_t pseudoLayer, size_t weightSpaceSize, const void* weightSpace,
                                                 int32_t linLayerID, cudnnTensorDescriptor_t mDesc, void** mAddr,
                                                 cudnnTensorDescriptor_t bDesc, void** bAddr) {
  using namespace sim::dnn;
  if (!ready(handle, rnnDesc) || pseudoLayer < 0 || pseudoLayer >= rnnDesc->layers * dirs(*rnnDesc) ||
      linLayerID < 0 || linLayerID > 2 * gates(*rnnDesc) || weightSpaceSize < weight_bytes(*rnnDesc) ||
      (linLayerID == 2 * gates(*rnnDesc) && !has_projection(*rnnDesc)))
    return fail(CUDNN_STATUS_BAD_PARAM, "cudnnGetRNNWeightParams: bad handle, descriptor, layer, id or size");
  size_t start = 0;
  for (int p = 0; p < pseudoLayer; ++p) start += pseudo_elements(*rnnDesc, p);
  const std::vector<Piece> ps = pieces(*rnnDesc, pseudoLayer, start);
  const int g2 = 2 * gates(*rnnDesc);
  const Piece m = linLayerID == g2 ? ps[static_cast<size_t>(2 * g2)] : ps[static_cast<size_t>(linLayerID)];
  const Piece b = linLayerID == g2 ? Piece{} : ps[static_cast<size_t>(g2 + linLayerID)];
  auto address = [&](const Piece& p) -> void* {
    return p.present && weightSpace != nullptr
               ? const_cast<char*>(static_cast<const char*>(weightSpace)) + p.offset * elem(*rnnDesc)
               : nullptr;
  };
  describe(mDesc, *rnnDesc, m);
  describe(bDesc, *rnnDesc, b);
  if (mAddr != nullptr) *mAddr = address(m);
  if (bAddr != nullptr) *bAddr = address(b);
  return CUDNN_STATUS_SUCCESS;
}

SIM_EXPORT cudnnStatus_t cudnnGetRNNTempSpaceSizes(cudnnHandle_t handle, cudnnRNNDescriptor_t rnnDesc,
                                                   cudnnForwardMode_t fwdMode, cudnnRNNDataDescriptor_t xDesc,
                                                   size_t* workSpaceSize, size_t* reserveSpaceSize) {
  using namespace sim::dnn;
  if (!ready(handle, rnnDesc) || xDesc == nullptr || !xDesc->set || (fwdMode != 0 && fwdMode != 1))
    return fail(CUDNN_STATUS_BAD_PARAM, "cudnnGetRNNTempSpaceSizes: bad handle, descriptor or mode");
  size_t reserve = 0;
  const size_t work = temp_elements(*rnnDesc, *xDesc, fwdMode == CUDNN_FWD_MODE_TRAINING, &reserve);
  if (workSpaceSize != nullptr) *workSpaceSize = work * elem(*rnnDesc);
  if (reserveSpaceSize != nullptr) *reserveSpaceSize = reserve * elem(*rnnDesc);
  return CUDNN_STATUS_SUCCESS;
}

namespace sim::dnn {
namespace {

// What every RNN computation checks: its descriptors, and buffers at least
// the sizes the queries above give (training needs the reserve).
cudnnStatus_t check_run(cudnnHandle_t h, cudnnRNNDescriptor_t r, cudnnRNNDataDescriptor_t x, bool training,
                        size_t weight, size_t work, size_t reserve, const char* what) {
  if (!ready(h, r) || x == nullptr || !x->set) return fail(CUDNN_STATUS_BAD_PARAM, what);
  size_t need_reserve = 0;
  const size_t need_work = temp_elements(*r, *x, training, &need_reserve) * elem(*r);
  if (weight < weight_bytes(*r) || work < need_work || reserve < need_reserve * elem(*r))
    return fail(CUDNN_STATUS_BAD_PARAM, "RNN: a weight, work or reserve space smaller than its size query says");
  return CUDNN_STATUS_SUCCESS;
}

}  // namespace
}  // namespace sim::dnn

SIM_EXPORT cudnnStatus_t cudnnRNNForward(cudnnHandle_t handle, cudnnRNNDescriptor_t rnnDesc,
                                         cudnnForwardMode_t fwdMode, const int32_t devSeqLengths[],
                                         cudnnRNNDataDescriptor_t xDesc, const void* x, cudnnRNNDataDescriptor_t yDesc,
                                         void* y, cudnnTensorDescriptor_t hDesc, const void* hx, void* hy,
                                         cudnnTensorDescriptor_t cDesc, const void* cx, void* cy,
                                         size_t weightSpaceSize, const void* weightSpace, size_t workSpaceSize,
                                         void* workSpace, size_t reserveSpaceSize, void* reserveSpace) {
  (void)devSeqLengths, (void)x, (void)yDesc, (void)y, (void)hDesc, (void)hx, (void)hy, (void)cDesc, (void)cx, (void)cy,
      (void)weightSpace, (void)workSpace, (void)reserveSpace;
  return sim::dnn::check_run(handle, rnnDesc, xDesc, fwdMode == CUDNN_FWD_MODE_TRAINING, weightSpaceSize,
                             workSpaceSize, reserveSpaceSize, "cudnnRNNForward: bad handle or descriptor");
}

SIM_EXPORT cudnnStatus_t cudnnRNNBackwardData_v8(cudnnHandle_t handle, cudnnRNNDescriptor_t rnnDesc,
                                                 const int32_t devSeqLengths[], cudnnRNNDataDescriptor_t yDesc,
                                                 const void* y, const void* dy, cudnnRNNDataDescriptor_t xDesc,
                                                 void* dx, cudnnTensorDescriptor_t hDesc, const void* hx,
                                                 const void* dhy, void* dhx, cudnnTensorDescriptor_t cDesc,
                                                 const void* cx, const void* dcy, void* dcx, size_t weightSpaceSize,
                                                 const void* weightSpace, size_t workSpaceSize, void* workSpace,
                                                 size_t reserveSpaceSize, void* reserveSpace) {
  (void)devSeqLengths, (void)yDesc, (void)y, (void)dy, (void)dx, (void)hDesc, (void)hx, (void)dhy, (void)dhx,
      (void)cDesc, (void)cx, (void)dcy, (void)dcx, (void)weightSpace, (void)workSpace, (void)reserveSpace;
  return sim::dnn::check_run(handle, rnnDesc, xDesc, true, weightSpaceSize, workSpaceSize, reserveSpaceSize,
                             "cudnnRNNBackwardData_v8: bad handle or descriptor");
}

SIM_EXPORT cudnnStatus_t cudnnRNNBackwardWeights_v8(cudnnHandle_t handle, cudnnRNNDescriptor_t rnnDesc,
                                                    cudnnWgradMode_t addGrad, const int32_t devSeqLengths[],
                                                    cudnnRNNDataDescriptor_t xDesc, const void* x,
                                                    cudnnTensorDescriptor_t hDesc, const void* hx,
                                                    cudnnRNNDataDescriptor_t yDesc, const void* y,
                                                    size_t weightSpaceSize, void* dweightSpace, size_t workSpaceSize,
                                                    void* workSpace, size_t reserveSpaceSize, void* reserveSpace) {
  (void)addGrad, (void)devSeqLengths, (void)x, (void)hDesc, (void)hx, (void)yDesc, (void)y, (void)dweightSpace,
      (void)workSpace, (void)reserveSpace;
  return sim::dnn::check_run(handle, rnnDesc, xDesc, true, weightSpaceSize, workSpaceSize, reserveSpaceSize,
                             "cudnnRNNBackwardWeights_v8: bad handle or descriptor");
}
