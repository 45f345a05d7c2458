# CUDA, cuBLAS and NCCL detection. Sets, in the caller's scope:
#   MIRRORLAB_HAVE_CUDA  ON when nvcc, the CUDA runtime and cuBLAS were found (CUDA code is built)
#   MIRRORLAB_HAVE_NCCL  ON when nccl.h and libnccl were found as well
#   MIRRORLAB_NCCL_VERSION  "2.28.9" or empty
# CUDA code compiles and links on a machine with no GPU (CI is one); what runs on a GPU checks at
# run time and says so when none is visible. Only the runtime API is linked: an executable linked
# against the driver library (libcuda) would not even start on a machine without the driver.
set(MIRRORLAB_HAVE_CUDA OFF)
set(MIRRORLAB_HAVE_NCCL OFF)
set(MIRRORLAB_NCCL_VERSION "")
set(MIRRORLAB_CUDA_STATUS "CUDA off (-DMIRRORLAB_WITH_CUDA=OFF)")

if(MIRRORLAB_WITH_CUDA)
  # nvcc on PATH, else the usual install folder.
  if(NOT CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX} AND EXISTS /usr/local/cuda/bin/nvcc)
    find_program(_mirrorlab_nvcc nvcc)
    if(NOT _mirrorlab_nvcc)
      set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
    endif()
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  # check_language does not validate a bogus CMAKE_CUDA_COMPILER: check the file exists.
  if(CMAKE_CUDA_COMPILER AND EXISTS "${CMAKE_CUDA_COMPILER}")
    # One cudart on the link line (the shared one), not both.
    set(CMAKE_CUDA_RUNTIME_LIBRARY Shared)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      # Turing, Ampere, Hopper. CUDA 13 has no sm_70 or older; "native" fails without a GPU.
      set(CMAKE_CUDA_ARCHITECTURES 75 80 90)
    endif()
    enable_language(CUDA)
    # CMake 3.25 does not know nvcc's C++20 flag: tell it, or every CUDA target fails to configure.
    set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
    set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
    set(CMAKE_CUDA_STANDARD 20)
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    find_package(CUDAToolkit)
    if(CUDAToolkit_FOUND AND TARGET CUDA::cublas)
      set(MIRRORLAB_HAVE_CUDA ON)
      set(MIRRORLAB_CUDA_STATUS "CUDA ${CUDAToolkit_VERSION} (architectures ${CMAKE_CUDA_ARCHITECTURES}), cuBLAS")
      if(MIRRORLAB_CUDA_WERROR)
        # nvcc's own warnings (device code included) and the host compiler's, on .cu files only:
        # CI builds this way (scripts/test), so the CUDA code cannot rot without a GPU.
        add_compile_options("$<$<COMPILE_LANGUAGE:CUDA>:-Werror=all-warnings>"
                            "$<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Werror>")
        string(APPEND MIRRORLAB_CUDA_STATUS ", warnings in .cu files are errors")
      endif()
      find_path(MIRRORLAB_NCCL_INCLUDE nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
      find_library(MIRRORLAB_NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR})
      if(MIRRORLAB_NCCL_INCLUDE AND MIRRORLAB_NCCL_LIBRARY)
        file(STRINGS "${MIRRORLAB_NCCL_INCLUDE}/nccl.h" _nccl_defines
             REGEX "^#define NCCL_(MAJOR|MINOR|PATCH) ")
        foreach(_part MAJOR MINOR PATCH)
          string(REGEX MATCH "NCCL_${_part} ([0-9]+)" _m "${_nccl_defines}")
          set(_nccl_${_part} "${CMAKE_MATCH_1}")
        endforeach()
        set(MIRRORLAB_NCCL_VERSION "${_nccl_MAJOR}.${_nccl_MINOR}.${_nccl_PATCH}")
        set(MIRRORLAB_HAVE_NCCL ON)
        add_library(mirrorlab_nccl INTERFACE)
        target_include_directories(mirrorlab_nccl INTERFACE ${MIRRORLAB_NCCL_INCLUDE})
        target_link_libraries(mirrorlab_nccl INTERFACE ${MIRRORLAB_NCCL_LIBRARY})
        string(APPEND MIRRORLAB_CUDA_STATUS ", NCCL ${MIRRORLAB_NCCL_VERSION}")
      else()
        string(APPEND MIRRORLAB_CUDA_STATUS ", NCCL not found (nccl.h / libnccl under the toolkit): "
                                            "all-reduce on CUDA uses the fallback algorithms only")
      endif()
    else()
      set(MIRRORLAB_CUDA_STATUS "CUDA off: nvcc found but the CUDA toolkit or cuBLAS was not")
    endif()
  else()
    set(MIRRORLAB_CUDA_STATUS "CUDA off: nvcc not found, skipping the CUDA devices and kernels "
                              "(CPU-backed virtual GPUs only)")
  endif()
endif()
