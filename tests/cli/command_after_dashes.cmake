# Sets <var> to the command given after "--" on cmake's own command line
# (cmake -D... -P script.cmake -- <program> <args>...). Shared by the check scripts here.
macro(attograd_command_after_dashes var)
  set(${var} "")
  set(_after_dashes OFF)
  math(EXPR _last "${CMAKE_ARGC} - 1")
  foreach(_i RANGE ${_last})
    if(_after_dashes)
      list(APPEND ${var} "${CMAKE_ARGV${_i}}")
    elseif(CMAKE_ARGV${_i} STREQUAL "--")
      set(_after_dashes ON)
    endif()
  endforeach()
endmacro()
