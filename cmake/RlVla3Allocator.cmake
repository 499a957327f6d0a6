# The heap allocator linked into every executable of the project (rl-vla3,
# tests, benchmarks): the one place where it is chosen.
#
#   cmake -B build -DRLVLA3_ALLOCATOR=tcmalloc   # default
#   cmake -B build -DRLVLA3_ALLOCATOR=glibc      # the C library's malloc
#
# Why not glibc: the learner and batched inference allocate and free tensors
# of hundreds of KiB to tens of MiB on every call. glibc serves those with
# mmap/munmap (and trims its heap top), so every call faults the pages back in;
# measured here, that halves learner throughput and makes inference slower per
# observation as the batch grows. tcmalloc keeps freed spans for reuse and is
# good with its defaults (jemalloc needs its decay options to match it).
# Sanitizer builds keep the sanitizer's own allocator.
set(RLVLA3_ALLOCATOR "tcmalloc" CACHE STRING "Heap allocator: tcmalloc, jemalloc, mimalloc or glibc")
set_property(CACHE RLVLA3_ALLOCATOR PROPERTY STRINGS tcmalloc jemalloc mimalloc glibc)

set(_rlvla3_allocator "${RLVLA3_ALLOCATOR}")
if(NOT RLVLA3_SANITIZER STREQUAL "" AND NOT _rlvla3_allocator STREQUAL "glibc")
  message(STATUS "rl-vla3 allocator: glibc (the ${RLVLA3_SANITIZER} sanitizer replaces malloc)")
  set(_rlvla3_allocator "glibc")
endif()

set(RLVLA3_ALLOCATOR_IN_USE "${_rlvla3_allocator}")  # what tests expect

if(_rlvla3_allocator STREQUAL "tcmalloc")
  # libgoogle-perftools-dev; the minimal flavour has no heap profiler hooks.
  find_library(RLVLA3_ALLOCATOR_LIBRARY NAMES tcmalloc_minimal tcmalloc REQUIRED)
elseif(_rlvla3_allocator STREQUAL "jemalloc")
  find_library(RLVLA3_ALLOCATOR_LIBRARY NAMES jemalloc REQUIRED)  # libjemalloc-dev
elseif(_rlvla3_allocator STREQUAL "mimalloc")
  find_library(RLVLA3_ALLOCATOR_LIBRARY NAMES mimalloc REQUIRED)  # libmimalloc-dev
elseif(NOT _rlvla3_allocator STREQUAL "glibc")
  message(FATAL_ERROR "RLVLA3_ALLOCATOR must be tcmalloc, jemalloc, mimalloc or glibc, got '${RLVLA3_ALLOCATOR}'")
endif()

if(NOT _rlvla3_allocator STREQUAL "glibc")
  message(STATUS "rl-vla3 allocator: ${_rlvla3_allocator} (${RLVLA3_ALLOCATOR_LIBRARY})")
  # Kept even where the linker drops unreferenced libraries: the allocator is
  # used through malloc/free, which it interposes.
  # One SHELL: group: CMake de-duplicates separate link options, and a second
  # "--push-state,--no-as-needed" (the wheel's libstdc++ one) would be dropped,
  # leaving the allocator to an --as-needed linker (Ubuntu's default).
  add_link_options(
    "SHELL:-Wl,--push-state,--no-as-needed ${RLVLA3_ALLOCATOR_LIBRARY} -Wl,--pop-state")
endif()
