# The Python module's detection (python/): Python's headers, NumPy and pybind11 (Debian:
# python3-dev, python3-numpy, pybind11-dev). Sets, in the caller's scope:
#   MIRRORLAB_HAVE_PYTHON   ON when all three were found: python/ is built, and every library
#                           below it is compiled position-independent (a module is a shared
#                           object that links them)
#   MIRRORLAB_PYTHON_STATUS a line for the configure summary
# Not in a sanitizer's build: the module would need the sanitizer's runtime loaded into an
# interpreter built without it. Everything else builds and works without Python.
set(MIRRORLAB_HAVE_PYTHON OFF)
set(MIRRORLAB_PYTHON_STATUS "Python module off (-DMIRRORLAB_WITH_PYTHON=OFF)")
if(MIRRORLAB_WITH_PYTHON AND MIRRORLAB_SANITIZE)
  set(MIRRORLAB_PYTHON_STATUS "Python module off in a sanitizer's build")
elseif(MIRRORLAB_WITH_PYTHON)
  # Debian's interpreter, whose NumPy the packages install, unless one is named (pip install .
  # names its own).
  if(NOT Python3_EXECUTABLE AND EXISTS /usr/bin/python3)
    set(Python3_EXECUTABLE /usr/bin/python3)
  endif()
  find_package(Python3 COMPONENTS Interpreter Development.Module NumPy QUIET)
  if(Python3_FOUND AND Python3_NumPy_FOUND)
    find_package(pybind11 CONFIG QUIET)
  endif()
  if(Python3_FOUND AND Python3_NumPy_FOUND AND pybind11_FOUND)
    set(MIRRORLAB_HAVE_PYTHON ON)
    set(CMAKE_POSITION_INDEPENDENT_CODE ON)
    set(MIRRORLAB_PYTHON_STATUS
        "Python module for ${Python3_EXECUTABLE} ${Python3_VERSION} (NumPy ${Python3_NumPy_VERSION}, pybind11 ${pybind11_VERSION})")
  else()
    set(MIRRORLAB_PYTHON_STATUS "Python module not built: it needs python3-dev, python3-numpy and "
                                "pybind11-dev (apt-get install them)")
  endif()
endif()
