// The simulated cuDNN's self-test (simulate.cudnn*): the API it calls, and
// helpers that build backend descriptors the way cudnn-frontend does
// (include/cudnn_frontend_Tensor.h, cudnn_frontend_Operation.h,
// cudnn_frontend_OperationGraph.h, cudnn_frontend_Heuristics.h,
// cudnn_frontend_ExecutionPlan.h of cudnn-frontend 1.23).
#pragma once

#include <cstdint>
#include <vector>

#include "dnn/types.h"
#include "selftest_check.h"

extern "C" {
cudnnStatus_t cudnnCreate(cudnnHandle_t* handle);
cudnnStatus_t cudnnDestroy(cudnnHandle_t handle);
cudnnStatus_t cudnnSetStream(cudnnHandle_t handle, cudaStream_t streamId);
cudnnStatus_t cudnnGetStream(cudnnHandle_t handle, cudaStream_t* streamId);
size_t cudnnGetVersion(void);
size_t cudnnGetCudartVersion(void);
size_t cudnnGetMaxDeviceVersion(void);
cudnnStatus_t cudnnGetProperty(libraryPropertyType type, int* value);
const char* cudnnGetErrorString(cudnnStatus_t status);
void cudnnGetLastErrorString(char* message, size_t max_size);
cudnnStatus_t cudnnBackendCreateDescriptor(cudnnBackendDescriptorType_t descriptorType,
                                           cudnnBackendDescriptor_t* descriptor);
cudnnStatus_t cudnnBackendDestroyDescriptor(cudnnBackendDescriptor_t descriptor);
cudnnStatus_t cudnnBackendFinalize(cudnnBackendDescriptor_t descriptor);
cudnnStatus_t cudnnBackendSetAttribute(cudnnBackendDescriptor_t descriptor, cudnnBackendAttributeName_t attributeName,
                                       cudnnBackendAttributeType_t attributeType, int64_t elementCount,
                                       const void* arrayOfElements);
cudnnStatus_t cudnnBackendGetAttribute(cudnnBackendDescriptor_t const descriptor,
                                       cudnnBackendAttributeName_t attributeName,
                                       cudnnBackendAttributeType_t attributeType, int64_t requestedElementCount,
                                       int64_t* elementCount, void* arrayOfElements);
cudnnStatus_t cudnnBackendExecute(cudnnHandle_t handle, cudnnBackendDescriptor_t executionPlan,
                                  cudnnBackendDescriptor_t variantPack);
cudnnStatus_t cudnnCreateTensorDescriptor(cudnnTensorDescriptor_t* tensorDesc);
cudnnStatus_t cudnnDestroyTensorDescriptor(cudnnTensorDescriptor_t tensorDesc);
cudnnStatus_t cudnnSetTensorNdDescriptor(cudnnTensorDescriptor_t tensorDesc, cudnnDataType_t dataType, int nbDims,
                                         const int dimA[], const int strideA[]);
cudnnStatus_t cudnnGetTensorNdDescriptor(const cudnnTensorDescriptor_t tensorDesc, int nbDimsRequested,
                                         cudnnDataType_t* dataType, int* nbDims, int dimA[], int strideA[]);
cudnnStatus_t cudnnCreateRNNDescriptor(cudnnRNNDescriptor_t* rnnDesc);
cudnnStatus_t cudnnDestroyRNNDescriptor(cudnnRNNDescriptor_t rnnDesc);
cudnnStatus_t cudnnSetRNNDescriptor_v8(cudnnRNNDescriptor_t rnnDesc, cudnnRNNAlgo_t algo, cudnnRNNMode_t cellMode,
                                       cudnnRNNBiasMode_t biasMode, cudnnDirectionMode_t dirMode,
                                       cudnnRNNInputMode_t inputMode, cudnnDataType_t dataType,
                                       cudnnDataType_t mathPrec, cudnnMathType_t mathType, int32_t inputSize,
                                       int32_t hiddenSize, int32_t projSize, int32_t numLayers,
                                       cudnnDropoutDescriptor_t dropoutDesc, uint32_t auxFlags);
cudnnStatus_t cudnnGetRNNWeightSpaceSize(cudnnHandle_t handle, cudnnRNNDescriptor_t rnnDesc, size_t* weightSpaceSize);
cudnnStatus_t cudnnGetRNNWeightParams(cudnnHandle_t handle, cudnnRNNDescriptor_t rnnDesc, int32_t pseudoLayer,
                                      size_t weightSpaceSize, const void* weightSpace, int32_t linLayerID,
                                      cudnnTensorDescriptor_t mDesc, void** mAddr, cudnnTensorDescriptor_t bDesc,
                                      void** bAddr);
}

// One backend descriptor made, its attributes set, finalized.
struct Desc {
  cudnnBackendDescriptor_t d = nullptr;
  explicit Desc(cudnnBackendDescriptorType_t type);
  ~Desc();
  Desc(const Desc&) = delete;
  Desc& operator=(const Desc&) = delete;
  cudnnStatus_t set(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, int64_t n, const void* v);
  cudnnStatus_t set_desc(cudnnBackendAttributeName_t name, const Desc& other);
  cudnnStatus_t set_int64(cudnnBackendAttributeName_t name, std::vector<int64_t> values);
  cudnnStatus_t finalize();
};

// A finalized tensor (as cudnn_frontend::TensorBuilder makes one): uid, dims,
// strides, data type, 16-byte alignment, virtual or not.
Desc* make_tensor(int64_t uid, std::vector<int64_t> dims, std::vector<int64_t> strides, cudnnDataType_t type,
                  bool is_virtual = false);
// Strides of a packed NCHW (first dim outermost) or NHWC tensor.
std::vector<int64_t> packed(const std::vector<int64_t>& dims);
std::vector<int64_t> channels_last(const std::vector<int64_t>& dims);

// A finalized operation graph of these finalized operations.
Desc* make_graph(cudnnHandle_t handle, const std::vector<Desc*>& ops);
// A convolution forward operation on finalized x, w, y (and its descriptor).
Desc* make_conv(Desc* x, Desc* w, Desc* y);
// A finalized graph of one unified SDPA forward operation (as cudnn-frontend
// 1.23 builds PyTorch's attention on cuDNN 9.24): bf16 Q, K, V, O (uids 0, 1,
// 2, 3) of 2 x 4 x 128 x 64, float stats (8), a by-value scale (5). The
// descriptors to delete, graph last, go into *owned.
Desc* make_sdpa_graph(cudnnHandle_t handle, std::vector<Desc*>* owned);
// A finalized graph of one pointwise operation on float 1 x 8 x 64 x 64
// tensors (uids 1, 2); *owned as for make_sdpa_graph.
Desc* make_pointwise_graph(cudnnHandle_t handle, std::vector<Desc*>* owned);
// The engine configs heuristics return for a graph (caller destroys them).
std::vector<cudnnBackendDescriptor_t> heuristics(const Desc& graph, int mode, int64_t* total);
// A finalized plan of `cfg` on `handle`; its workspace size in *workspace.
Desc* make_plan(cudnnHandle_t handle, cudnnBackendDescriptor_t cfg, int64_t* workspace);

// The simulated card's compute capability (major * 10 + minor), read from
// the simulated driver; and the SDPA forward plan's workspace on it
// (simulate/dnn/graph_model.h: 16 B on 9.x, 0 elsewhere).
int card_cc();
int64_t sdpa_forward_workspace();

int test_graph_store(cudnnHandle_t h);
int test_graph_model(cudnnHandle_t h);
int test_graph_execute(cudnnHandle_t h);
int test_legacy(cudnnHandle_t h);
int test_threads();
// The checks that failed in the builders above.
int build_failures();
