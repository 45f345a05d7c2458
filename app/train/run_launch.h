// The start every command that trains shares (`train`, and `gui` under mpirun): alone, or as one
// of W workers launched by mpirun, where every worker must agree before any trains. Worker 0 says
// what is wrong, for every worker; each refusal leaves the workers finished and returns false, so
// that the command returns its exit status at once.
#pragma once

#include <memory>
#include <string>

#include "core/io/dataset.h"
#include "virtualgpu/workers/worker_group.h"

namespace mirrorlab::app {

struct TrainOptions;

class RunLaunch {
 public:
  // `command`: "train" or "gui", for the messages ("mirrorlab train: ...").
  explicit RunLaunch(std::string command);

  // Checks mpirun's launch against --workers (`workers_flag`, 0: whatever mpirun gives) and,
  // under mpirun, joins the workers: `collective_timeout_seconds` is the longest a collective
  // may wait for a worker on another host. False (said) when this launch cannot train.
  bool start(int workers_flag, double collective_timeout_seconds);
  // Every worker's own refusal (`own_problem`, "" for none) and its flags compared (an exchange
  // under mpirun). False when any worker refuses or a flag differs: worker 0 says the first, then
  // `advice` on a line of its own ("" for none).
  bool agree(const std::string& own_problem, const TrainOptions& options,
             const std::string& advice = "");
  // This worker's line with its TF_CONFIG; other workers than 0 then print nothing more.
  bool announce();
  // Whether every worker loaded the same data (an exchange under mpirun).
  bool same_data(const core::FashionMnist& data);
  // Says `problem` (worker 0 only) and finishes the workers: for a refusal after the start.
  void refuse(const std::string& problem);
  // The last barrier, at the end of a run that went well.
  void finish();

  bool chief() const { return chief_; }
  // The workers of this run; nullptr when it trains alone.
  vgpu::WorkerGroup* workers() const { return workers_.get(); }

 private:
  std::string command_;
  bool chief_ = true;
  std::unique_ptr<vgpu::WorkerGroup> workers_;
};

}  // namespace mirrorlab::app
