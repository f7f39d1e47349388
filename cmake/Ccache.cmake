# Use ccache when present. The sloppiness settings let ccache serve
# translation units that use the precompiled LibTorch header.
find_program(RLVR_CCACHE ccache)
if(RLVR_CCACHE)
  set(_rlvr_launcher ${CMAKE_COMMAND} -E env
      CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime
      CCACHE_BASEDIR=${CMAKE_SOURCE_DIR} CCACHE_NOHASHDIR=1 ${RLVR_CCACHE})
  set(CMAKE_CXX_COMPILER_LAUNCHER ${_rlvr_launcher})
  message(STATUS "rlvr: ccache enabled (${RLVR_CCACHE})")
else()
  message(STATUS "rlvr: ccache not found; builds will not be cached")
endif()
