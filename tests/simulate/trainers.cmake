# simulate.trainer_*: Lightning's Trainer.fit, accelerate's backward and
# transformers' Trainer.train run out of memory on a simulated A100 under
# `gpumemrec run --simulate`; each bundle's site, verdict (fatal when the
# error escapes the trainer, recovered when the trainer's own handler
# catches it and retries with less) and roles checked (test_trainers.py;
# the frameworks venv; skipped without it). Cost measured on 2 cores shared
# with other builds (CPU user+sys / wall): accelerate_backward 15 s / 17 s,
# lightning_fit 23 s / 26 s, lightning_finder 27 s / 31 s,
# transformers_train 19 s / 21 s, accelerate_find 38 s / 44 s,
# transformers_auto 48 s / 53 s: about 3 CPU minutes in all (under a
# heavier load up to twice the wall time).
find_package(Python3 REQUIRED COMPONENTS Interpreter)
foreach(_case lightning_fit lightning_finder accelerate_backward accelerate_find transformers_train transformers_auto)
  add_test(NAME simulate.trainer_${_case}
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/test_trainers.py ${CMAKE_BINARY_DIR}/bin ${_case})
  set_tests_properties(simulate.trainer_${_case} PROPERTIES TIMEOUT 1200 SKIP_RETURN_CODE 77 LABELS "simulate;torch;trainers")
endforeach()
