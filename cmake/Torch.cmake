# LibTorch, found one of two ways; both leave the same variables behind:
#   TORCH_INCLUDE_DIRS, TORCH_LIBRARIES, RLVR_TORCH_CXX_FLAGS (the ABI define),
#   RLVR_TORCH_DEFINITIONS, RLVR_TORCH_VERSION, and RLVR_HAVE_GLOO (whether
#   this LibTorch's c10d ProcessGroupGloo can be compiled against).
#
# 1. TorchConfig.cmake (default): Debian's libtorch-dev, or any LibTorch whose
#    config is on CMAKE_PREFIX_PATH.
# 2. RLVR_TORCH_ROOT=<dir with include/ and lib/> (the folder of a pip-installed
#    torch package, or a LibTorch zip): the libraries are imported by hand. The
#    GPU kit (scripts/gpu-check) uses this: a CUDA wheel's TorchConfig pulls in
#    the CUDA language, cuDNN and NVTX look-ups that the project does not need
#    and that fail on machines whose toolkit is laid out differently.
set(RLVR_TORCH_ROOT "" CACHE PATH
    "Import LibTorch from this folder (include/, lib/) instead of TorchConfig.cmake")
set(RLVR_TORCH_CXX11_ABI 1 CACHE STRING
    "_GLIBCXX_USE_CXX11_ABI of the LibTorch under RLVR_TORCH_ROOT (torch._C._GLIBCXX_USE_CXX11_ABI)")

if(RLVR_TORCH_ROOT)
  set(TORCH_INCLUDE_DIRS "${RLVR_TORCH_ROOT}/include"
                         "${RLVR_TORCH_ROOT}/include/torch/csrc/api/include")
  if(NOT EXISTS "${RLVR_TORCH_ROOT}/include/torch/torch.h"
     AND NOT EXISTS "${RLVR_TORCH_ROOT}/include/torch/csrc/api/include/torch/torch.h")
    message(FATAL_ERROR "rlvr: no torch/torch.h under RLVR_TORCH_ROOT=${RLVR_TORCH_ROOT}/include")
  endif()
  set(TORCH_LIBRARIES "")
  foreach(lib torch torch_cpu c10)
    find_library(RLVR_TORCH_LIB_${lib} ${lib} HINTS "${RLVR_TORCH_ROOT}/lib" NO_DEFAULT_PATH)
    if(NOT RLVR_TORCH_LIB_${lib})
      message(FATAL_ERROR "rlvr: lib${lib}.so not found under ${RLVR_TORCH_ROOT}/lib")
    endif()
    list(APPEND TORCH_LIBRARIES ${RLVR_TORCH_LIB_${lib}})
  endforeach()
  # The CUDA half, when this LibTorch has one. Nothing of the project calls
  # into it directly, but libtorch_cuda registers the CUDA backend when it is
  # loaded: it must stay a needed library even under --as-needed.
  set(RLVR_TORCH_CUDA_LIBRARIES "")
  foreach(lib torch_cuda c10_cuda)
    find_library(RLVR_TORCH_LIB_${lib} ${lib} HINTS "${RLVR_TORCH_ROOT}/lib" NO_DEFAULT_PATH)
    if(RLVR_TORCH_LIB_${lib})
      list(APPEND RLVR_TORCH_CUDA_LIBRARIES ${RLVR_TORCH_LIB_${lib}})
    endif()
  endforeach()
  if(RLVR_TORCH_CUDA_LIBRARIES)
    list(APPEND TORCH_LIBRARIES "-Wl,--no-as-needed" ${RLVR_TORCH_CUDA_LIBRARIES}
         "-Wl,--as-needed")
  endif()
  set(TORCH_CXX_FLAGS "-D_GLIBCXX_USE_CXX11_ABI=${RLVR_TORCH_CXX11_ABI}")
  set(RLVR_TORCH_DEFINITIONS USE_DISTRIBUTED)
  set(_rlvr_torch_how "imported from ${RLVR_TORCH_ROOT}")
else()
  find_package(Torch REQUIRED)
  set(RLVR_TORCH_DEFINITIONS "")
  set(_rlvr_torch_how "from TorchConfig.cmake")
endif()

# The version, from torch/version.h (both ways).
find_file(RLVR_TORCH_VERSION_H torch/version.h PATHS ${TORCH_INCLUDE_DIRS} NO_DEFAULT_PATH)
set(RLVR_TORCH_VERSION "unknown")
if(RLVR_TORCH_VERSION_H)
  file(STRINGS "${RLVR_TORCH_VERSION_H}" _rlvr_v REGEX "define TORCH_VERSION_(MAJOR|MINOR|PATCH) ")
  string(REGEX REPLACE ".*MAJOR ([0-9]+).*MINOR ([0-9]+).*PATCH ([0-9]+).*" "\\1.\\2.\\3"
         RLVR_TORCH_VERSION "${_rlvr_v}")
endif()

# c10d's ProcessGroupGloo needs Gloo's own headers, which pip's torch wheels do
# not ship (Debian ships them in libgloo-dev). Without them the Gloo
# communicator is compiled out and MakeCommunicator answers Unimplemented for
# "gloo" (single-GPU and NCCL runs do not need it).
set(RLVR_HAVE_GLOO OFF)
find_path(RLVR_GLOO_CONFIG_H gloo/config.h PATHS ${TORCH_INCLUDE_DIRS} NO_DEFAULT_PATH)
find_file(RLVR_C10D_GLOO_HPP torch/csrc/distributed/c10d/ProcessGroupGloo.hpp
          PATHS ${TORCH_INCLUDE_DIRS} NO_DEFAULT_PATH)
if(RLVR_GLOO_CONFIG_H AND RLVR_C10D_GLOO_HPP)
  set(RLVR_HAVE_GLOO ON)
  if(RLVR_TORCH_ROOT)
    list(APPEND RLVR_TORCH_DEFINITIONS USE_C10D_GLOO)
  endif()
endif()

# LibTorch's exported flags carry the ABI define; keep them but never its
# warnings settings on our code.
separate_arguments(RLVR_TORCH_CXX_FLAGS UNIX_COMMAND "${TORCH_CXX_FLAGS}")
message(STATUS "rlvr: LibTorch ${RLVR_TORCH_VERSION} ${_rlvr_torch_how}; Gloo communicator: ${RLVR_HAVE_GLOO}")
