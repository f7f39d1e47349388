# Helpers that give every project target the same flags.
include(GoogleTest)

# Warnings are errors on the project's own code; dependency headers come in
# as SYSTEM includes through their imported targets.
function(rlvr_target_options target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Werror -Wno-unused-parameter)
  if(RLVR_SANITIZE)
    target_compile_options(${target} PRIVATE -fsanitize=address,undefined -fno-omit-frame-pointer)
    target_link_options(${target} PRIVATE -fsanitize=address,undefined)
  endif()
  if(RLVR_FUZZ AND RLVR_FUZZ_ENGINE STREQUAL "libfuzzer")
    # libFuzzer's coverage in every library under test, not only the harness.
    # (Under AFL++ the compiler wrapper instruments every translation unit.)
    target_compile_options(${target} PRIVATE -fsanitize=fuzzer-no-link)
  endif()
endfunction()

# LibTorch as a usage requirement: include dirs as SYSTEM, its ABI flags.
add_library(rlvr_torch_deps INTERFACE)
target_include_directories(rlvr_torch_deps SYSTEM INTERFACE ${TORCH_INCLUDE_DIRS})
target_link_libraries(rlvr_torch_deps INTERFACE ${TORCH_LIBRARIES} Threads::Threads)
# -pthread (defines _REENTRANT) reaches most targets through gRPC/Abseil; the
# PCH must be built with it too or GCC rejects the PCH (-Winvalid-pch).
target_compile_options(rlvr_torch_deps INTERFACE ${RLVR_TORCH_CXX_FLAGS} -pthread)

# One precompiled LibTorch header, built once and reused by every target that
# includes torch (a translation unit with <torch/torch.h> costs ~15 s here).
add_library(rlvr_torch_pch OBJECT ${PROJECT_SOURCE_DIR}/cmake/pch_stub.cc)
target_link_libraries(rlvr_torch_pch PUBLIC rlvr_torch_deps)
rlvr_target_options(rlvr_torch_pch)
if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  target_precompile_headers(rlvr_torch_pch PRIVATE <torch/torch.h>)
endif()

function(rlvr_use_torch_pch target)
  # No PCH under clang (fuzz builds): clang 14 cannot compile LibTorch 1.13's
  # headers in C++20 mode at all (incomplete c10::IValue), so those builds only
  # build torch-free targets.
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    target_precompile_headers(${target} REUSE_FROM rlvr_torch_pch)
  endif()
endfunction()

# rlvr_add_test(NAME name SOURCES ... LIBS ... [LABELS ...] [TORCH] [TIMEOUT s])
# One gtest binary; each TEST becomes a CTest test, discovered when ctest runs.
function(rlvr_add_test)
  cmake_parse_arguments(T "TORCH" "NAME;TIMEOUT" "SOURCES;LIBS;LABELS" ${ARGN})
  add_executable(${T_NAME} ${T_SOURCES})
  target_link_libraries(${T_NAME} PRIVATE ${T_LIBS} GTest::gtest GTest::gmock GTest::gtest_main)
  rlvr_target_options(${T_NAME})
  if(T_TORCH)
    target_link_libraries(${T_NAME} PRIVATE rlvr_torch_deps)
    rlvr_use_torch_pch(${T_NAME})
  endif()
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 300)
  endif()
  if(NOT T_LABELS)
    set(T_LABELS unit)
  endif()
  # The environment goes in through an `env` wrapper: an ENVIRONMENT list
  # passed through gtest_discover_tests loses all but its first entry.
  set_target_properties(${T_NAME} PROPERTIES CROSSCOMPILING_EMULATOR
    "/usr/bin/env;RLVR_SOURCE_DIR=${PROJECT_SOURCE_DIR};RLVR_BINARY=$<TARGET_FILE:rlvr>;OMP_NUM_THREADS=1")
  gtest_discover_tests(${T_NAME}
    DISCOVERY_MODE PRE_TEST
    PROPERTIES TIMEOUT ${T_TIMEOUT} LABELS "${T_LABELS}")
endfunction()
