# Compiler launcher, warnings and sanitizer flags shared by every target.

find_program(CCACHE_PROGRAM ccache)
if(CCACHE_PROGRAM)
  set(CMAKE_CXX_COMPILER_LAUNCHER ${CCACHE_PROGRAM})
  set(CMAKE_C_COMPILER_LAUNCHER ${CCACHE_PROGRAM})
endif()

add_compile_options(-Wall -Wextra -Wno-unused-parameter)

if(RLVLA3_SANITIZER STREQUAL "address")
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
elseif(RLVLA3_SANITIZER STREQUAL "thread")
  add_compile_options(-fsanitize=thread -fno-omit-frame-pointer)
  add_link_options(-fsanitize=thread)
elseif(NOT RLVLA3_SANITIZER STREQUAL "")
  message(FATAL_ERROR "RLVLA3_SANITIZER must be '', 'address' or 'thread', got '${RLVLA3_SANITIZER}'")
endif()

if(RLVLA3_BUILD_FUZZERS)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "RLVLA3_BUILD_FUZZERS needs clang (CC=clang CXX=clang++)")
  endif()
  # Coverage instrumentation everywhere; the fuzz binaries add -fsanitize=fuzzer.
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()

# Adds a library target named rlvla3_<name> with the alias rlvla3::<name>.
function(rlvla3_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;PUBLIC_DEPS;PRIVATE_DEPS" ${ARGN})
  add_library(rlvla3_${name} ${ARG_SOURCES})
  add_library(rlvla3::${name} ALIAS rlvla3_${name})
  target_include_directories(rlvla3_${name} PUBLIC ${PROJECT_SOURCE_DIR})
  target_link_libraries(rlvla3_${name} PUBLIC ${ARG_PUBLIC_DEPS} PRIVATE ${ARG_PRIVATE_DEPS})
endfunction()
