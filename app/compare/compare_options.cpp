#include "app/compare/compare_options.h"

#include <cstdio>

namespace mirrorlab::app {

int compare_bad_input(const std::string& problem) {
  std::fprintf(stderr, "mirrorlab compare: %s\nRun 'mirrorlab compare --help' for the flags.\n",
               problem.c_str());
  return 2;
}

}  // namespace mirrorlab::app
