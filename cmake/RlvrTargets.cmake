# Helpers that give every project target the same flags.
include(GoogleTest)

# Warnings are errors on the project's own code; dependency headers come in
# as SYSTEM includes through their imported targets.
function(rlvr_target_options target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Werror -Wno-unused-parameter)
  # GCC 13 and later report -Warray-bounds and -Wstringop-overflow false
  # positives in libstdc++ code that LibTorch's headers inline into ours
  # (GCC 14: std::vector<bool>::reserve in torch/csrc/autograd/custom_function.h).
  # Debian's GCC 12 does not; on newer compilers they stay warnings.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_GREATER_EQUAL 13)
    target_compile_options(${target} PRIVATE -Wno-error=array-bounds -Wno-error=stringop-overflow)
  endif()
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
target_compile_definitions(rlvr_torch_deps INTERFACE ${RLVR_TORCH_DEFINITIONS})

# One precompiled LibTorch header, built once and reused by every target that
# includes torch (a translation unit with <torch/torch.h> costs ~15 s here).
add_library(rlvr_torch_pch OBJECT ${PROJECT_SOURCE_DIR}/cmake/pch_stub.cc)
target_link_libraries(rlvr_torch_pch PUBLIC rlvr_torch_deps)
rlvr_target_options(rlvr_torch_pch)
if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  target_precompile_headers(rlvr_torch_pch PRIVATE <torch/torch.h>)
endif()

# Sets `out` to TRUE if `file` includes LibTorch (<torch/...>, <ATen/...>,
# <c10/...>), directly or through the project's own headers ("dir/x.h" found
# under the source root or beside the file). Results are cached per file in
# global properties; a file being scanned counts as torch-free while its own
# scan runs, which ends include cycles.
function(_rlvr_includes_torch file out)
  get_property(known GLOBAL PROPERTY "RLVR_TORCH_SCAN:${file}" SET)
  if(known)
    get_property(result GLOBAL PROPERTY "RLVR_TORCH_SCAN:${file}")
    set(${out} ${result} PARENT_SCOPE)
    return()
  endif()
  set_property(GLOBAL PROPERTY "RLVR_TORCH_SCAN:${file}" FALSE)
  file(STRINGS "${file}" lines REGEX "^[ \t]*#[ \t]*include[ \t]*[<\"]")
  get_filename_component(dir "${file}" DIRECTORY)
  set(result FALSE)
  foreach(line IN LISTS lines)
    if(line MATCHES "<(torch|ATen|c10)/")
      set(result TRUE)
    elseif(line MATCHES "\"([^\"]+)\"")
      set(name "${CMAKE_MATCH_1}")
      foreach(base IN ITEMS "${PROJECT_SOURCE_DIR}" "${dir}")
        cmake_path(ABSOLUTE_PATH name BASE_DIRECTORY "${base}" NORMALIZE OUTPUT_VARIABLE header)
        if(EXISTS "${header}" AND NOT IS_DIRECTORY "${header}")
          _rlvr_includes_torch("${header}" result)
          break()
        endif()
      endforeach()
    endif()
    if(result)
      break()
    endif()
  endforeach()
  set_property(GLOBAL PROPERTY "RLVR_TORCH_SCAN:${file}" ${result})
  set(${out} ${result} PARENT_SCOPE)
endfunction()

# Reuses the LibTorch PCH in `target`, for the sources that include torch
# (directly or through project headers). Loading the PCH is not free: a
# torch-free translation unit compiled with it cost 30 s of CPU here against
# 11 s without, while a torch one costs 20 s with it against 44 s without; so
# the target's torch-free sources (at the time of the call) skip it.
function(rlvr_use_torch_pch target)
  # No PCH under clang (fuzz builds): clang 14 cannot compile LibTorch 1.13's
  # headers in C++20 mode at all (incomplete c10::IValue), so those builds only
  # build torch-free targets.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    return()
  endif()
  target_precompile_headers(${target} REUSE_FROM rlvr_torch_pch)
  get_target_property(sources ${target} SOURCES)
  get_target_property(source_dir ${target} SOURCE_DIR)
  foreach(source IN LISTS sources)
    cmake_path(ABSOLUTE_PATH source BASE_DIRECTORY "${source_dir}" NORMALIZE OUTPUT_VARIABLE path)
    if(path MATCHES "\\.(cc|cpp)$" AND EXISTS "${path}")
      _rlvr_includes_torch("${path}" torch)
      if(NOT torch)
        set_source_files_properties("${path}" TARGET_DIRECTORY ${target}
                                    PROPERTIES SKIP_PRECOMPILE_HEADERS ON)
      endif()
    endif()
  endforeach()
endfunction()

# rlvr_add_test(NAME name SOURCES ... LIBS ... [LABELS ...] [TORCH] [TIMEOUT s]
#               [FIXTURE fixture] [GPU_TESTS pattern...])
# One gtest binary; each TEST becomes a CTest test, discovered when ctest runs.
# FIXTURE: a CTest fixture every test of the binary requires (data fetched by a
# setup test, e.g. rlvr_tokenizer_files), so ctest runs the setup first and
# does not run the tests when it fails. One only: gtest_discover_tests keeps
# only the first element of a list-valued property.
# The label gpu marks tests that need a GPU and skip without one:
# scripts/check-skips allows exactly these skips, on a machine without a GPU.
# LABELS gpu labels the whole binary; GPU_TESTS labels gpu only the tests of
# the binary that match one of the patterns (gtest filter syntax:
# Suite.Name, * and ?), the others keep LABELS.
function(rlvr_add_test)
  cmake_parse_arguments(T "TORCH" "NAME;TIMEOUT;FIXTURE" "SOURCES;LIBS;LABELS;GPU_TESTS" ${ARGN})
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
  # Listing a LibTorch binary's tests loads LibTorch: under load that takes
  # longer than gtest_discover_tests' default 5 s, which would abort ctest.
  set(discovery DISCOVERY_MODE PRE_TEST DISCOVERY_TIMEOUT 120)
  set(fixture)
  if(T_FIXTURE)
    set(fixture FIXTURES_REQUIRED ${T_FIXTURE})
  endif()
  if(T_GPU_TESTS)
    list(JOIN T_GPU_TESTS ":" gpu_filter)
    gtest_discover_tests(${T_NAME} ${discovery} TEST_FILTER "-${gpu_filter}"
      PROPERTIES TIMEOUT ${T_TIMEOUT} LABELS "${T_LABELS}" ${fixture})
    gtest_discover_tests(${T_NAME} ${discovery} TEST_FILTER "${gpu_filter}"
      PROPERTIES TIMEOUT ${T_TIMEOUT} LABELS gpu ${fixture})
  else()
    gtest_discover_tests(${T_NAME} ${discovery}
      PROPERTIES TIMEOUT ${T_TIMEOUT} LABELS "${T_LABELS}" ${fixture})
  endif()
endfunction()
