// main() of the tests that run as several MPI ranks (ctest starts them under mpirun): MPI is
// started once for the process, every rank runs every test in the same order (their collectives
// meet) and prints its own results; every rank exits with the worst status of all of them.
#include <gtest/gtest.h>
#include <mpi.h>

#include "virtualgpu/mpi/mpi_worker_group.h"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  mirrorlab::vgpu::initialize_mpi();
  const int status = RUN_ALL_TESTS();
  int worst = 0;
  MPI_Allreduce(&status, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  mirrorlab::vgpu::finalize_mpi();
  return worst;
}
