#include "core/checkpoint/run_checkpoint.h"

namespace mirrorlab::core {
namespace {

std::string steps_text(std::int64_t max_steps) {
  if (max_steps <= 0) return "no step limit";
  return std::to_string(max_steps) + (max_steps == 1 ? " step" : " steps");
}

}  // namespace

CheckpointConfig checkpoint_config(const RunSettings& settings, const MirroredStrategy& strategy,
                                   const FitLoop& loop, std::uint32_t train_crc32) {
  CheckpointConfig c;
  c.settings = settings;
  c.settings.train_examples = loop.train().size();
  c.replicas = strategy.num_replicas_in_sync();
  for (const vgpu::Device* d : strategy.devices()) c.devices.push_back(d->name());
  c.train_crc32 = train_crc32;
  return c;
}

Checkpoint capture_checkpoint(MirroredStrategy& strategy, const FitLoop& loop,
                              const CheckpointConfig& config) {
  Checkpoint c;
  c.config = config;
  c.tensors = strategy.replica(0).model().weight_tensors();
  c.state = strategy.state();
  c.position = loop.position();
  if (c.position.in_epoch) {
    c.order_crc32 =
        order_crc32(shuffled_indices(loop.train().size(), config.settings.seed, c.position.epoch));
  }
  return c;
}

std::vector<std::string> checkpoint_changes(const CheckpointConfig& saved,
                                            const CheckpointConfig& now) {
  std::vector<std::string> changes;
  const RunSettings& was = saved.settings;
  const RunSettings& is = now.settings;
  const std::size_t global_then = was.batch_per_replica * static_cast<std::size_t>(saved.replicas);
  const std::size_t global_now = is.batch_per_replica * static_cast<std::size_t>(now.replicas);
  if (saved.replicas != now.replicas) {
    changes.push_back(std::to_string(now.replicas) +
                      (now.replicas == 1 ? " replica" : " replicas") +
                      ", where the checkpoint's run had " + std::to_string(saved.replicas) +
                      ": every replica takes the same one copy of the weights and the "
                      "optimizer's state");
  }
  if (was.batch_per_replica != is.batch_per_replica) {
    changes.push_back(std::to_string(is.batch_per_replica) + " examples per replica, was " +
                      std::to_string(was.batch_per_replica));
  }
  if (global_then != global_now) {
    changes.push_back("the global batch is " + std::to_string(global_now) + ", was " +
                      std::to_string(global_then) +
                      ": the epoch goes on from its next unused example, in steps of " +
                      std::to_string(global_now) +
                      ", and the updates are no longer those the "
                      "first run would have made");
  }
  if (was.allreduce != is.allreduce) {
    changes.push_back("all-reduce " + is.allreduce + ", was " + was.allreduce);
  }
  if (was.epochs != is.epochs) {
    changes.push_back(std::to_string(is.epochs) + " epochs in all, was " +
                      std::to_string(was.epochs));
  }
  if (was.max_steps != is.max_steps) {
    changes.push_back(steps_text(is.max_steps) + " in all, was " + steps_text(was.max_steps));
  }
  return changes;
}

void restore_checkpoint(const Checkpoint& c, const std::filesystem::path& file,
                        const CheckpointConfig& now, MirroredStrategy& strategy, FitLoop& loop) {
  const RunSettings& saved = c.config.settings;
  const RunSettings& is = now.settings;
  auto refuse = [&](const std::string& problem) { throw CheckpointError(file, problem); };
  if (saved.model != is.model) {
    refuse(std::string("holds a ") + to_string(saved.model) + " model; this run trains a " +
           to_string(is.model));
  }
  const std::vector<WeightTensor>& mine = strategy.replica(0).model().weight_tensors();
  bool same = mine.size() == c.tensors.size();
  for (std::size_t i = 0; same && i < mine.size(); ++i) {
    same = mine[i].name == c.tensors[i].name && mine[i].shape == c.tensors[i].shape;
  }
  if (!same) refuse("its tensors are not those of this " + std::string(to_string(is.model)));
  if (saved.optimizer.kind != is.optimizer.kind) {
    refuse(std::string("holds the state of a ") + to_string(saved.optimizer.kind) +
           " optimizer; this run uses " + to_string(is.optimizer.kind));
  }
  if (saved.train_examples != is.train_examples || c.config.train_crc32 != now.train_crc32) {
    refuse("was trained on " + std::to_string(saved.train_examples) +
           " training examples (CRC-32 " + std::to_string(c.config.train_crc32) +
           "); this run has " + std::to_string(is.train_examples) + " (CRC-32 " +
           std::to_string(now.train_crc32) + "): not the same data");
  }
  // Every other setting the checkpoint fixed (the optimizer's hyper-parameters, the loss
  // scaling, the seed), by its name.
  for (const SettingDifference& d : setting_differences(saved, is)) {
    if (d.role == SettingRole::kFixed) {
      refuse("was trained with " + d.key + " " + d.first + "; this run has " + d.second +
             " (a resumed run keeps the model, the optimizer and its settings, the loss "
             "scaling, the seed and the data)");
    }
  }
  if (const std::string problem = loop.why_not(c.position); !problem.empty()) refuse(problem);
  if (c.position.in_epoch && order_crc32(shuffled_indices(is.train_examples, is.seed,
                                                          c.position.epoch)) != c.order_crc32) {
    refuse("epoch " + std::to_string(c.position.epoch) +
           " was shuffled into another order than this mirrorlab shuffles it (CRC-32 " +
           std::to_string(c.order_crc32) + "): it was written by another version");
  }
  try {
    strategy.restore(c.state, c.position.history.steps);  // checks everything before it copies
  } catch (const std::invalid_argument& e) {
    refuse(e.what());
  }
  loop.restore(c.position);  // checked above: it cannot refuse now
}

}  // namespace mirrorlab::core
