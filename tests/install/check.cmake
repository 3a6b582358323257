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
