# rlvla3_find_python(VAR MODULE...): the first Python 3 that imports every
# MODULE, for the tests that run Python (exporting a TorchScript policy, the
# Python rollout client). Debian's /usr/bin/python3 first (python3-torch,
# python3-grpcio), then the python3 first on PATH (on the GPU machine that is
# the one with the PyTorch wheel and grpcio; its /usr/bin/python3 has
# neither). VAR is empty when none does: the tests that need it skip, saying
# why.
function(rlvla3_find_python var)
  find_program(_on_path python3 NO_CACHE)
  set(_imports "")
  foreach(_m IN LISTS ARGN)
    string(APPEND _imports "import ${_m};")
  endforeach()
  foreach(_py /usr/bin/python3 ${_on_path})
    if(EXISTS "${_py}")
      execute_process(COMMAND "${_py}" -c "${_imports}"
                      RESULT_VARIABLE _rc OUTPUT_QUIET ERROR_QUIET)
      if(_rc EQUAL 0)
        message(STATUS "Python for tests that import ${ARGN}: ${_py}")
        set(${var} "${_py}" PARENT_SCOPE)
        return()
      endif()
    endif()
  endforeach()
  message(STATUS "No python3 imports ${ARGN}: the tests that need it skip")
  set(${var} "" PARENT_SCOPE)
endfunction()
