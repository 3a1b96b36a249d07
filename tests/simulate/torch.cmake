# simulate.torch_*: the real PyTorch on a simulated H100 under
# `gpumemrec run --simulate`, each bundle checked against the program's own
# figures (test_torch.py; the frameworks venv; skipped without it).
find_package(Python3 REQUIRED COMPONENTS Interpreter)
foreach(_case train_oom train_expandable train_async kv_static kv_dynamic recovered fraction llama7b calibrate peak peak_expandable)
  add_test(NAME simulate.torch_${_case}
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/test_torch.py ${CMAKE_BINARY_DIR}/bin ${_case})
  set_tests_properties(simulate.torch_${_case} PROPERTIES TIMEOUT 1200 SKIP_RETURN_CODE 77 LABELS "simulate;torch")
endforeach()
