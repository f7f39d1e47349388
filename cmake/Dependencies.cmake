# Every third-party dependency is found here, once.
find_package(Threads REQUIRED)
include(${CMAKE_CURRENT_LIST_DIR}/Torch.cmake)
find_package(Protobuf REQUIRED)
find_package(gRPC CONFIG REQUIRED)
find_package(absl CONFIG REQUIRED)
find_package(prometheus-cpp CONFIG REQUIRED)
find_package(glog REQUIRED)
find_package(yaml-cpp REQUIRED)
find_package(nlohmann_json REQUIRED)
find_package(ZLIB REQUIRED)
find_package(GTest REQUIRED)
find_package(benchmark QUIET)

# --- CUDA toolkit and NCCL -------------------------------------------------
# Debian's LibTorch is CPU-only; the project's own NCCL communicator is
# written against nccl.h and the CUDA runtime directly, so it compiles and
# links wherever the toolkit is present, and is selected at run time.
set(RLVR_HAVE_NCCL OFF)
set(RLVR_NCCL_ROOT "" CACHE PATH "NCCL (include/nccl.h, lib/libnccl.so*) when not in the CUDA toolkit")
if(NOT RLVR_WITH_CUDA STREQUAL "OFF")
  if(NOT CUDAToolkit_ROOT AND EXISTS /usr/local/cuda)
    set(CUDAToolkit_ROOT /usr/local/cuda)
  endif()
  find_package(CUDAToolkit QUIET)
  find_path(RLVR_NCCL_INCLUDE_DIR nccl.h
            HINTS ${RLVR_NCCL_ROOT}/include ${CUDAToolkit_INCLUDE_DIRS} /usr/local/cuda/include /usr/include)
  find_library(RLVR_NCCL_LIBRARY NAMES nccl libnccl.so.2
               HINTS ${RLVR_NCCL_ROOT}/lib ${CUDAToolkit_LIBRARY_DIR} /usr/local/cuda/lib64 /usr/lib/x86_64-linux-gnu)
  if(CUDAToolkit_FOUND AND RLVR_NCCL_INCLUDE_DIR AND RLVR_NCCL_LIBRARY)
    set(RLVR_HAVE_NCCL ON)
    add_library(rlvr_nccl_deps INTERFACE)
    target_include_directories(rlvr_nccl_deps SYSTEM INTERFACE ${RLVR_NCCL_INCLUDE_DIR})
    target_link_libraries(rlvr_nccl_deps INTERFACE CUDA::cudart ${RLVR_NCCL_LIBRARY})
    target_compile_definitions(rlvr_nccl_deps INTERFACE RLVR_HAVE_NCCL=1)
    message(STATUS "rlvr: CUDA ${CUDAToolkit_VERSION} and NCCL found; NCCL communicator enabled")
  elseif(RLVR_WITH_CUDA STREQUAL "ON")
    message(FATAL_ERROR "rlvr: RLVR_WITH_CUDA=ON but the CUDA toolkit or NCCL was not found")
  else()
    message(STATUS "rlvr: CUDA toolkit or NCCL not found; building without the NCCL communicator (Gloo only)")
  endif()
endif()
