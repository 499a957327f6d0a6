# A PyTorch wheel's LibTorch (the CUDA build: CMAKE_PREFIX_PATH from
# torch.utils.cmake_prefix_path) differs from Debian's in two ways the project
# copes with here, after find_package(Torch). Debian's libtorch-dev needs
# neither, and nothing changes for it.
#
# 1. Its include/ carries third-party headers of its own (fmt 12, an old
#    protobuf) beside ATen/c10/torch. As an include directory it shadows the
#    system's: spdlog (fmt 9) and the generated .pb.h (protobuf 3.21) fail to
#    compile. Every torch target's include root is replaced by a mirror of it,
#    in the build tree, that links everything but those.
# 2. Its libtorch_cpu.so exports libstdc++'s std::filesystem symbols, linked
#    into it statically from an older GCC (pytorch/pytorch#133437). When
#    libtorch comes before libstdc++ in an executable's DT_NEEDED, the
#    executable's own std::filesystem calls bind to those copies, whose
#    layout is not the system GCC's: they crash (SIGSEGV in remove_all).
#    libstdc++ is named first on every link line, so the dynamic linker finds
#    the system's copies first.

set(_rlvla3_torch_inc "${TORCH_INSTALL_PREFIX}/include")
set(_rlvla3_shadowing fmt google)
set(_rlvla3_found_shadowing FALSE)
# A wheel keeps its libraries in torch/lib beside torch/include; Debian's
# LibTorch lives in /usr, whose include/ is the system's own (never mirrored).
if(EXISTS "${TORCH_INSTALL_PREFIX}/lib/libtorch_cpu.so"
   AND NOT _rlvla3_torch_inc IN_LIST CMAKE_CXX_IMPLICIT_INCLUDE_DIRECTORIES
   AND NOT _rlvla3_torch_inc MATCHES "^/usr(/local)?/include$")
  foreach(_dir IN LISTS _rlvla3_shadowing)
    if(EXISTS "${_rlvla3_torch_inc}/${_dir}")
      set(_rlvla3_found_shadowing TRUE)
    endif()
  endforeach()
endif()

if(_rlvla3_found_shadowing)
  set(_mirror "${CMAKE_BINARY_DIR}/torch-include")
  file(REMOVE_RECURSE "${_mirror}")
  file(MAKE_DIRECTORY "${_mirror}")
  file(GLOB _entries RELATIVE "${_rlvla3_torch_inc}" "${_rlvla3_torch_inc}/*")
  foreach(_entry IN LISTS _entries)
    if(NOT _entry IN_LIST _rlvla3_shadowing)
      file(CREATE_LINK "${_rlvla3_torch_inc}/${_entry}" "${_mirror}/${_entry}" SYMBOLIC)
    endif()
  endforeach()
  # Paths under the wheel's include root, moved under the mirror.
  function(_rlvla3_mirror_paths out)
    string(LENGTH "${_rlvla3_torch_inc}" _n)
    set(_result)
    foreach(_p IN LISTS ARGN)
      string(FIND "${_p}" "${_rlvla3_torch_inc}" _at)
      if(_at EQUAL 0)
        string(SUBSTRING "${_p}" ${_n} -1 _rest)
        set(_p "${_mirror}${_rest}")
      endif()
      list(APPEND _result "${_p}")
    endforeach()
    set(${out} "${_result}" PARENT_SCOPE)
  endfunction()
  get_directory_property(_imported IMPORTED_TARGETS)
  foreach(_target IN LISTS _imported)
    get_target_property(_dirs ${_target} INTERFACE_INCLUDE_DIRECTORIES)
    if(_dirs)
      _rlvla3_mirror_paths(_dirs ${_dirs})
      set_target_properties(${_target} PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${_dirs}")
    endif()
  endforeach()
  _rlvla3_mirror_paths(TORCH_INCLUDE_DIRS ${TORCH_INCLUDE_DIRS})
  message(STATUS "LibTorch: include/ mirrored without ${_rlvla3_shadowing} (${_mirror})")
endif()

file(GLOB _rlvla3_torch_cpu "${TORCH_INSTALL_PREFIX}/lib/libtorch_cpu.so*")
if(_rlvla3_torch_cpu AND CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
  execute_process(COMMAND nm -D --defined-only ${_rlvla3_torch_cpu}
                  COMMAND grep -c "_ZNSt10filesystem"
                  OUTPUT_VARIABLE _fs_symbols OUTPUT_STRIP_TRAILING_WHITESPACE
                  ERROR_QUIET)
  if(_fs_symbols GREATER 0)
    add_link_options("SHELL:-Wl,--push-state,--no-as-needed -lstdc++ -Wl,--pop-state")
    message(STATUS "LibTorch exports ${_fs_symbols} std::filesystem symbols: "
                   "libstdc++ linked first")
  endif()
endif()
