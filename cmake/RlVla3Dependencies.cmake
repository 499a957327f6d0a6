# Every external dependency of rl-vla3, found once, exposed as imported targets.
# All of them come from Debian 12 packages (scripts/install_deps.sh).

find_package(Threads REQUIRED)
find_package(absl CONFIG REQUIRED)
find_package(spdlog CONFIG REQUIRED)
find_package(yaml-cpp CONFIG REQUIRED)
find_package(Protobuf REQUIRED)
find_package(gRPC CONFIG REQUIRED)
find_package(OpenSSL REQUIRED)  # TLS files checked at load (libssl-dev)
find_program(GRPC_CPP_PLUGIN grpc_cpp_plugin REQUIRED)

# prometheus-cpp (core: the metric families and their text format; the HTTP
# side is our own, see runtime/prometheus_endpoint.cc) is optional: a build
# without it (the GPU machine's package set) answers metrics.prometheus_port
# with an error. Only runtime/prometheus_endpoint.cc sees it.
find_package(prometheus-cpp CONFIG QUIET)
add_library(rlvla3_prometheus INTERFACE)
add_library(rlvla3::prometheus ALIAS rlvla3_prometheus)
if(prometheus-cpp_FOUND)
  target_link_libraries(rlvla3_prometheus INTERFACE prometheus-cpp::core)
  target_compile_definitions(rlvla3_prometheus INTERFACE RLVLA3_HAVE_PROMETHEUS=1)
else()
  message(STATUS "prometheus-cpp not found: no /metrics endpoint in this build")
endif()

# moodycamel::ConcurrentQueue is header-only (libconcurrentqueue-dev).
find_path(CONCURRENTQUEUE_INCLUDE_DIR concurrentqueue/concurrentqueue.h REQUIRED)
add_library(rlvla3_concurrentqueue INTERFACE)
add_library(moodycamel::concurrentqueue ALIAS rlvla3_concurrentqueue)
target_include_directories(rlvla3_concurrentqueue SYSTEM INTERFACE ${CONCURRENTQUEUE_INCLUDE_DIR})

# LibTorch: Debian's libtorch-dev (CPU) by default; with RLVLA3_WITH_CUDA the libtorch
# found through CMAKE_PREFIX_PATH (e.g. torch.utils.cmake_prefix_path) must have CUDA.
if(RLVLA3_WITH_CUDA)
  enable_language(CUDA)
endif()
if(RLVLA3_WITH_CUDA OR RLVLA3_WITH_NCCL)
  find_package(CUDAToolkit REQUIRED)
  find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS} REQUIRED)
  find_library(NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR} REQUIRED)
endif()
find_package(Torch CONFIG REQUIRED)
include(RlVla3TorchWheel)
add_library(rlvla3_torch INTERFACE)
add_library(rlvla3::torch ALIAS rlvla3_torch)
target_link_libraries(rlvla3_torch INTERFACE ${TORCH_LIBRARIES})
target_include_directories(rlvla3_torch SYSTEM INTERFACE ${TORCH_INCLUDE_DIRS})
separate_arguments(_torch_cxx_flags UNIX_COMMAND "${TORCH_CXX_FLAGS}")
target_compile_options(rlvla3_torch INTERFACE ${_torch_cxx_flags})
if(RLVLA3_WITH_CUDA)
  target_compile_definitions(rlvla3_torch INTERFACE RLVLA3_WITH_CUDA=1)
  target_link_libraries(rlvla3_torch INTERFACE CUDA::cudart ${NCCL_LIBRARY})
endif()

# MuJoCo 2.2.2; its CMake config needs libqhull-dev and libgl-dev installed.
find_package(mujoco CONFIG REQUIRED)
# Headless rendering through EGL (surfaceless Mesa llvmpipe, or NVIDIA's EGL on GPUs).
# Never link OSMesa into the same binary: MuJoCo's GL loader prefers EGL.
find_package(OpenGL REQUIRED COMPONENTS OpenGL EGL)
find_package(PNG REQUIRED)

if(RLVLA3_BUILD_TESTS)
  find_package(GTest CONFIG REQUIRED)
endif()
if(RLVLA3_BUILD_BENCHMARKS)
  find_package(benchmark CONFIG REQUIRED)
endif()

# The env pool from Python (envs/python): Debian's pybind11-dev, built for
# Debian's interpreter (/usr/bin/python3) where there is one, whatever python3
# comes first on PATH. Off in sanitizer builds and, with a warning, without
# pybind11.
if(RLVLA3_WITH_PYTHON AND RLVLA3_SANITIZER)
  set(RLVLA3_WITH_PYTHON OFF)
endif()
if(RLVLA3_WITH_PYTHON)
  if(NOT DEFINED PYTHON_EXECUTABLE AND EXISTS /usr/bin/python3)
    set(PYTHON_EXECUTABLE /usr/bin/python3)
  endif()
  find_package(pybind11 CONFIG QUIET)
  if(NOT pybind11_FOUND)
    message(WARNING "pybind11 not found (Debian: pybind11-dev): rlvla3_envs is not built")
    set(RLVLA3_WITH_PYTHON OFF)
  endif()
endif()
