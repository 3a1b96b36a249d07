# simulate.cublas*: the simulated libcublas.so.13 and libcublasLt.so.13.
#   simulate.cublas           self-test on GPUMEMREC_SIMULATE=h100-80gb (32 MiB default workspace)
#   simulate.cublas_fake_gpu  the same on the tests' plain Fake GPU (4 MiB)
#   simulate.cublas_no_driver no libcuda.so.1: handles cannot be made
#   simulate.cublas_headers   the sources against NVIDIA's headers (venv)
#   simulate.cublas_torch     the real PyTorch's matmuls on the simulated card (venv)
find_package(Python3 REQUIRED COMPONENTS Interpreter)

add_executable(selftest_cublas selftest_cublas.cpp selftest_cublas_routines.cpp selftest_cublas_workspace.cpp
  selftest_cublaslt.cpp selftest_cublas_threads.cpp)
target_include_directories(selftest_cublas PRIVATE ${CMAKE_CURRENT_SOURCE_DIR} ${CMAKE_SOURCE_DIR}/simulate
  ${CMAKE_SOURCE_DIR}/tests/fakes ${CUDA_INCLUDE_DIR})
target_link_libraries(selftest_cublas PRIVATE sim_cublas sim_cublaslt Threads::Threads ${CMAKE_DL_LIBS})
# DT_RPATH to the simulated libraries: the dlopen("libcuda.so.1") of the test
# and of libcublas find the simulated driver there.
set_target_properties(selftest_cublas PROPERTIES BUILD_RPATH "${GPUMEMREC_SIM_DIR}")
target_link_options(selftest_cublas PRIVATE -Wl,--disable-new-dtags)
add_dependencies(selftest_cublas sim_cuda)

add_executable(selftest_cublas_nodriver selftest_cublas_nodriver.cpp)
target_include_directories(selftest_cublas_nodriver PRIVATE ${CMAKE_CURRENT_SOURCE_DIR} ${CMAKE_SOURCE_DIR}/simulate
  ${CMAKE_SOURCE_DIR}/tests/fakes ${CUDA_INCLUDE_DIR})
target_link_libraries(selftest_cublas_nodriver PRIVATE ${CMAKE_DL_LIBS})
set_target_properties(selftest_cublas_nodriver PROPERTIES SKIP_BUILD_RPATH ON)
add_dependencies(selftest_cublas_nodriver sim_cublas sim_cublaslt)

add_test(NAME simulate.cublas COMMAND selftest_cublas 32)
set_tests_properties(simulate.cublas PROPERTIES ENVIRONMENT "GPUMEMREC_SIMULATE=h100-80gb" TIMEOUT 60)
add_test(NAME simulate.cublas_fake_gpu COMMAND env -u GPUMEMREC_SIMULATE $<TARGET_FILE:selftest_cublas> 4)
set_tests_properties(simulate.cublas_fake_gpu PROPERTIES TIMEOUT 60)
add_test(NAME simulate.cublas_no_driver
  COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/tests/fakes/run_without_driver.py
          $<TARGET_FILE:sim_cublas> $<TARGET_FILE:selftest_cublas_nodriver> $<TARGET_FILE:sim_cublaslt>)
set_tests_properties(simulate.cublas_no_driver PROPERTIES TIMEOUT 30 SKIP_RETURN_CODE 77)
add_test(NAME simulate.cublas_headers
  COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/check_headers.py SIM_BLAS_REAL_HEADERS
          nvidia/cu13/include/cublasLt.h ${CMAKE_CURRENT_SOURCE_DIR}/blas_values.cpp ${CMAKE_CXX_COMPILER}
          ${CUDA_INCLUDE_DIR} "simulate/blas/*.cpp" "tests/simulate/selftest_cublas*.cpp")
set_tests_properties(simulate.cublas_headers PROPERTIES TIMEOUT 300 SKIP_RETURN_CODE 77)
add_test(NAME simulate.cublas_torch
  COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/torch_blas.py ${GPUMEMREC_SIM_DIR})
set_tests_properties(simulate.cublas_torch PROPERTIES TIMEOUT 300 SKIP_RETURN_CODE 77)

# The recorder names libcublas.so.13 as the caller of cuBLAS's own device memory.
add_executable(blas_oom blas_oom.cpp)
target_include_directories(blas_oom PRIVATE ${CMAKE_CURRENT_SOURCE_DIR} ${CMAKE_SOURCE_DIR}/simulate ${CUDA_INCLUDE_DIR})
target_link_libraries(blas_oom PRIVATE sim_cublas ${CMAKE_DL_LIBS})
set_target_properties(blas_oom PROPERTIES BUILD_RPATH "${GPUMEMREC_SIM_DIR}")
target_link_options(blas_oom PRIVATE -Wl,--disable-new-dtags)
add_dependencies(blas_oom sim_cuda)
if(TARGET gpumemrec_shim)
  add_test(NAME simulate.cublas_recorder
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/recorder_library.py cublas $<TARGET_FILE:blas_oom>)
  set_tests_properties(simulate.cublas_recorder PROPERTIES ENVIRONMENT "GPUMEMREC_BUILD_DIR=${CMAKE_BINARY_DIR}"
    TIMEOUT 120 SKIP_RETURN_CODE 77)
endif()
