# Checks that a file is a PNG of the expected size, reading the width and height from the
# bytes of its IHDR chunk:
#   cmake -DPNG=<file> -DWIDTH=<w> -DHEIGHT=<h> -P check_png.cmake
#   cmake -DPNG=<file> -DSIZE_REGEX=<regex> -P check_png.cmake -- <command>...
#   cmake -DPNG=<file> -DANY_SIZE=ON -P check_png.cmake [-- <command>...]
# With a command, it first runs it (it must exit 0 and write the file); SIZE_REGEX then takes
# the expected width and height from the two groups it matches in the command's stdout.
# ANY_SIZE checks only that the file is a PNG.
include(${CMAKE_CURRENT_LIST_DIR}/command_after_dashes.cmake)
attograd_command_after_dashes(command)
list(LENGTH command command_length)
if(command_length GREATER 0)
  file(REMOVE "${PNG}")
  execute_process(COMMAND ${command} RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "exit status ${status}\n${out}${err}")
  endif()
  if(DEFINED SIZE_REGEX)
    if(NOT out MATCHES "${SIZE_REGEX}")
      message(FATAL_ERROR "stdout does not match '${SIZE_REGEX}':\n${out}")
    endif()
    set(WIDTH ${CMAKE_MATCH_1})
    set(HEIGHT ${CMAKE_MATCH_2})
  endif()
endif()
if(NOT EXISTS "${PNG}")
  message(FATAL_ERROR "${PNG}: missing")
endif()
file(READ "${PNG}" sig OFFSET 0 LIMIT 8 HEX)
file(READ "${PNG}" chunk OFFSET 12 LIMIT 4 HEX)
if(NOT sig STREQUAL "89504e470d0a1a0a" OR NOT chunk STREQUAL "49484452")  # "IHDR"
  message(FATAL_ERROR "${PNG}: not a PNG file (signature ${sig})")
endif()
file(READ "${PNG}" w_hex OFFSET 16 LIMIT 4 HEX)
file(READ "${PNG}" h_hex OFFSET 20 LIMIT 4 HEX)
math(EXPR w "0x${w_hex}")
math(EXPR h "0x${h_hex}")
if(NOT ANY_SIZE AND (NOT w EQUAL WIDTH OR NOT h EQUAL HEIGHT))
  message(FATAL_ERROR "${PNG} is ${w}x${h}, expected ${WIDTH}x${HEIGHT}")
endif()
message(STATUS "ok: ${PNG} is a ${w}x${h} PNG")
