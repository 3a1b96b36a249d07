# simulate.nccl*: the simulated libnccl.so.2 (simulate/nccl/).
#   simulate.nccl           self-test on an H100 SXM (24 channels, P2P write), 4 ranks as processes
#   simulate.nccl_p2p_read  the same with NCCL_P2P_READ_ENABLE=1 (the SIMPLE buffer on the sender,
#                           NCCL's default between A100s)
#   simulate.nccl_fake_gpu  on the tests' plain Fake GPU (PCIe: 2 channels)
#   simulate.nccl_oom       a communicator running out of memory at its ring's connection
#   simulate.nccl_header    the sources against NVIDIA's nccl.h and its exports' binding (venv)
find_package(Python3 REQUIRED COMPONENTS Interpreter)

add_executable(selftest_nccl selftest_nccl.cpp selftest_nccl_ranks.cpp selftest_nccl_driver.cpp)
target_include_directories(selftest_nccl PRIVATE ${CMAKE_CURRENT_SOURCE_DIR} ${CMAKE_SOURCE_DIR}/simulate
  ${CMAKE_SOURCE_DIR}/tests/fakes ${CUDA_INCLUDE_DIR})
target_link_libraries(selftest_nccl PRIVATE sim_nccl Threads::Threads ${CMAKE_DL_LIBS})
# DT_RPATH to the simulated libraries: the test's dlopen("libcuda.so.1")
# finds the simulated driver there (libnccl's own finds it through $ORIGIN).
set_target_properties(selftest_nccl PROPERTIES BUILD_RPATH "${GPUMEMREC_SIM_DIR}")
target_link_options(selftest_nccl PRIVATE -Wl,--disable-new-dtags)
add_dependencies(selftest_nccl sim_cuda)

add_test(NAME simulate.nccl COMMAND selftest_nccl h100)
set_tests_properties(simulate.nccl PROPERTIES ENVIRONMENT "GPUMEMREC_SIMULATE=h100-80gb:4" TIMEOUT 60)
add_test(NAME simulate.nccl_p2p_read COMMAND selftest_nccl h100-read)
set_tests_properties(simulate.nccl_p2p_read PROPERTIES
  ENVIRONMENT "GPUMEMREC_SIMULATE=h100-80gb:4;NCCL_P2P_READ_ENABLE=1" TIMEOUT 60)
add_test(NAME simulate.nccl_fake_gpu COMMAND selftest_nccl pcie)
set_tests_properties(simulate.nccl_fake_gpu PROPERTIES ENVIRONMENT "FAKEGPU_DEVICES=4"
  ENVIRONMENT_MODIFICATION "GPUMEMREC_SIMULATE=unset:" TIMEOUT 60)
# 32 MiB: a communicator's init (16 MiB) fits, its ring (24 MiB more) does not.
add_test(NAME simulate.nccl_oom COMMAND selftest_nccl pcie oom)
set_tests_properties(simulate.nccl_oom PROPERTIES ENVIRONMENT "FAKEGPU_DEVICES=2;FAKEGPU_CAPACITY=33554432"
  ENVIRONMENT_MODIFICATION "GPUMEMREC_SIMULATE=unset:" TIMEOUT 60)

# simulate.shared_devices: the processes of one run share each simulated
# device (simulate/core/shared_ledger.h); device_probe is one such process.
add_executable(device_probe device_probe.cpp)
target_include_directories(device_probe PRIVATE ${CUDA_INCLUDE_DIR})
target_link_libraries(device_probe PRIVATE ${CMAKE_DL_LIBS})
set_target_properties(device_probe PROPERTIES BUILD_RPATH "${GPUMEMREC_SIM_DIR}")
target_link_options(device_probe PRIVATE -Wl,--disable-new-dtags)
add_dependencies(device_probe sim_cuda sim_nvml)
add_test(NAME simulate.shared_devices
  COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/test_shared_devices.py $<TARGET_FILE:device_probe>
          ${GPUMEMREC_SIM_DIR})
set_tests_properties(simulate.shared_devices PROPERTIES TIMEOUT 120)

# simulate.torchrun_{fsdp2,ddp}_ws2/_ws4, _zero2_ws2: the real PyTorch's
# FSDP2 and DDP, and DeepSpeed's ZeRO-2, under torchrun, each rank on its
# simulated H100, rank 1 out of memory
# first; fsdp2_wskilled: rank 1 killed mid-step while rank 0 runs out of
# memory (venv and the simulated cuBLAS; 15 to 40 s each).
foreach(_case fsdp2:2 fsdp2:4 fsdp2:killed ddp:2 ddp:4 zero2:2)
  string(REPLACE ":" ";" _parts "${_case}")
  list(GET _parts 0 _wrap)
  list(GET _parts 1 _world)
  add_test(NAME simulate.torchrun_${_wrap}_ws${_world}
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/test_torchrun.py ${CMAKE_BINARY_DIR}/bin ${_wrap}
            ${_world})
  set_tests_properties(simulate.torchrun_${_wrap}_ws${_world} PROPERTIES TIMEOUT 900 SKIP_RETURN_CODE 77
    RUN_SERIAL ON)
endforeach()

add_test(NAME simulate.nccl_header
  COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/check_nccl_header.py ${CMAKE_CXX_COMPILER}
          ${CUDA_INCLUDE_DIR} $<TARGET_FILE:sim_nccl>)
set_tests_properties(simulate.nccl_header PROPERTIES TIMEOUT 300 SKIP_RETURN_CODE 77)
