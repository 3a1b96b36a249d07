# Two libraries around the bundle model (common/bundle_model.h):
#  - gpumemrec_model: the in-memory model, the top-sites computation and the
#    PyTorch snapshot writer (memviz_snapshot + pickle_writer). No I/O of
#    bundle files; the shim links it to write snapshot.pickle from the
#    snapshot it already holds in memory.
#  - gpumemrec_bundle: the bundle reader (rapidjson DOM) on top of the model.
#    Only the tools, the tests and the fuzzers link it; never the shim.
# Included from shim/ and tools/ (include_guard: defined once).
include_guard(GLOBAL)

find_package(Threads REQUIRED)
find_path(RAPIDJSON_INCLUDE_DIR rapidjson/document.h REQUIRED)

add_library(gpumemrec_model STATIC
  ${CMAKE_CURRENT_LIST_DIR}/bundle_model.cpp
  ${CMAKE_CURRENT_LIST_DIR}/live_sites.cpp
  ${CMAKE_CURRENT_LIST_DIR}/pickle_writer.cpp
  ${CMAKE_CURRENT_LIST_DIR}/memviz_snapshot.cpp
  ${CMAKE_CURRENT_LIST_DIR}/frame_order.cpp
  ${CMAKE_CURRENT_LIST_DIR}/names.cpp
  ${CMAKE_CURRENT_LIST_DIR}/site_rules.cpp
  ${CMAKE_CURRENT_LIST_DIR}/autograd_node.cpp
  ${CMAKE_CURRENT_LIST_DIR}/card_accounting.cpp
  ${CMAKE_CURRENT_LIST_DIR}/roles.cpp
  ${CMAKE_CURRENT_LIST_DIR}/advice.cpp
)
target_include_directories(gpumemrec_model PUBLIC ${CMAKE_CURRENT_LIST_DIR}/..)
# gpumemrec_common: GPUMEMREC_SITE_SKIP's parser (common/config.h) for site_rules.cpp.
target_link_libraries(gpumemrec_model PUBLIC gpumemrec_common Threads::Threads)
set_target_properties(gpumemrec_model PROPERTIES POSITION_INDEPENDENT_CODE ON)

add_library(gpumemrec_bundle STATIC
  ${CMAKE_CURRENT_LIST_DIR}/bundle_reader.cpp
  ${CMAKE_CURRENT_LIST_DIR}/bundle_read_json.cpp
  ${CMAKE_CURRENT_LIST_DIR}/bundle_read_metadata.cpp
  ${CMAKE_CURRENT_LIST_DIR}/bundle_read_live.cpp
  ${CMAKE_CURRENT_LIST_DIR}/bundle_read_environment.cpp
  ${CMAKE_CURRENT_LIST_DIR}/bundle_read_events.cpp
  ${CMAKE_CURRENT_LIST_DIR}/peak_json.cpp
  ${CMAKE_CURRENT_LIST_DIR}/json_records.cpp
  ${CMAKE_CURRENT_LIST_DIR}/block_stream.cpp
)
target_include_directories(gpumemrec_bundle PUBLIC ${CMAKE_CURRENT_LIST_DIR}/..)
target_link_libraries(gpumemrec_bundle PUBLIC gpumemrec_model)
target_include_directories(gpumemrec_bundle SYSTEM PRIVATE ${RAPIDJSON_INCLUDE_DIR})
set_target_properties(gpumemrec_bundle PROPERTIES POSITION_INDEPENDENT_CODE ON)
