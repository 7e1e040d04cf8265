# CPU ceilings (bandwidth, FMA peak) and their JSON cache.
# devlock.c: the device locks (only one timing loop per GPU or set of cores at
# a time); the CPU calibration takes the cores' lock too.
add_library(kevo_devlock STATIC ${CMAKE_CURRENT_LIST_DIR}/devlock.c)
target_link_libraries(kevo_devlock PUBLIC kevo_util)
set_target_properties(kevo_devlock PROPERTIES POSITION_INDEPENDENT_CODE ON)
add_library(kevo_calib STATIC ${CMAKE_CURRENT_LIST_DIR}/calib.c)
target_link_libraries(kevo_calib PUBLIC kevo_devlock OpenMP::OpenMP_C PkgConfig::JANSSON m)
set_target_properties(kevo_calib PROPERTIES POSITION_INDEPENDENT_CODE ON)
# `acc * m + a` must become a fused multiply-add in the FMA kernels: ISO C
# mode (-std=c11) otherwise turns contraction off.
# The ceilings must not depend on the build type: always optimise, never
# instrument (a Debug/ASan build measured half the FMA peak and then called
# good kernels implausible).
set_source_files_properties(${CMAKE_CURRENT_LIST_DIR}/calib.c PROPERTIES COMPILE_OPTIONS
  "-ffp-contract=fast;-O3;-fno-sanitize=all")

kevo_add_test(test_calib SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_calib.c LIBS kevo_calib)
