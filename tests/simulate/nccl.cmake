# simulate.nccl*: the simulated libnccl.so.2 (simulate/nccl/).
#   simulate.nccl           self-test on an H100 SXM (24 channels, P2P write), 4 ranks as processes
#   simulate.nccl_a100      the same on an A100 SXM (P2P read: the SIMPLE buffer on the sender)
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
add_test(NAME simulate.nccl_a100 COMMAND selftest_nccl a100)
set_tests_properties(simulate.nccl_a100 PROPERTIES ENVIRONMENT "GPUMEMREC_SIMULATE=a100-80gb:4" TIMEOUT 60)
add_test(NAME simulate.nccl_fake_gpu COMMAND selftest_nccl pcie)
set_tests_properties(simulate.nccl_fake_gpu PROPERTIES ENVIRONMENT "FAKEGPU_DEVICES=4"
  ENVIRONMENT_MODIFICATION "GPUMEMREC_SIMULATE=unset:" TIMEOUT 60)
# 32 MiB: a communicator's init (16 MiB) fits, its ring (24 MiB more) does not.
add_test(NAME simulate.nccl_oom COMMAND selftest_nccl pcie oom)
set_tests_properties(simulate.nccl_oom PROPERTIES ENVIRONMENT "FAKEGPU_DEVICES=2;FAKEGPU_CAPACITY=33554432"
  ENVIRONMENT_MODIFICATION "GPUMEMREC_SIMULATE=unset:" TIMEOUT 60)
