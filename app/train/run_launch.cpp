#include "app/train/run_launch.h"

#include <cstdio>
#include <utility>

#include "app/train/workers.h"

namespace mirrorlab::app {

RunLaunch::RunLaunch(std::string command) : command_(std::move(command)) {}

bool RunLaunch::start(int workers_flag, double collective_timeout_seconds) {
  const vgpu::Launch launch = vgpu::launched_by();
  chief_ = launch.rank == 0;
  if (const std::string problem = check_launch(workers_flag, launch, mpi_built());
      !problem.empty()) {
    if (chief_) std::fprintf(stderr, "mirrorlab %s: %s\n", command_.c_str(), problem.c_str());
    return false;
  }
  workers_ = start_workers(launch, collective_timeout_seconds);
  return true;
}

bool RunLaunch::agree(const std::string& own_problem, const TrainOptions& options,
                      const std::string& advice) {
  const std::string problem =
      workers_ ? agree_to_train(*workers_, own_problem, train_flag_lines(options)) : own_problem;
  if (problem.empty()) return true;
  if (chief_) {
    std::fprintf(stderr, "mirrorlab %s: %s\n%s", command_.c_str(), problem.c_str(),
                 advice.empty() ? "" : (advice + "\n").c_str());
  }
  if (workers_) finish_workers(*workers_);
  return false;
}

bool RunLaunch::announce() { return !workers_ || announce_worker(*workers_); }

bool RunLaunch::same_data(const core::FashionMnist& data) {
  if (!workers_) return true;
  const std::string different = check_same_data(*workers_, data);
  if (different.empty()) return true;
  refuse(different);
  return false;
}

void RunLaunch::refuse(const std::string& problem) {
  if (chief_) std::fprintf(stderr, "mirrorlab %s: %s\n", command_.c_str(), problem.c_str());
  if (workers_) finish_workers(*workers_);
}

void RunLaunch::finish() {
  if (workers_) finish_workers(*workers_);
}

}  // namespace mirrorlab::app
