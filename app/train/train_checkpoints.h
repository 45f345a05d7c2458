// The checkpoints of `mirrorlab train`: --checkpoint-dir, --checkpoint-every, --keep (saving
// while the run goes, at its end and on Ctrl-C) and --resume (a run that goes on from the newest
// checkpoint of a folder, with the settings the checkpoint fixed).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "app/flags/train_flags.h"
#include "core/checkpoint/checkpoint_folder.h"
#include "core/checkpoint/run_checkpoint.h"

namespace mirrorlab::app {

struct ResumePoint {
  core::CheckpointEntry entry;
  core::Checkpoint checkpoint;
};

// With --resume: reads the newest checkpoint there (into *resume) and gives `options` the
// settings it fixed, and those of the flags not given (batch, epochs, --max-steps, all-reduce).
// "" or what is wrong, naming the flag: no checkpoint there, a damaged one, a flag given with
// another value than the checkpoint's (--lr 0.01 for a run trained at 0.001), nothing left to
// run. Without --resume: "" and nothing.
std::string prepare_resume(TrainOptions& options, std::optional<ResumePoint>* resume);

// Says where the run goes on from and what changed, then restores it: false (said on stderr)
// when the checkpoint does not fit this run (other data, another version's shuffle).
bool resume_run(const ResumePoint& resume, const core::CheckpointConfig& now,
                core::MirroredStrategy& strategy, core::FitLoop& loop);

// "" unless --history or --trace names a checkpoint's file in the folder the run saves into or
// resumes from (the run would replace it, or a checkpoint the history); after prepare_resume().
std::string outputs_clear_of_checkpoints(const TrainOptions& options);

// The run's checkpointing: where, how often, how many to keep. A folder that holds another
// run's checkpoints is refused unless the run resumes from it.
class TrainCheckpoints {
 public:
  // "" or why the folder cannot take checkpoints (made if missing). Nothing when neither
  // --checkpoint-dir nor --resume is given.
  std::string open(const TrainOptions& options);
  bool enabled() const { return folder_.has_value(); }
  const std::string& folder() const { return folder_text_; }
  // Before the first step: the run to save, its settings as a checkpoint keeps them.
  void start(core::MirroredStrategy& strategy, const core::FitLoop& loop,
             const core::CheckpointConfig& config);
  // After each step: saves when one is due (every N steps, or as every Nth epoch closes).
  // Returns the path saved, "" when none was due, or throws core::OutputFileError.
  std::string after_step();
  // At the end of a run (finished, step limit, Ctrl-C): saves unless this step is saved already
  // (or its save was just tried and failed: said once is enough).
  std::string at_end();
  // The newest saved by this run or found when resuming, for the sentence after a failure.
  const std::optional<core::CheckpointEntry>& last() const { return last_; }
  void set_last(const core::CheckpointEntry& entry) { last_ = entry; }

 private:
  std::string save();

  std::optional<core::CheckpointFolder> folder_;
  std::string folder_text_;
  StepsOrEpochs every_;
  int keep_ = 0;
  core::MirroredStrategy* strategy_ = nullptr;
  const core::FitLoop* loop_ = nullptr;
  core::CheckpointConfig config_;
  std::size_t epochs_seen_ = 0;
  std::optional<core::CheckpointEntry> last_;
  std::int64_t tried_step_ = -1;  // the step whose save was tried last, saved or not
};

}  // namespace mirrorlab::app
