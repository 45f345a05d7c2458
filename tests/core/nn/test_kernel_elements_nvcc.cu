// tests/core/nn/test_kernel_elements.cpp compiled by nvcc (CUDA builds only): the same tests over
// the functions the kernels call, as nvcc's host pass builds them (MIRRORLAB_HD is
// `__host__ __device__` here). Runs without a GPU; ctest names its cases nvcc.*.
#include "tests/core/nn/test_kernel_elements.cpp"
