# Checks that includes follow the layers (docs/architecture.md):
#
#   base, kernels, proto -> engine -> server | client -> ifds, workloads -> analyzer -> tools
#
# Every include of the tree's own headers names them under the project's prefix, as installed
# ("sluice/client/remote_dispatch.h"), in tests, benchmarks and fuzzers too. Each folder may
# include only the folders listed for it below; client/ may include engine/
# only from local_dispatch.*; a public client header may include nothing from kernels/ but the
# grid and kernel ids (no body, no catalog), and reaches no kernel body through anything it
# includes, however indirectly (what a user of the client library compiles); gRPC and the
# generated wire code stay out of base/, kernels/ and engine/.
# Run by ctest:  cmake -DSOURCE_DIR=... -P cmake/CheckLayers.cmake
# Exits with an error listing every include that breaks a rule.
cmake_minimum_required(VERSION 3.25)
if(NOT SOURCE_DIR)
  message(FATAL_ERROR "usage: cmake -DSOURCE_DIR=<tree> -P CheckLayers.cmake")
endif()

# What each folder may include (its own folder is always allowed).
set(allowed_base "")
set(allowed_kernels "base")
set(allowed_proto "base;kernels")
set(allowed_engine "base;kernels;proto")
set(allowed_server "base;kernels;proto;engine")
set(allowed_client "base;kernels;proto;engine")
set(allowed_ifds "base;kernels;client")
set(allowed_workloads "base;kernels;client")
set(allowed_analyzer "base;ifds")
set(allowed_tools "base;kernels;proto;engine;client;ifds;workloads;analyzer")
set(layers base kernels proto engine server client ifds workloads analyzer tools)
# Folders of the tree an include may name; anything else (absl/, grpcpp/, gtest/...) is a
# library, checked only where it must not appear.
set(tree_folders ${layers} bench tests)

set(violations "")
# An include's path in the tree: "sluice/<folder>/..." names <folder>/...; "sluice/v1/" is the
# generated wire code, not the tree.
function(tree_path include out)
  if(include MATCHES "^sluice/" AND NOT include MATCHES "^sluice/v1/")
    string(REGEX REPLACE "^sluice/" "" include "${include}")
  endif()
  set(${out} "${include}" PARENT_SCOPE)
endfunction()

# Includes of the product's folders without the prefix, wherever they are.
set(everything "")
foreach(folder ${layers} tests bench fuzz)
  file(GLOB_RECURSE sources RELATIVE ${SOURCE_DIR} ${SOURCE_DIR}/${folder}/*.h
    ${SOURCE_DIR}/${folder}/*.cc ${SOURCE_DIR}/${folder}/*.cu ${SOURCE_DIR}/${folder}/*.c)
  list(APPEND everything ${sources})
endforeach()
foreach(source ${everything})
  if(source MATCHES "^tests/(layers|install/consumer)/")  # broken trees; a project outside
    continue()
  endif()
  file(STRINGS ${SOURCE_DIR}/${source} includes REGEX "^[ \t]*#[ \t]*include[ \t]*\"")
  foreach(line ${includes})
    string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*\"([^\"]*)\".*$" "\\1" path "${line}")
    string(REGEX MATCH "^[^/]*" top "${path}")
    if(top IN_LIST layers)
      string(APPEND violations "  ${source}: #include \"${path}\": the tree's headers are "
        "named as installed, \"sluice/${path}\"\n")
    endif()
  endforeach()
endforeach()

foreach(layer ${layers})
  file(GLOB_RECURSE sources RELATIVE ${SOURCE_DIR}
    ${SOURCE_DIR}/${layer}/*.h ${SOURCE_DIR}/${layer}/*.cc ${SOURCE_DIR}/${layer}/*.cu)
  foreach(source ${sources})
    file(STRINGS ${SOURCE_DIR}/${source} includes REGEX "^[ \t]*#[ \t]*include[ \t]*[\"<]")
    foreach(line ${includes})
      string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*[\"<]([^\">]*)[\">].*$" "\\1" path "${line}")
      tree_path("${path}" path)
      string(REGEX MATCH "^[^/]*" top "${path}")
      set(problem "")
      if(top IN_LIST tree_folders AND NOT top STREQUAL layer)
        if(NOT top IN_LIST allowed_${layer})
          set(problem "${layer}/ may not include ${top}/")
        elseif(layer STREQUAL "client" AND top STREQUAL "engine"
               AND NOT source MATCHES "^client/local_dispatch\\.(h|cc)$")
          set(problem "only client/local_dispatch may include the engine")
        elseif(layer STREQUAL "client" AND top STREQUAL "kernels" AND source MATCHES "\\.h$"
               AND NOT path MATCHES "^kernels/(grid|kernel_id)\\.h$")
          set(problem "a public client header may include nothing from kernels/ but the grid and kernel ids")
        endif()
      endif()
      if(layer MATCHES "^(base|kernels|engine)$" AND path MATCHES "^(grpcpp|grpc|google/protobuf|sluice/v1)/")
        set(problem "${layer}/ knows nothing of gRPC or the wire")
      endif()
      if(problem)
        string(APPEND violations "  ${source}: #include \"${path}\": ${problem}\n")
      endif()
    endforeach()
  endforeach()
endforeach()

# The tree's includes of `file` (paths relative to SOURCE_DIR that exist there), into `out`.
function(tree_includes file out)
  file(STRINGS ${SOURCE_DIR}/${file} lines REGEX "^[ \t]*#[ \t]*include[ \t]*\"")
  set(found "")
  foreach(line ${lines})
    string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*\"([^\"]*)\".*$" "\\1" path "${line}")
    tree_path("${path}" path)
    if(EXISTS ${SOURCE_DIR}/${path})
      list(APPEND found ${path})
    endif()
  endforeach()
  set(${out} ${found} PARENT_SCOPE)
endfunction()

# Every public client header's transitive includes: none is a kernel body.
file(GLOB public_headers RELATIVE ${SOURCE_DIR} ${SOURCE_DIR}/client/*.h)
foreach(header ${public_headers})
  set(seen ${header})
  set(queue ${header})
  set(via_${header} "")
  while(queue)
    list(POP_FRONT queue file)
    tree_includes(${file} children)
    foreach(child ${children})
      if(NOT child IN_LIST seen)
        list(APPEND seen ${child})
        list(APPEND queue ${child})
        set(via_${child} "${via_${file}} -> ${child}")
        if(child MATCHES "^kernels/bodies(/|\\.h$)")
          string(APPEND violations "  ${header}${via_${child}}: a public client header reaches "
            "a kernel body\n")
        endif()
      endif()
    endforeach()
  endwhile()
endforeach()

if(violations)
  message(FATAL_ERROR "includes that break the layers:\n${violations}")
endif()
message(STATUS "every include follows the layers")
