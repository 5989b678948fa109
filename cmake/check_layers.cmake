# The layer check of the core (cmake -P): every #include "folder/file" of a file in src/core
# names its own layer or one below it, in the order of src/core/layers.txt, and the bindings
# (src/bindings) sit above every layer. A file that breaks the rule fails the build, named with
# its line and the two layers. Run by the build before the core compiles (CMakeLists.txt), and
# by tests/test_layers.py, which also shows that it fails on an upward include.
#   cmake -DSOURCE_DIR=<repository> [-DSTAMP=<file touched when every include is in order>] -P check_layers.cmake
cmake_minimum_required(VERSION 3.20)

set(core "${SOURCE_DIR}/src/core")
file(STRINGS "${core}/layers.txt" layers REGEX "^[a-z_]+$")
list(JOIN layers " < " order)

# The includes of `path` (relative to the repository) as "<line>:<included path>" entries.
function(includes_of path result)
  file(READ "${SOURCE_DIR}/${path}" content)
  string(REGEX MATCHALL "(^|\n)[ \t]*#[ \t]*include[ \t]*\"[^\"\n]*\"" found "${content}")
  set(entries)
  foreach(directive IN LISTS found)
    string(FIND "${content}" "${directive}" at)
    string(SUBSTRING "${content}" 0 ${at} before)
    string(REGEX MATCHALL "\n" newlines "${before}")
    list(LENGTH newlines line)
    if(directive MATCHES "^\n")
      math(EXPR line "${line} + 2")  # the newlines before it, its own, and lines count from 1
    else()
      math(EXPR line "${line} + 1")  # on the first line
    endif()
    string(REGEX REPLACE ".*\"([^\"]*)\"" "\\1" included "${directive}")
    list(APPEND entries "${line}:${included}")
  endforeach()
  set(${result} "${entries}" PARENT_SCOPE)
endfunction()

# The layer a path starts with ("window/route.hpp": window) and its place in the order (-1: none).
function(layer_of path name_var index_var)
  string(REGEX MATCH "^[^/]+/" name "${path}")
  string(REGEX REPLACE "/$" "" name "${name}")
  list(FIND layers "${name}" index)
  set(${name_var} "${name}" PARENT_SCOPE)
  set(${index_var} ${index} PARENT_SCOPE)
endfunction()

# An entry of includes_of: its line, the path it includes, and that path's layer.
macro(read_entry entry)
  string(REGEX REPLACE "^([0-9]+):.*" "\\1" line "${entry}")
  string(REGEX REPLACE "^[0-9]+:" "" included "${entry}")
  layer_of("${included}" target theirs)
endmacro()

set(failures)
file(GLOB_RECURSE core_files RELATIVE "${core}" "${core}/*.hpp" "${core}/*.cpp" "${core}/*.h" "${core}/*.c")
foreach(file IN LISTS core_files)
  layer_of("${file}" folder own)
  if(own EQUAL -1)
    list(APPEND failures "src/core/${file}: lies in no layer of src/core/layers.txt (${order})")
    continue()
  endif()
  includes_of("src/core/${file}" entries)
  foreach(entry IN LISTS entries)
    read_entry("${entry}")
    if(theirs EQUAL -1)
      if(EXISTS "${SOURCE_DIR}/src/bindings/${included}")
        list(APPEND failures "src/core/${file}:${line}: includes \"${included}\" of the bindings, which sit above every layer of the core")
      else()
        list(APPEND failures "src/core/${file}:${line}: includes \"${included}\", which names no layer of src/core/layers.txt (${order}): write \"<layer>/<file>\"")
      endif()
    elseif(theirs GREATER own)
      list(APPEND failures "src/core/${file}:${line}: includes \"${included}\": layer ${folder} must not include layer ${target}, which is above it (${order})")
    endif()
  endforeach()
endforeach()

# The bindings: any layer of the core, or a header of their own.
file(GLOB binding_files RELATIVE "${SOURCE_DIR}" "${SOURCE_DIR}/src/bindings/*.hpp" "${SOURCE_DIR}/src/bindings/*.cpp")
foreach(file IN LISTS binding_files)
  includes_of("${file}" entries)
  foreach(entry IN LISTS entries)
    read_entry("${entry}")
    if(theirs EQUAL -1 AND NOT EXISTS "${SOURCE_DIR}/src/bindings/${included}")
      list(APPEND failures "${file}:${line}: includes \"${included}\", neither a layer of the core (${order}) nor a header of the bindings")
    endif()
  endforeach()
endforeach()

if(failures)
  # One line each, unwrapped, so that an editor can jump to file:line.
  foreach(failure IN LISTS failures)
    message(NOTICE "${failure}")
  endforeach()
  list(LENGTH failures count)
  message(FATAL_ERROR "rma: ${count} include(s) above run against the core's layers (src/core/layers.txt)")
endif()
if(STAMP)
  file(TOUCH "${STAMP}")
endif()
