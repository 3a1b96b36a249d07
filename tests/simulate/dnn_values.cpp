// simulate.cudnn_headers: every value simulate/dnn/enums.h lists, and the
// version simulate/dnn/api.h presents, are NVIDIA's (cuDNN 9.24.0's headers).
#include "dnn/api.h"
#include "dnn/enums.h"

#define SIM_SAME(name, value) static_assert(name == (value), #name " differs from NVIDIA's header");
SIM_CUDNN_STATUS(SIM_SAME)
SIM_CUDNN_DESCRIPTOR_TYPE(SIM_SAME)
SIM_CUDNN_ATTRIBUTE_TYPE(SIM_SAME)
SIM_CUDNN_ATTRIBUTE_NAME(SIM_SAME)
SIM_CUDNN_DATA_TYPE(SIM_SAME)
SIM_CUDNN_NUMERICAL_NOTE(SIM_SAME)
SIM_CUDNN_HEUR_MODE(SIM_SAME)
SIM_CUDNN_LEGACY(SIM_SAME)
static_assert(sim::dnn::kVersion == CUDNN_VERSION && sim::dnn::kMajor == CUDNN_MAJOR &&
                  sim::dnn::kMinor == CUDNN_MINOR && sim::dnn::kPatch == CUDNN_PATCHLEVEL,
              "api.h's version differs from cudnn_version.h");
