// cublasGetStatusName / cublasGetStatusString (and the cublasLt* twins): the
// texts NVIDIA's library returns (read with ctypes from the 13.1.1.3 wheel's
// libcublasLt.so.13, which answers them without a GPU); a value that is no
// status gives "unrecognized status", as there.
#pragma once

namespace sim::blas {

const char* status_name(int status);
const char* status_string(int status);

}  // namespace sim::blas
