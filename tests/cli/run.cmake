# Runs one command and checks its exit status exactly, and optionally its output:
#
#   cmake -DEXPECT_EXIT=<n> [-DSTDOUT_MATCHES=<regex>] [-DSTDERR_MATCHES=<regex>]
#         [-DOUTPUT_NOT_MATCHES=<regex>] -P run.cmake -- <program> <args>...
#
# Why not add_test + WILL_FAIL or PASS_REGULAR_EXPRESSION: WILL_FAIL passes on any non-zero
# status and PASS_REGULAR_EXPRESSION ignores the status, so a crash could count as a pass. Here
# a crash makes execute_process report a text such as "Segmentation fault", which never equals
# EXPECT_EXIT. OUTPUT_NOT_MATCHES is checked against stdout and stderr together.
if(NOT DEFINED EXPECT_EXIT)
  message(FATAL_ERROR "run.cmake: set -DEXPECT_EXIT=<status>")
endif()

# The command is everything after "--" on cmake's own command line.
include(${CMAKE_CURRENT_LIST_DIR}/command_after_dashes.cmake)
attograd_command_after_dashes(command)
list(LENGTH command command_length)
if(command_length EQUAL 0)  # not if(NOT command): that is true for a command named "false"
  message(FATAL_ERROR "run.cmake: no command after --")
endif()

execute_process(COMMAND ${command} RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
string(JOIN " " shown ${command})
set(report "command: ${shown}\nexit status: ${status}\n--- stdout\n${out}--- stderr\n${err}---")

if(NOT status STREQUAL "${EXPECT_EXIT}")
  message(FATAL_ERROR "expected exit status ${EXPECT_EXIT}\n${report}")
endif()
if(DEFINED STDOUT_MATCHES AND NOT out MATCHES "${STDOUT_MATCHES}")
  message(FATAL_ERROR "stdout does not match '${STDOUT_MATCHES}'\n${report}")
endif()
if(DEFINED STDERR_MATCHES AND NOT err MATCHES "${STDERR_MATCHES}")
  message(FATAL_ERROR "stderr does not match '${STDERR_MATCHES}'\n${report}")
endif()
if(DEFINED OUTPUT_NOT_MATCHES AND "${out}${err}" MATCHES "${OUTPUT_NOT_MATCHES}")
  message(FATAL_ERROR "output matches '${OUTPUT_NOT_MATCHES}', which it must not\n${report}")
endif()
message(STATUS "ok: ${shown} exited ${status}")
