#include "gui/model/topology_catalog.h"

#include <system_error>

#include "timing/topology_file.h"

namespace mirrorlab::gui {

std::string not_fitted_sentence(const std::filesystem::path& fit_file) {
  return "This machine has not been fitted yet, so there is no prediction here. Run "
         "'mirrorlab compare --fit' in a terminal: it measures this machine's memory (copy and "
         "add kernels at each size) and its all-reduces for about 5 minutes (on 2 cores), fits "
         "the timing model to them and saves it" +
         (fit_file.empty() ? std::string(" (give it --output FILE: neither HOME nor "
                                         "XDG_CONFIG_HOME is set)")
                           : " to " + fit_file.string()) +
         ". The model's predictions then show here beside the measurements.";
}

TopologyCatalog::TopologyCatalog(const std::filesystem::path& presets,
                                 std::filesystem::path fit_file)
    : fit_file_(std::move(fit_file)) {
  try {
    for (timing::Topology& t : timing::load_topologies(presets)) {
      // The fit's place is its own file; a preset too large to draw is left out.
      if (t.id == timing::kFittedTopologyId || t.ranks() > kMostGpusShown) continue;
      ModelMachine m;
      m.id = t.id;
      m.topology = std::move(t);
      machines_.push_back(std::move(m));
    }
  } catch (const std::exception& e) {
    presets_problem_ = e.what();
  }
  machines_.push_back({timing::kFittedTopologyId, std::nullopt, not_fitted_sentence(fit_file_)});
  read_fit();
}

TopologyCatalog::TopologyCatalog()
    : TopologyCatalog(timing::default_topology_folder(), timing::fitted_topology_file()) {}

void TopologyCatalog::add_file(const std::string& path) {
  if (!timing::names_a_topology_file(path) || find(path) != nullptr) return;
  ModelMachine m;
  m.id = path;
  try {
    timing::Topology t = timing::read_topology(path);
    if (t.ranks() > kMostGpusShown) {
      m.problem = "it has " + std::to_string(t.ranks()) + " GPUs; the window shows at most " +
                  std::to_string(kMostGpusShown);
    } else {
      m.topology = std::move(t);
    }
  } catch (const std::exception& e) {
    m.problem = e.what();
  }
  machines_.insert(machines_.end() - 1, std::move(m));  // this-machine stays last
  ++version_;
}

const ModelMachine* TopologyCatalog::find(std::string_view id) const {
  for (const ModelMachine& m : machines_) {
    if (m.id == id) return &m;
  }
  return nullptr;
}

void TopologyCatalog::refresh(double now_seconds) {
  if (last_look_ >= 0 && now_seconds - last_look_ < 1.0) return;
  last_look_ = now_seconds;
  std::error_code error;
  const bool exists = !fit_file_.empty() && std::filesystem::exists(fit_file_, error);
  if (exists == fit_existed_) {
    if (!exists) return;
    const auto time = std::filesystem::last_write_time(fit_file_, error);
    const auto size = std::filesystem::file_size(fit_file_, error);
    if (!error && time == fit_time_ && size == fit_size_) return;
  }
  read_fit();
}

void TopologyCatalog::read_fit() {
  ModelMachine& fit = machines_.back();
  ++version_;
  std::error_code error;
  fit_existed_ = !fit_file_.empty() && std::filesystem::exists(fit_file_, error);
  fit.topology.reset();
  if (!fit_existed_) {
    fit.problem = not_fitted_sentence(fit_file_);
    return;
  }
  fit_time_ = std::filesystem::last_write_time(fit_file_, error);
  fit_size_ = std::filesystem::file_size(fit_file_, error);
  try {
    fit.topology = timing::read_topology(fit_file_);
    fit.problem.clear();
    if (fit.topology->ranks() > kMostGpusShown) {
      fit.problem = "This machine's fit (" + fit_file_.string() + ") has " +
                    std::to_string(fit.topology->ranks()) + " GPUs; the window shows at most " +
                    std::to_string(kMostGpusShown) +
                    ". Run 'mirrorlab compare --fit' again to measure this machine and replace it.";
      fit.topology.reset();
    }
  } catch (const std::exception& e) {
    fit.problem = "This machine's fit cannot be used: " + std::string(e.what()) +
                  ". Run 'mirrorlab compare --fit' again to measure this machine and replace it.";
  }
}

}  // namespace mirrorlab::gui
