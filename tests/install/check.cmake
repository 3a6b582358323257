# Installs the build in BUILD_DIR into a fresh prefix, then configures, builds and runs the
# consumer project against it (find_package(Sluice)). Run by ctest (tests/CMakeLists.txt):
#   cmake -DBUILD_DIR=... -DSOURCE_DIR=... -DWORK_DIR=... [-DGENERATOR=...] -P check.cmake
set(prefix ${WORK_DIR}/prefix)
file(REMOVE_RECURSE ${WORK_DIR})
function(run what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} failed (${rc}):\n${out}\n${err}")
  endif()
  message(STATUS "${what}: ${out}")
endfunction()
run("install" ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})
set(generator_args)
if(GENERATOR)
  set(generator_args -G ${GENERATOR})
endif()
run("configure the consumer" ${CMAKE_COMMAND} -S ${SOURCE_DIR}/tests/install/consumer
  -B ${WORK_DIR}/consumer ${generator_args} -DCMAKE_PREFIX_PATH=${prefix}
  -DCMAKE_BUILD_TYPE=Release)
run("build the consumer" ${CMAKE_COMMAND} --build ${WORK_DIR}/consumer --config Release)
set(consumer ${WORK_DIR}/consumer/consumer)
if(NOT EXISTS ${consumer})
  set(consumer ${WORK_DIR}/consumer/Release/consumer)  # a multi-config generator
endif()
run("run the consumer" ${consumer})
# The C ABI: the consumer's C program (find_package), and the same source built by the C
# compiler with nothing but what pkg-config says (sluice-c.pc).
set(consumer_c ${WORK_DIR}/consumer/consumer_c)
if(NOT EXISTS ${consumer_c})
  set(consumer_c ${WORK_DIR}/consumer/Release/consumer_c)
endif()
if(EXISTS ${consumer_c})
  run("run the C consumer" ${consumer_c})
  file(GLOB_RECURSE pc_files ${prefix}/*/sluice-c.pc)
  if(NOT pc_files)
    message(FATAL_ERROR "the C ABI is installed without its pkg-config file (sluice-c.pc)")
  endif()
  list(GET pc_files 0 pc_file)
  get_filename_component(pc_dir ${pc_file} DIRECTORY)
  set(ENV{PKG_CONFIG_PATH} ${pc_dir})
  execute_process(COMMAND pkg-config --cflags --libs sluice-c RESULT_VARIABLE rc
    OUTPUT_VARIABLE flags OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "pkg-config does not know sluice-c")
  endif()
  separate_arguments(flags UNIX_COMMAND "${flags}")
  get_filename_component(libdir ${pc_dir} DIRECTORY)
  run("build the C consumer with pkg-config" cc -std=c11 -Wall -Werror
    ${SOURCE_DIR}/tests/install/consumer/consumer_c.c ${flags} -Wl,-rpath,${libdir}
    -o ${WORK_DIR}/consumer_c_pkgconfig)
  run("run the C consumer built with pkg-config" ${WORK_DIR}/consumer_c_pkgconfig)
endif()
