# MPI detection, for multi-worker training (mpirun -np W mirrorlab train). Sets, in the caller's
# scope:
#   MIRRORLAB_HAVE_MPI   ON when MPI's C++ compiler wrapper settings were found (Debian:
#                        libopenmpi-dev); virtualgpu/mpi/ (mirrorlab_mpi) is built then
#   MIRRORLAB_MPIEXEC    mpirun, to run the multi-worker tests (Debian: openmpi-bin)
#   MIRRORLAB_MPI_STATUS a line for the configure summary
# Everything else builds and works without MPI; `mirrorlab train` under mpirun then says how to
# get it.
set(MIRRORLAB_HAVE_MPI OFF)
set(MIRRORLAB_MPIEXEC "")
set(MIRRORLAB_MPI_STATUS "MPI off (-DMIRRORLAB_WITH_MPI=OFF): one worker only")
if(MIRRORLAB_WITH_MPI)
  find_package(MPI COMPONENTS CXX QUIET)
  if(MPI_CXX_FOUND)
    set(MIRRORLAB_HAVE_MPI ON)
    set(MIRRORLAB_MPIEXEC "${MPIEXEC_EXECUTABLE}")
    set(MIRRORLAB_MPI_STATUS "MPI ${MPI_CXX_VERSION} (multi-worker training; mpirun: ${MPIEXEC_EXECUTABLE})")
    if(NOT MPIEXEC_EXECUTABLE)
      set(MIRRORLAB_MPI_STATUS "MPI ${MPI_CXX_VERSION}, but no mpirun found: the multi-worker tests "
                               "are skipped (apt-get install openmpi-bin)")
    endif()
  else()
    set(MIRRORLAB_MPI_STATUS "MPI not found: one worker only (apt-get install libopenmpi-dev "
                             "openmpi-bin for mpirun -np W mirrorlab train)")
  endif()
endif()
