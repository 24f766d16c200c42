# Checks that a file exists and its contents match a regular expression:
#   cmake -DFILE=<file> -DREGEX=<regex> -P check_file.cmake
if(NOT EXISTS "${FILE}")
  message(FATAL_ERROR "${FILE}: missing")
endif()
file(READ "${FILE}" text)
if(NOT text MATCHES "${REGEX}")
  message(FATAL_ERROR "${FILE} does not match '${REGEX}'")
endif()
message(STATUS "ok: ${FILE} matches")
