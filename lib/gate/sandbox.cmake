# The worker's sandbox (rlimits, netns, no_new_privs, Landlock, seccomp).
add_library(kevo_sandbox STATIC ${CMAKE_CURRENT_LIST_DIR}/sandbox.c)
target_link_libraries(kevo_sandbox PUBLIC PkgConfig::SECCOMP)
set_target_properties(kevo_sandbox PROPERTIES POSITION_INDEPENDENT_CODE ON)

kevo_add_test(test_sandbox SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_sandbox.c
  LIBS kevo_sandbox OpenMP::OpenMP_C pthread ${CMAKE_DL_LIBS})
