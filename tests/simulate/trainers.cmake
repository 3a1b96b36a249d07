# simulate.trainer_*: Lightning's Trainer.fit, accelerate's backward and
# transformers' Trainer.train run out of memory on a simulated A100 under
# `gpumemrec run --simulate`; each bundle's site, verdict (fatal when the
# error escapes the trainer, recovered when the trainer's own handler
# catches it and retries with less) and roles checked (test_trainers.py;
# the frameworks venv; skipped without it). Cost measured on 2 cores shared
# with other builds (CPU user+sys / wall): accelerate_backward 15 s / 31 s,
# lightning_fit 25 s / 53 s, lightning_finder 30 s / 70 s,
# transformers_train 20 s / 48 s, accelerate_find 42 s / 90 s,
# transformers_auto 42 s / 95 s: about 3 CPU minutes in all.
find_package(Python3 REQUIRED COMPONENTS Interpreter)
foreach(_case lightning_fit lightning_finder accelerate_backward accelerate_find transformers_train transformers_auto)
  add_test(NAME simulate.trainer_${_case}
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/test_trainers.py ${CMAKE_BINARY_DIR}/bin ${_case})
  set_tests_properties(simulate.trainer_${_case} PROPERTIES TIMEOUT 1200 SKIP_RETURN_CODE 77 LABELS "simulate;torch;trainers")
endforeach()
