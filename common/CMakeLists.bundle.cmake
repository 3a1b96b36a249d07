# gpumemrec_bundle: reading bundles, PyTorch snapshot export (pickle).
# Included from tools/CMakeLists.txt (and, later, by whoever else needs it).
# No CLI11 / SQLite here so the shim can reuse pickle_writer + memviz_snapshot.
include_guard(GLOBAL)

find_package(Threads REQUIRED)
find_path(RAPIDJSON_INCLUDE_DIR rapidjson/document.h REQUIRED)

add_library(gpumemrec_bundle STATIC
  ${CMAKE_CURRENT_LIST_DIR}/bundle_model.cpp
  ${CMAKE_CURRENT_LIST_DIR}/bundle_reader.cpp
  ${CMAKE_CURRENT_LIST_DIR}/pickle_writer.cpp
  ${CMAKE_CURRENT_LIST_DIR}/memviz_snapshot.cpp
  ${CMAKE_CURRENT_LIST_DIR}/frame_order.cpp
)
target_include_directories(gpumemrec_bundle PUBLIC ${CMAKE_CURRENT_LIST_DIR}/..)
target_link_libraries(gpumemrec_bundle PUBLIC Threads::Threads)
target_include_directories(gpumemrec_bundle SYSTEM PRIVATE ${RAPIDJSON_INCLUDE_DIR})
set_target_properties(gpumemrec_bundle PROPERTIES POSITION_INDEPENDENT_CODE ON)
