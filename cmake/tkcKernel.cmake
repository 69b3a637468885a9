# tkcKernel.cmake - tkc_add_kernel(): .tk programs compiled by tkc at build time and linked into
# a target. Loaded by tkcConfig.cmake (find_package(tkc)), which defines tkc::tkc first.
#
#   tkc_add_kernel(<target> SOURCES a.tk [b.tk ...] [DEFINES NAME=VALUE ...] [DISPATCH table] [HEADERS])
#
# For each a.tk (relative paths are relative to CMAKE_CURRENT_SOURCE_DIR), at build time:
#   tkc a.tk [-D NAME=VALUE ...] -o <dir>/a.cu -MD -MF <dir>/a.cu.d
# where <dir> is ${CMAKE_CURRENT_BINARY_DIR}/tkc/<target>. The depfile names a.tk and every file
# it imports, so touching any of them regenerates a.cu (and nothing else); a new tkc (its binary
# is a dependency too) regenerates everything. With HEADERS, also <dir>/a.h from
# tkc --emit=header. With DISPATCH, every source is compiled with `--dispatch table` (relative to
# CMAKE_CURRENT_SOURCE_DIR): the table's variants behind launchers that pick one at launch; the
# depfile names the table, so editing it regenerates the files.
# The .cu files compile in an object library <target>_tkc with nvcc for sm_90a only
# (-gencode=arch=compute_90a,code=sm_90a), whatever CUDA_ARCHITECTURES the rest of the project
# uses, and its objects go into <target>. <dir> is on <target>'s include path (PUBLIC for
# libraries, build tree only). Properties set on <target>: TKC_OUTPUT_DIR (<dir>),
# TKC_GENERATED_SOURCES (the .cu files), TKC_GENERATED_HEADERS (the headers written).
# Needs CUDA enabled in the project: project(... LANGUAGES CXX CUDA) or enable_language(CUDA).
# Calling it again for the same target adds more sources (one output name per target).
include_guard(GLOBAL)

# A function runs under the policies in effect where it is defined: CMP0116 NEW (3.20) makes the
# Ninja generator read paths in DEPFILEs relative to the build directory, which is what tkc writes
# here anyway (every path it sees is absolute).
cmake_policy(VERSION 3.20...3.28)

function(tkc_add_kernel target)
  cmake_parse_arguments(PARSE_ARGV 1 arg "HEADERS" "DISPATCH" "SOURCES;DEFINES")
  set(me "tkc_add_kernel(${target})")
  if(arg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "${me}: unexpected arguments: ${arg_UNPARSED_ARGUMENTS} "
                        "(expected SOURCES a.tk ... [DEFINES NAME=VALUE ...] [DISPATCH table] [HEADERS])")
  endif()
  if(NOT arg_SOURCES)
    message(FATAL_ERROR "${me}: no SOURCES")
  endif()
  if(NOT TARGET tkc::tkc)
    message(FATAL_ERROR "${me}: tkc::tkc is not defined (find_package(tkc) first)")
  endif()
  if(NOT TARGET ${target})
    message(FATAL_ERROR "${me}: '${target}' is not a target (add_executable or add_library first)")
  endif()
  get_target_property(type ${target} TYPE)
  get_target_property(imported ${target} IMPORTED)
  if(imported OR NOT type MATCHES "^(EXECUTABLE|STATIC_LIBRARY|SHARED_LIBRARY|MODULE_LIBRARY)$")
    message(FATAL_ERROR "${me}: '${target}' must be an executable or a static, shared or module "
                        "library of this project")
  endif()
  get_property(languages GLOBAL PROPERTY ENABLED_LANGUAGES)
  if(NOT "CUDA" IN_LIST languages)
    message(FATAL_ERROR "${me}: CUDA is not enabled; use project(... LANGUAGES CXX CUDA) or "
                        "enable_language(CUDA) before calling it")
  endif()

  set(tkc_args)
  foreach(d IN LISTS arg_DEFINES)
    if(NOT d MATCHES "^[A-Za-z_][A-Za-z0-9_]*=.+$")
      message(FATAL_ERROR "${me}: bad DEFINES entry '${d}' (expected NAME=VALUE)")
    endif()
    list(APPEND tkc_args -D "${d}")
  endforeach()
  set(table_dep)
  if(arg_DISPATCH)
    get_filename_component(table "${arg_DISPATCH}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
    if(NOT EXISTS "${table}")
      message(FATAL_ERROR "${me}: no such dispatch table: ${table}")
    endif()
    list(APPEND tkc_args --dispatch "${table}")
    set(table_dep "${table}")
  endif()

  set(dir "${CMAKE_CURRENT_BINARY_DIR}/tkc/${target}")
  file(MAKE_DIRECTORY "${dir}")
  set(obj ${target}_tkc)
  if(TARGET ${obj})
    get_target_property(owner ${obj} _TKC_OWNER)
    if(NOT owner STREQUAL target)
      message(FATAL_ERROR "${me}: a target named '${obj}' exists already")
    endif()
  else()
    # the generated CUDA is for sm_90a only (wgmma, setmaxnreg); CUDA_ARCHITECTURES OFF keeps the
    # project's architectures off these files, and the flag works with every CMake >= 3.18
    add_library(${obj} OBJECT)
    set_target_properties(${obj} PROPERTIES
      _TKC_OWNER ${target}
      CUDA_ARCHITECTURES OFF
      CUDA_STANDARD 17
      CUDA_STANDARD_REQUIRED ON)
    target_compile_options(${obj} PRIVATE
      "$<$<COMPILE_LANGUAGE:CUDA>:-gencode=arch=compute_90a,code=sm_90a>")
    if(type MATCHES "^(SHARED|MODULE)_LIBRARY$")
      set_property(TARGET ${obj} PROPERTY POSITION_INDEPENDENT_CODE ON)
    else()
      get_target_property(pic ${target} POSITION_INDEPENDENT_CODE)
      if(pic)
        set_property(TARGET ${obj} PROPERTY POSITION_INDEPENDENT_CODE ON)
      endif()
    endif()
    target_sources(${target} PRIVATE "$<TARGET_OBJECTS:${obj}>")
    if(type STREQUAL "EXECUTABLE")
      target_include_directories(${target} PRIVATE "${dir}")
    else()
      target_include_directories(${target} PUBLIC "$<BUILD_INTERFACE:${dir}>")
    endif()
    set_property(TARGET ${target} PROPERTY TKC_OUTPUT_DIR "${dir}")
  endif()

  foreach(s IN LISTS arg_SOURCES)
    get_filename_component(src "${s}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
    get_filename_component(name "${src}" NAME_WLE)
    if(NOT EXISTS "${src}")
      message(FATAL_ERROR "${me}: no such file: ${src}")
    endif()
    get_property(taken TARGET ${target} PROPERTY _TKC_NAMES)
    if(name IN_LIST taken)
      message(FATAL_ERROR "${me}: two sources would both write ${dir}/${name}.cu (${src})")
    endif()
    set_property(TARGET ${target} APPEND PROPERTY _TKC_NAMES "${name}")

    set(cu "${dir}/${name}.cu")
    file(RELATIVE_PATH shown "${CMAKE_BINARY_DIR}" "${cu}")
    add_custom_command(
      OUTPUT "${cu}"
      COMMAND tkc::tkc "${src}" ${tkc_args} -o "${cu}" -MD -MF "${cu}.d"
      DEPENDS "${src}" ${table_dep} "$<TARGET_FILE:tkc::tkc>"
      DEPFILE "${cu}.d"
      WORKING_DIRECTORY "${CMAKE_CURRENT_BINARY_DIR}"
      COMMENT "tkc ${s} -> ${shown}"
      VERBATIM)
    target_sources(${obj} PRIVATE "${cu}")
    set_property(TARGET ${target} APPEND PROPERTY TKC_GENERATED_SOURCES "${cu}")

    if(arg_HEADERS)
      set(h "${dir}/${name}.h")
      file(RELATIVE_PATH shown "${CMAKE_BINARY_DIR}" "${h}")
      add_custom_command(
        OUTPUT "${h}"
        COMMAND tkc::tkc "${src}" ${tkc_args} --emit=header -o "${h}" -MD -MF "${h}.d"
        DEPENDS "${src}" ${table_dep} "$<TARGET_FILE:tkc::tkc>"
        DEPFILE "${h}.d"
        WORKING_DIRECTORY "${CMAKE_CURRENT_BINARY_DIR}"
        COMMENT "tkc --emit=header ${s} -> ${shown}"
        VERBATIM)
      # a source of the object library: <target>'s own files compile after it is written
      target_sources(${obj} PRIVATE "${h}")
      set_property(TARGET ${target} APPEND PROPERTY TKC_GENERATED_HEADERS "${h}")
    endif()
  endforeach()
endfunction()
