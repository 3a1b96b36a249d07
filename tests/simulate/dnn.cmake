# simulate.cudnn*: the simulated libcudnn.so.9.
#   simulate.cudnn           self-test on GPUMEMREC_SIMULATE=h100-80gb (selftest_cudnn*.cpp)
#   simulate.cudnn_fake_gpu  the same on the tests' plain Fake GPU
#   simulate.cudnn_a100, simulate.cudnn_t4  the same on compute capability 8.0 and 7.5
#   simulate.cudnn_no_driver no libcuda.so.1: handles cannot be made
#   simulate.cudnn_headers   the sources against NVIDIA's cuDNN headers (venv)
#   simulate.cudnn_recorder  the recorder names libcudnn.so.9 as its handles' caller
#   simulate.cudnn_torch_sdpa, simulate.cudnn_torch_conv
#                            the real PyTorch's attention and convolutions on
#                            the simulated card (venv)
find_package(Python3 REQUIRED COMPONENTS Interpreter)

add_executable(selftest_cudnn selftest_cudnn.cpp selftest_cudnn_build.cpp selftest_cudnn_graph.cpp
  selftest_cudnn_model.cpp selftest_cudnn_execute.cpp selftest_cudnn_legacy.cpp selftest_cudnn_threads.cpp)
target_include_directories(selftest_cudnn PRIVATE ${CMAKE_CURRENT_SOURCE_DIR} ${CMAKE_SOURCE_DIR}/simulate
  ${CMAKE_SOURCE_DIR}/tests/fakes ${CUDA_INCLUDE_DIR})
target_link_libraries(selftest_cudnn PRIVATE sim_cudnn Threads::Threads ${CMAKE_DL_LIBS})
# DT_RPATH to the simulated libraries: libcudnn's dlopen("libcuda.so.1")
# finds the simulated driver there.
set_target_properties(selftest_cudnn PROPERTIES BUILD_RPATH "${GPUMEMREC_SIM_DIR}")
target_link_options(selftest_cudnn PRIVATE -Wl,--disable-new-dtags)
add_dependencies(selftest_cudnn sim_cuda)

add_test(NAME simulate.cudnn COMMAND selftest_cudnn)
set_tests_properties(simulate.cudnn PROPERTIES ENVIRONMENT "GPUMEMREC_SIMULATE=h100-80gb" TIMEOUT 60)
add_test(NAME simulate.cudnn_fake_gpu COMMAND selftest_cudnn)
set_tests_properties(simulate.cudnn_fake_gpu PROPERTIES ENVIRONMENT_MODIFICATION "GPUMEMREC_SIMULATE=unset:"
  TIMEOUT 60)
foreach(_card a100-80gb t4-16gb)
  string(REGEX REPLACE "-.*" "" _short ${_card})
  add_test(NAME simulate.cudnn_${_short} COMMAND selftest_cudnn)
  set_tests_properties(simulate.cudnn_${_short} PROPERTIES ENVIRONMENT "GPUMEMREC_SIMULATE=${_card}" TIMEOUT 60)
endforeach()

add_executable(selftest_cudnn_nodriver selftest_cudnn_nodriver.cpp)
target_include_directories(selftest_cudnn_nodriver PRIVATE ${CMAKE_SOURCE_DIR}/simulate ${CMAKE_SOURCE_DIR}/tests/fakes
  ${CUDA_INCLUDE_DIR})
target_link_libraries(selftest_cudnn_nodriver PRIVATE ${CMAKE_DL_LIBS})
set_target_properties(selftest_cudnn_nodriver PROPERTIES SKIP_BUILD_RPATH ON)
add_dependencies(selftest_cudnn_nodriver sim_cudnn)
add_test(NAME simulate.cudnn_no_driver
  COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/tests/fakes/run_without_driver.py
          $<TARGET_FILE:sim_cudnn> $<TARGET_FILE:selftest_cudnn_nodriver>)
set_tests_properties(simulate.cudnn_no_driver PROPERTIES TIMEOUT 30 SKIP_RETURN_CODE 77)

add_test(NAME simulate.cudnn_headers
  COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/check_headers.py SIM_CUDNN_REAL_HEADERS
          nvidia/cudnn/include/cudnn.h ${CMAKE_CURRENT_SOURCE_DIR}/dnn_values.cpp ${CMAKE_CXX_COMPILER}
          ${CUDA_INCLUDE_DIR} "simulate/dnn/*.cpp" "tests/simulate/selftest_cudnn*.cpp")
set_tests_properties(simulate.cudnn_headers PROPERTIES TIMEOUT 300 SKIP_RETURN_CODE 77)

foreach(_case sdpa conv)
  add_test(NAME simulate.cudnn_torch_${_case}
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/torch_cudnn_run.py torch_cudnn_${_case}.py
            ${GPUMEMREC_SIM_DIR})
  set_tests_properties(simulate.cudnn_torch_${_case} PROPERTIES TIMEOUT 600 SKIP_RETURN_CODE 77)
endforeach()

# The recorder names libcudnn.so.9 as the caller of the handles' device memory.
add_executable(dnn_oom dnn_oom.cpp)
target_include_directories(dnn_oom PRIVATE ${CMAKE_CURRENT_SOURCE_DIR} ${CMAKE_SOURCE_DIR}/simulate
  ${CMAKE_SOURCE_DIR}/tests/fakes ${CUDA_INCLUDE_DIR})
target_link_libraries(dnn_oom PRIVATE sim_cudnn ${CMAKE_DL_LIBS})
set_target_properties(dnn_oom PROPERTIES BUILD_RPATH "${GPUMEMREC_SIM_DIR}")
target_link_options(dnn_oom PRIVATE -Wl,--disable-new-dtags)
add_dependencies(dnn_oom sim_cuda)
if(TARGET gpumemrec_shim)
  add_test(NAME simulate.cudnn_recorder
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/recorder_library.py cudnn $<TARGET_FILE:dnn_oom>)
  set_tests_properties(simulate.cudnn_recorder PROPERTIES ENVIRONMENT "GPUMEMREC_BUILD_DIR=${CMAKE_BINARY_DIR}"
    TIMEOUT 120 SKIP_RETURN_CODE 77)
endif()
