#include "app/train/train_checkpoints.h"

#include <cstdio>
#include <filesystem>
#include <utility>

#include "app/output/printed_text.h"
#include "core/io/output_file.h"

namespace mirrorlab::app {
std::string prepare_resume(TrainOptions& o, std::optional<ResumePoint>* resume) {
  if (o.resume_dir.empty()) return "";
  const core::CheckpointFolder folder(o.resume_dir);
  ResumePoint point;
  try {
    point.entry = folder.newest();
    point.checkpoint = folder.load(point.entry);
  } catch (const core::CheckpointError& e) {
    std::string text = std::string("--resume: ") + e.what();
    std::vector<core::CheckpointEntry> all;
    try {
      all = folder.list();
    } catch (const core::CheckpointError&) {
    }
    if (all.size() > 1) {
      text += ". The checkpoint before it is " + all[all.size() - 2].state.string() + " (step " +
              std::to_string(all[all.size() - 2].step) +
              "): move the damaged files away to go on from that one";
    }
    return text;
  }
  const core::CheckpointConfig& c = point.checkpoint.config;
  core::RunSettings& s = o.settings;
  for (const core::SettingDifference& d : core::setting_differences(s, c.settings)) {
    const std::string flag = flag_for_setting(d.key);
    if (d.role == core::SettingRole::kFixed && !flag.empty() && o.given.count(flag)) {
      return flag + " " + d.first + ": the checkpoint " + point.entry.state.string() +
             " was trained with " + d.second +
             ", and a resumed run keeps its model, optimizer and its settings, loss scaling, "
             "seed and training examples; leave " +
             flag + " out";
    }
  }
  // What the checkpoint fixed, and what a resumed run may change but was not told to (the
  // batch, the epochs, --max-steps, the all-reduce); the devices are this command line's.
  core::copy_settings(c.settings, s, [&o](const core::SettingInfo& info) {
    switch (info.role) {
      case core::SettingRole::kFixed:
        return true;
      case core::SettingRole::kChangeable:
        return o.given.count(flag_for_setting(info.key)) == 0;
      case core::SettingRole::kDevices:
      case core::SettingRole::kMachine:
        return false;
    }
    return false;
  });
  if (!o.given.count("--gpus") && !o.given.count("--memory-limit") && !o.given.count("--devices")) {
    s.devices.gpus = c.replicas;  // as many replicas as before, unless the flags say otherwise
  }
  if (o.checkpoint_dir.empty()) o.checkpoint_dir = o.resume_dir;

  const core::FitPosition& p = point.checkpoint.position;
  const std::string at = "the checkpoint " + point.entry.state.string() + " is at step " +
                         std::to_string(p.history.steps);
  if (s.max_steps > 0 && p.history.steps >= s.max_steps) {
    return "--max-steps " + std::to_string(s.max_steps) + ": " + at +
           (o.given.count("--max-steps") ? "" : " (its run's --max-steps)") +
           ": nothing is left to run; give a larger --max-steps to go on";
  }
  if (p.epoch > s.epochs || (p.epoch == s.epochs && !p.in_epoch)) {
    return "--epochs " + std::to_string(s.epochs) + ": " + at + ", " +
           (p.in_epoch ? "inside" : "after") + " epoch " + std::to_string(p.epoch) +
           ": nothing is left to run; give more --epochs to go on";
  }
  *resume = std::move(point);
  return "";
}

std::string outputs_clear_of_checkpoints(const TrainOptions& o) {
  for (const auto& [flag, path] : {std::pair<std::string, std::string>{"--history", o.history_file},
                                   {"--trace", o.trace_file}}) {
    if (path.empty()) continue;
    const std::filesystem::path file(path);
    if (!core::is_checkpoint_file_name(file.filename().string())) continue;
    const std::filesystem::path folder = file.has_parent_path() ? file.parent_path() : ".";
    for (const auto& [folder_flag, checkpoints] :
         {std::pair<std::string, std::string>{"--checkpoint-dir", o.checkpoint_dir},
          {"--resume", o.resume_dir}}) {
      if (checkpoints.empty() || !core::same_file(folder, checkpoints)) continue;
      return flag + " " + path + ": that is a checkpoint's file in " + folder_flag + " " +
             checkpoints + ", which this run " +
             (folder_flag == "--resume" ? "resumes from" : "saves into") + "; write " +
             flag.substr(2) + " to another file";
    }
  }
  return "";
}

std::string TrainCheckpoints::open(const TrainOptions& o) {
  if (o.checkpoint_dir.empty()) {
    for (const char* flag : {"--checkpoint-every", "--keep"}) {
      if (o.given.count(flag)) {
        return std::string(flag) +
               " needs --checkpoint-dir (or --resume): without a folder no checkpoint is saved";
      }
    }
    return "";
  }
  const std::string flag = o.given.count("--checkpoint-dir") ? "--checkpoint-dir " : "--resume ";
  core::CheckpointFolder folder(o.checkpoint_dir);
  try {
    folder.prepare();
  } catch (const core::OutputFileError& e) {
    return flag + e.what();
  }
  // A folder holding checkpoints belongs to the run that saved them: only that run goes on into
  // it (--resume), so a new run never replaces or deletes them (--keep).
  if (o.resume_dir.empty() || !core::same_file(o.resume_dir, o.checkpoint_dir)) {
    std::vector<core::CheckpointEntry> there;
    try {
      there = folder.list();
    } catch (const core::CheckpointError& e) {
      return flag + e.what();
    }
    if (!there.empty()) {
      return flag + o.checkpoint_dir + ": it holds " + std::to_string(there.size()) +
             (there.size() == 1 ? " checkpoint" : " checkpoints") + " of another run (the newest " +
             there.back().state.filename().string() + ", of step " +
             std::to_string(there.back().step) +
             "), which a new run there would replace or delete. Go on from them with --resume " +
             o.checkpoint_dir + ", or give a new or empty folder";
    }
  }
  folder_ = std::move(folder);
  folder_text_ = o.checkpoint_dir;
  every_ = o.checkpoint_every;
  keep_ = o.keep;
  return "";
}

void TrainCheckpoints::start(core::MirroredStrategy& strategy, const core::FitLoop& loop,
                             const core::CheckpointConfig& config) {
  strategy_ = &strategy;
  loop_ = &loop;
  config_ = config;
  epochs_seen_ = loop.history().epochs.size();
}

std::string TrainCheckpoints::after_step() {
  if (!folder_) return "";
  const core::History& h = loop_->history();
  bool due = false;
  if (every_.count == 0 || every_.epochs) {
    const std::int64_t every = every_.count == 0 ? 1 : every_.count;
    if (h.epochs.size() > epochs_seen_) {
      epochs_seen_ = h.epochs.size();
      due = static_cast<std::int64_t>(epochs_seen_) % every == 0;
    }
  } else {
    due = h.steps % every_.count == 0;
  }
  return due ? save() : "";
}

std::string TrainCheckpoints::at_end() {
  if (!folder_) return "";
  const std::int64_t step = loop_->history().steps;
  if ((last_ && last_->step == step) || tried_step_ == step) return "";
  return save();
}

std::string TrainCheckpoints::save() {
  tried_step_ = loop_->history().steps;
  last_ = folder_->save(core::capture_checkpoint(*strategy_, *loop_, config_), keep_);
  return last_->state.string();
}

// Says where the run goes on from and what changed, then restores it: false (said on stderr)
// when the checkpoint does not fit this run (other data, another version's shuffle).
bool resume_run(const ResumePoint& resume, const core::CheckpointConfig& now,
                core::MirroredStrategy& strategy, core::FitLoop& loop) {
  const core::FitPosition& p = resume.checkpoint.position;
  print_wrapped(formatted("Resuming from %s: step %lld, ", resume.entry.state.c_str(),
                          static_cast<long long>(p.history.steps)) +
                (p.in_epoch ? formatted("inside epoch %d (%lld steps, %zu of %zu examples done)",
                                        p.epoch, static_cast<long long>(p.step_in_epoch),
                                        p.examples_in_epoch, now.settings.train_examples)
                            : formatted("after epoch %d", p.epoch)));
  for (const std::string& change : core::checkpoint_changes(resume.checkpoint.config, now)) {
    print_wrapped("Changed: " + change);
  }
  std::fflush(stdout);
  try {
    core::restore_checkpoint(resume.checkpoint, resume.entry.state, now, strategy, loop);
  } catch (const core::CheckpointError& e) {
    std::fprintf(stderr, "mirrorlab train: --resume: %s\n", e.what());
    return false;
  }
  return true;
}

}  // namespace mirrorlab::app
