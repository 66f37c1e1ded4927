# provgate post-install check for CMake projects. Include it at the end of CMakeLists.txt:
#
#   set(PROVGATE_CONFIG "${CMAKE_SOURCE_DIR}/provgate.json")   # optional
#   include(/usr/share/provgate/provgate-install.cmake)
#
# `cmake --install` then runs `provgate run --phase install` after the files are in place and
# fails the install when a gate does not pass. Set PROVGATE_INSTALL_CHECK=OFF to skip it.
option(PROVGATE_INSTALL_CHECK "run provgate's install phase after cmake --install" ON)
if(PROVGATE_INSTALL_CHECK)
  if(NOT DEFINED PROVGATE_CONFIG)
    set(PROVGATE_CONFIG "${CMAKE_SOURCE_DIR}/provgate.json")
  endif()
  find_program(PROVGATE_EXECUTABLE provgate)
  if(NOT PROVGATE_EXECUTABLE)
    message(WARNING "provgate not found: the install will not be verified")
  else()
    install(CODE "
      message(STATUS \"provgate: verifying the install (${PROVGATE_CONFIG})\")
      execute_process(
        COMMAND \"${PROVGATE_EXECUTABLE}\" run --phase install -c \"${PROVGATE_CONFIG}\"
        RESULT_VARIABLE _provgate_rc)
      if(NOT _provgate_rc EQUAL 0)
        message(FATAL_ERROR \"provgate: install not verified (exit \${_provgate_rc})\")
      endif()
    ")
  endif()
endif()
