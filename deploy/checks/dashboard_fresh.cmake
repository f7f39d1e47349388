# Fails when deploy/grafana/rlvr-dashboard.json differs from what
# deploy/grafana/generate_dashboard.py writes (edit the generator, re-run it).
find_program(PYTHON3 python3 REQUIRED)
execute_process(COMMAND ${PYTHON3} ${GENERATOR} ${OUT} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "generate_dashboard.py failed (${rc})")
endif()
file(READ ${COMMITTED} committed)
file(READ ${OUT} generated)
if(NOT committed STREQUAL generated)
  message(FATAL_ERROR "${COMMITTED} is stale: run python3 deploy/grafana/generate_dashboard.py")
endif()
message(STATUS "rlvr-dashboard.json matches generate_dashboard.py")
