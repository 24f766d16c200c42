# Keeps README.md true: the README shows tests/cli/readme_example.cpp and its output between
# marker comments, and this script checks both against the real file and a real run.
#
#   cmake -DREADME=README.md -DSOURCE=tests/cli/readme_example.cpp -DEXAMPLE=<built program>
#         -P check_readme.cmake
#
# Markers in the README (each around one fenced code block):
#   <!-- begin readme_example.cpp --> ... <!-- end readme_example.cpp -->
#   <!-- begin readme_example output --> ... <!-- end readme_example output -->
#
# The same for any command's output, in the block marked "<!-- begin NAME -->":
#   cmake -DREADME=README.md -DBLOCK=NAME -P check_readme.cmake -- <command>...
foreach(var README)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "check_readme.cmake: set -D${var}=...")
  endif()
endforeach()

# The body of the fenced block between "<!-- begin NAME -->" and "<!-- end NAME -->".
function(readme_block text name out)
  set(begin_marker "<!-- begin ${name} -->\n")
  string(FIND "${text}" "${begin_marker}" begin)
  string(FIND "${text}" "<!-- end ${name} -->" end)
  if(begin EQUAL -1 OR end EQUAL -1 OR end LESS begin)
    message(FATAL_ERROR "${README}: no block marked '<!-- begin ${name} -->' ... '<!-- end ${name} -->'")
  endif()
  string(LENGTH "${begin_marker}" marker_length)
  math(EXPR start "${begin} + ${marker_length}")
  math(EXPR length "${end} - ${start}")
  string(SUBSTRING "${text}" ${start} ${length} body)
  string(REGEX REPLACE "^```[a-z]*\n" "" body "${body}")
  string(REGEX REPLACE "```\n$" "" body "${body}")
  set(${out} "${body}" PARENT_SCOPE)
endfunction()

file(READ "${README}" readme)

if(DEFINED BLOCK)
  include(${CMAKE_CURRENT_LIST_DIR}/command_after_dashes.cmake)
  attograd_command_after_dashes(command)
  readme_block("${readme}" "${BLOCK}" shown_output)
  execute_process(COMMAND ${command} RESULT_VARIABLE status OUTPUT_VARIABLE output ERROR_VARIABLE errors)
  if(NOT status STREQUAL "0")
    message(FATAL_ERROR "${command} exited ${status}\n${output}${errors}")
  endif()
  if(NOT shown_output STREQUAL output)
    message(FATAL_ERROR "README.md's block '${BLOCK}' differs from what the command prints; paste the real output\n"
                        "--- README\n${shown_output}--- real\n${output}---")
  endif()
  message(STATUS "README.md shows the output of the '${BLOCK}' command as it is")
  return()
endif()

foreach(var SOURCE EXAMPLE)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "check_readme.cmake: set -D${var}=...")
  endif()
endforeach()
file(READ "${SOURCE}" source)
readme_block("${readme}" "readme_example.cpp" shown_source)
readme_block("${readme}" "readme_example output" shown_output)

execute_process(COMMAND "${EXAMPLE}" RESULT_VARIABLE status OUTPUT_VARIABLE output ERROR_VARIABLE errors)
if(NOT status STREQUAL "0")
  message(FATAL_ERROR "${EXAMPLE} exited ${status}\n${output}${errors}")
endif()

set(failed OFF)
if(NOT shown_source STREQUAL source)
  message(SEND_ERROR "README.md shows a different program than ${SOURCE}; paste the file into the block\n"
                     "--- README\n${shown_source}--- file\n${source}---")
  set(failed ON)
endif()
if(NOT shown_output STREQUAL output)
  message(SEND_ERROR "README.md shows a different output than the program prints; paste the real output\n"
                     "--- README\n${shown_output}--- real\n${output}---")
  set(failed ON)
endif()
if(failed)
  message(FATAL_ERROR "README.md is out of date")
endif()
message(STATUS "README.md shows ${SOURCE} and its output as they are")
