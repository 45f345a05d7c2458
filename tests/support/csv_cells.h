// The cells of one line of the project's comma-separated data files (docs/gpu/*-steps.csv,
// docs/nccl-tests-published.csv): no quoting (the files keep commas out of their cells); a line
// ending in a comma ends in an empty cell.
#pragma once

#include <sstream>
#include <string>
#include <vector>

namespace mirrorlab::testing {

inline std::vector<std::string> csv_cells(const std::string& line) {
  std::vector<std::string> cells;
  std::istringstream row(line);
  std::string cell;
  while (std::getline(row, cell, ',')) cells.push_back(cell);
  if (!line.empty() && line.back() == ',') cells.push_back("");
  return cells;
}

}  // namespace mirrorlab::testing
