# Sanitizer builds and the fuzzing build. Sets, in the caller's scope, the compile and link
# options of every target, and:
#   MIRRORLAB_TEST_ENVIRONMENT  the environment every test runs with in that build, set here so
#                               that ctest by hand behaves as scripts/test: one variable at most,
#                               as gtest_discover_tests (CMake 3.25) flattens its PROPERTIES into
#                               one list, so a list value would lose all but its first element
#   MIRRORLAB_TEST_ENVIRONMENT_PROPERTY  "ENVIRONMENT;<that>", or empty when there is none: what
#                               gtest_discover_tests' PROPERTIES take (an empty value there would
#                               be dropped, and the next property's name taken as the value)
#   MIRRORLAB_MPI_SANITIZER_ENVIRONMENT  the same for the tests that run processes under mpirun
#   MIRRORLAB_GUI_SANITIZER_ENVIRONMENT(_PROPERTY)  the same for the windowed GUI's runs
#   MIRRORLAB_SANITIZE_STATUS   a line for the configure summary
#
# MIRRORLAB_SANITIZE=thread: ThreadSanitizer (scripts/test runs the tests labelled tsan). Stop at
#   the first report (the process then exits non-zero), and skip the reports inside Mesa's
#   llvmpipe (tests/tsan-suppressions.txt says why, and names nothing else).
# MIRRORLAB_SANITIZE=address,undefined: AddressSanitizer (with LeakSanitizer) and
#   UndefinedBehaviorSanitizer; scripts/test runs the whole suite but the tests labelled no_asan
#   (tests/CMakeLists.txt says why each is). Any report ends the process with a non-zero status
#   (-fno-sanitize-recover=all: UBSan would otherwise print and go on). Leaks inside the libraries
#   named in tests/lsan-suppressions.txt (never our own code) are not reported.
# MIRRORLAB_FUZZ=ON: the libFuzzer targets of fuzz/ (clang only), everything instrumented for
#   the fuzzer's coverage and built with ASan and UBSan as above.
set(MIRRORLAB_TEST_ENVIRONMENT "")
set(MIRRORLAB_SANITIZE_STATUS "sanitizer '${MIRRORLAB_SANITIZE}'")
set(sanitizers "${MIRRORLAB_SANITIZE}")
if(MIRRORLAB_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "MIRRORLAB_FUZZ needs clang's libFuzzer: configure with "
                        "-DCMAKE_CXX_COMPILER=clang++-14 (Debian: clang-14 libfuzzer-14-dev)")
  endif()
  if(sanitizers AND NOT sanitizers STREQUAL "address,undefined")
    message(FATAL_ERROR "MIRRORLAB_FUZZ builds with address,undefined, not '${sanitizers}'")
  endif()
  set(sanitizers "address,undefined")
  # Coverage for the fuzzer in every library; -fsanitize=fuzzer (libFuzzer's main) is linked
  # into the fuzz targets only (fuzz/CMakeLists.txt).
  add_compile_options(-fsanitize=fuzzer-no-link)
  set(MIRRORLAB_SANITIZE_STATUS "fuzz targets (libFuzzer, ASan, UBSan)")
endif()
if(sanitizers)
  # -g1 (after the build type's -g, so it wins): line tables, enough for the reports. ASan and
  # UBSan at -O1, as their manual advises: measured here (GCC 12), a source compiles in about
  # half the time of -O2 -g (test_collectives.cpp: 30 s against 68 s). TSan stays at -O2: its
  # tests run the reference GEMM instrumented (at -O1, the CNN equivalence cases took 170-210 s
  # each on this busy 2-core machine).
  if(sanitizers STREQUAL "thread")
    add_compile_options(-fsanitize=${sanitizers} -O2 -g1 -fno-omit-frame-pointer)
  else()
    add_compile_options(-fsanitize=${sanitizers} -O1 -g1 -fno-omit-frame-pointer)
  endif()
  add_link_options(-fsanitize=${sanitizers})
  if(sanitizers MATCHES "address|undefined")
    add_compile_options(-fno-sanitize-recover=all)
    add_link_options(-fno-sanitize-recover=all)
  endif()
endif()

# mirrorlab_cold_code(<target>...): in a ThreadSanitizer or AddressSanitizer build, the targets'
# own code at -O0: code off the training path (the command line, the files, a run's settings,
# checkpoints, the lessons' player), where most of a source's compile is generating instrumented
# code for CLI11's, json's and toml++'s templates. Measured with GCC 12 on the 2-core VM, ASan +
# UBSan: app/train/train_command.cpp 48 s at -O1 against 22 s at -O0,
# core/checkpoint/checkpoint.cpp 29 s against 17 s; TSan: train_command.cpp 14 s against 11 s.
# The sanitizers check -O0 code at least as closely (no access optimised away); the training
# path (core/nn, core/strategy, virtualgpu, the session, the timing model, the GUI's frames)
# keeps its level. Not in the fuzzing build, whose targets run these readers millions of times.
function(mirrorlab_cold_code)
  if(MIRRORLAB_SANITIZE AND NOT MIRRORLAB_FUZZ)
    foreach(target IN LISTS ARGN)
      target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-O0>)
    endforeach()
  endif()
endfunction()

if(sanitizers STREQUAL "thread")
  set(MIRRORLAB_TEST_ENVIRONMENT
      "TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:suppressions=${PROJECT_SOURCE_DIR}/tests/tsan-suppressions.txt")
elseif(sanitizers MATCHES "address")
  # ASan's and UBSan's defaults are what we want (leak checking on, stop at the first report);
  # only the leak suppressions are added.
  set(lsan_options "suppressions=${PROJECT_SOURCE_DIR}/tests/lsan-suppressions.txt:print_suppressions=0")
  set(MIRRORLAB_TEST_ENVIRONMENT "LSAN_OPTIONS=${lsan_options}")
  # Under mpirun: Open MPI's MPI_Init leaves memory it never frees, allocated from its plugins
  # through frames without frame pointers, where LSan's fast unwinder stops at once and no
  # suppression can name the library. The full unwinder (slower, so only for these tests) reaches
  # Open MPI's own frames, which tests/lsan-suppressions.txt names.
  set(MIRRORLAB_MPI_SANITIZER_ENVIRONMENT "LSAN_OPTIONS=${lsan_options}:fast_unwind_on_malloc=0")
endif()
# The windowed GUI's runs (test_gui_app) in the ASan build: ASan and UBSan on, leak checking off.
# Mesa's software OpenGL (llvmpipe) loads libLLVM with dlopen and unloads it at exit, leaving 2
# blocks (112 bytes) that LSan can only name "<unknown module>", so no suppression can match them;
# LSan's full unwinder, which might reach a frame of Mesa's still loaded, makes a drawn frame
# take minutes. The GUI's own code is leak-checked without a window (test_gui, test_gui_model).
set(MIRRORLAB_GUI_SANITIZER_ENVIRONMENT "${MIRRORLAB_TEST_ENVIRONMENT}")
if(sanitizers MATCHES "address")
  set(MIRRORLAB_GUI_SANITIZER_ENVIRONMENT "ASAN_OPTIONS=detect_leaks=0")
endif()
if(NOT DEFINED MIRRORLAB_MPI_SANITIZER_ENVIRONMENT)
  set(MIRRORLAB_MPI_SANITIZER_ENVIRONMENT "${MIRRORLAB_TEST_ENVIRONMENT}")
endif()
set(MIRRORLAB_GUI_SANITIZER_ENVIRONMENT_PROPERTY "")
if(MIRRORLAB_GUI_SANITIZER_ENVIRONMENT)
  set(MIRRORLAB_GUI_SANITIZER_ENVIRONMENT_PROPERTY ENVIRONMENT "${MIRRORLAB_GUI_SANITIZER_ENVIRONMENT}")
endif()
set(MIRRORLAB_TEST_ENVIRONMENT_PROPERTY "")
if(MIRRORLAB_TEST_ENVIRONMENT)
  set(MIRRORLAB_TEST_ENVIRONMENT_PROPERTY ENVIRONMENT "${MIRRORLAB_TEST_ENVIRONMENT}")
endif()
