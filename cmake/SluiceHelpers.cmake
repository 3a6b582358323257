# Small helpers so each component is one target and tests link targets, never sources.

set(SLUICE_WARNINGS -Wall -Wextra -Wnon-virtual-dtor -Wimplicit-fallthrough
  -Wno-missing-field-initializers)
if(SLUICE_WERROR)
  list(APPEND SLUICE_WARNINGS -Werror)
endif()

function(_sluice_common target)
  target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:${SLUICE_WARNINGS}>)
endfunction()

# sluice_cc_library(NAME SRCS a.cc b.cc DEPS x y)
# A library without sources becomes an INTERFACE (header-only) target.
function(sluice_cc_library name)
  cmake_parse_arguments(A "" "" "SRCS;DEPS" ${ARGN})
  if(A_SRCS)
    add_library(${name} STATIC ${A_SRCS})
    target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR})
    target_link_libraries(${name} PUBLIC ${A_DEPS})
    _sluice_common(${name})
  else()
    add_library(${name} INTERFACE)
    target_include_directories(${name} INTERFACE ${PROJECT_SOURCE_DIR})
    target_link_libraries(${name} INTERFACE ${A_DEPS})
  endif()
endfunction()

# sluice_cc_binary(NAME SRCS main.cc DEPS x y [OUTPUT_NAME n])
function(sluice_cc_binary name)
  cmake_parse_arguments(A "" "OUTPUT_NAME" "SRCS;DEPS" ${ARGN})
  add_executable(${name} ${A_SRCS})
  target_link_libraries(${name} PRIVATE ${A_DEPS})
  if(A_OUTPUT_NAME)
    set_target_properties(${name} PROPERTIES OUTPUT_NAME ${A_OUTPUT_NAME})
  endif()
  _sluice_common(${name})
endfunction()

# sluice_cc_test(NAME SRCS t.cc DEPS x y [LABELS l] [TIMEOUT s])
# Each TEST becomes one ctest entry; discovery runs at test time, not at build time.
function(sluice_cc_test name)
  cmake_parse_arguments(A "" "TIMEOUT" "SRCS;DEPS;LABELS" ${ARGN})
  add_executable(${name} ${A_SRCS})
  target_link_libraries(${name} PRIVATE ${A_DEPS} GTest::gmock GTest::gtest_main)
  _sluice_common(${name})
  if(NOT A_TIMEOUT)
    set(A_TIMEOUT 300)
  endif()
  gtest_discover_tests(${name}
    DISCOVERY_MODE PRE_TEST
    DISCOVERY_TIMEOUT 60
    PROPERTIES TIMEOUT ${A_TIMEOUT} LABELS "${A_LABELS}")
endfunction()
