# The worker's sandbox (rlimits, netns, no_new_privs, Landlock, seccomp).
add_library(kevo_sandbox STATIC ${CMAKE_CURRENT_LIST_DIR}/sandbox.c)
target_link_libraries(kevo_sandbox PUBLIC PkgConfig::SECCOMP)
set_target_properties(kevo_sandbox PROPERTIES POSITION_INDEPENDENT_CODE ON)

kevo_add_test(test_sandbox SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_sandbox.c
  LIBS kevo_sandbox OpenMP::OpenMP_C pthread ${CMAKE_DL_LIBS})

# The worker's binary: full RELRO, immediate binding, PIE, no text relocations,
# non-executable stack (worker/CMakeLists.txt links it so; readelf checks).
if(TARGET kevo-worker OR EXISTS ${CMAKE_SOURCE_DIR}/worker/CMakeLists.txt)
  add_test(NAME worker_hardening
           COMMAND ${CMAKE_SOURCE_DIR}/tests/worker_hardening.sh $<TARGET_FILE:kevo-worker>)
endif()
