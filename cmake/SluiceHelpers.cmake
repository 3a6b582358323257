# Small helpers so each component is one target and tests link targets, never sources.

set(SLUICE_WARNINGS -Wall -Wextra -Wnon-virtual-dtor -Wimplicit-fallthrough
  -Wno-missing-field-initializers)
if(SLUICE_WERROR)
  list(APPEND SLUICE_WARNINGS -Werror)
endif()

function(_sluice_common target)
  target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:${SLUICE_WARNINGS}>)
endfunction()

# The dependencies as given, but that each absl:: one is Debian's archives (sluice_absl_static)
# for a program whose SLUICE_STATIC_ABSL property is on, and the shared library for the rest.
function(_sluice_deps out)
  set(deps)
  foreach(dep ${ARGN})
    if(TARGET sluice_absl_static AND dep MATCHES "^absl::")
      set(static "$<BOOL:$<TARGET_PROPERTY:SLUICE_STATIC_ABSL>>")
      list(APPEND deps "$<IF:${static},$<BUILD_INTERFACE:sluice_absl_static>,${dep}>")
    else()
      list(APPEND deps ${dep})
    endif()
  endforeach()
  set(${out} ${deps} PARENT_SCOPE)
endfunction()

# sluice_cc_library(NAME SRCS a.cc b.cc DEPS x y)
# A library without sources becomes an INTERFACE (header-only) target.
function(sluice_cc_library name)
  cmake_parse_arguments(A "" "" "SRCS;DEPS" ${ARGN})
  _sluice_deps(A_DEPS ${A_DEPS})
  if(A_SRCS)
    add_library(${name} STATIC ${A_SRCS})
    target_include_directories(${name} PUBLIC
      $<BUILD_INTERFACE:${SLUICE_BUILD_INCLUDEDIR}> $<INSTALL_INTERFACE:${SLUICE_INSTALL_INCLUDEDIR}>)
    target_link_libraries(${name} PUBLIC ${A_DEPS})
    _sluice_common(${name})
  else()
    add_library(${name} INTERFACE)
    target_include_directories(${name} INTERFACE
      $<BUILD_INTERFACE:${SLUICE_BUILD_INCLUDEDIR}> $<INSTALL_INTERFACE:${SLUICE_INSTALL_INCLUDEDIR}>)
    target_link_libraries(${name} INTERFACE ${A_DEPS})
  endif()
endfunction()

# sluice_install_libraries(NAME...): installs the libraries in the Sluice export set, each as
# Sluice::<name without the sluice_ prefix> (cmake/SluiceConfig.cmake.in).
function(sluice_install_libraries)
  foreach(name ${ARGN})
    string(REGEX REPLACE "^sluice_" "" export_name ${name})
    set_target_properties(${name} PROPERTIES EXPORT_NAME ${export_name})
  endforeach()
  install(TARGETS ${ARGN} EXPORT SluiceTargets
    ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
endfunction()

# sluice_cc_binary(NAME SRCS main.cc DEPS x y [OUTPUT_NAME n])
function(sluice_cc_binary name)
  cmake_parse_arguments(A "" "OUTPUT_NAME" "SRCS;DEPS" ${ARGN})
  _sluice_deps(A_DEPS ${A_DEPS})
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

# sluice_grpc_proto(TARGET PROTO_DIR PROTO): a static library of the protobuf and gRPC C++
# generated from PROTO_DIR/PROTO (a path relative to PROTO_DIR, which is the import root).
function(sluice_grpc_proto target proto_dir proto)
  find_program(SLUICE_GRPC_CPP_PLUGIN grpc_cpp_plugin REQUIRED)
  get_filename_component(_stem ${proto} NAME_WE)
  get_filename_component(_rel_dir ${proto} DIRECTORY)
  set(_gen ${CMAKE_CURRENT_BINARY_DIR}/gen)
  set(_base ${_gen}/${_rel_dir}/${_stem})
  set(_outputs ${_base}.pb.cc ${_base}.pb.h ${_base}.grpc.pb.cc ${_base}.grpc.pb.h)
  add_custom_command(
    OUTPUT ${_outputs}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${_gen}
    COMMAND protobuf::protoc
      --proto_path=${proto_dir}
      --cpp_out=${_gen}
      --grpc_out=${_gen}
      --plugin=protoc-gen-grpc=${SLUICE_GRPC_CPP_PLUGIN}
      ${proto_dir}/${proto}
    DEPENDS ${proto_dir}/${proto}
    COMMENT "Generating C++ for ${proto}")
  add_library(${target} STATIC ${_base}.pb.cc ${_base}.grpc.pb.cc)
  target_include_directories(${target} PUBLIC
    $<BUILD_INTERFACE:${_gen}> $<INSTALL_INTERFACE:${SLUICE_INSTALL_INCLUDEDIR}>)
  target_link_libraries(${target} PUBLIC gRPC::grpc++ protobuf::libprotobuf)
endfunction()
