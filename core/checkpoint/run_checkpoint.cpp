#include "core/checkpoint/run_checkpoint.h"

#include <charconv>

namespace mirrorlab::core {
namespace {

std::string steps_text(std::int64_t max_steps) {
  return max_steps > 0 ? std::to_string(max_steps) + " steps" : "no step limit";
}

}  // namespace

std::string float_text(float value) {
  char text[48];
  const auto result = std::to_chars(text, text + sizeof text, value);
  return std::string(text, result.ptr);
}

CheckpointConfig checkpoint_config(const MirroredStrategy& strategy, const FitLoop& loop,
                                   std::uint32_t train_crc32) {
  const StrategyOptions& s = strategy.options();
  const FitOptions& f = loop.options();
  CheckpointConfig c;
  c.model = s.model;
  c.optimizer = s.optimizer;
  c.loss_scaling = s.loss_scaling;
  c.all_reduce = s.all_reduce;
  c.seed = s.seed;
  c.shuffle_seed = f.seed;
  c.epochs = f.epochs;
  c.max_steps = f.max_steps;
  c.batch_per_replica = f.batch_per_replica;
  c.replicas = strategy.num_replicas_in_sync();
  for (const vgpu::Device* d : strategy.devices()) c.devices.push_back(d->name());
  c.train_examples = loop.train().size();
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
    c.order_crc32 = order_crc32(shuffled_indices(loop.train().size(), config.shuffle_seed,
                                                 c.position.epoch));
  }
  return c;
}

std::vector<std::string> checkpoint_changes(const CheckpointConfig& saved,
                                            const CheckpointConfig& now) {
  std::vector<std::string> changes;
  const std::size_t global_then = saved.batch_per_replica * static_cast<std::size_t>(saved.replicas);
  const std::size_t global_now = now.batch_per_replica * static_cast<std::size_t>(now.replicas);
  if (saved.replicas != now.replicas) {
    changes.push_back(std::to_string(now.replicas) + " replicas, where the checkpoint's run had " +
                      std::to_string(saved.replicas) +
                      ": every replica takes the same one copy of the weights and the "
                      "optimizer's state");
  }
  if (saved.batch_per_replica != now.batch_per_replica) {
    changes.push_back(std::to_string(now.batch_per_replica) + " examples per replica, was " +
                      std::to_string(saved.batch_per_replica));
  }
  if (global_then != global_now) {
    changes.push_back("the global batch is " + std::to_string(global_now) + ", was " +
                      std::to_string(global_then) +
                      ": the epoch goes on from its next unused example, in steps of " +
                      std::to_string(global_now) + ", and the updates are no longer those the "
                      "first run would have made");
  }
  if (saved.all_reduce != now.all_reduce) {
    changes.push_back("all-reduce " + now.all_reduce + ", was " + saved.all_reduce);
  }
  if (saved.epochs != now.epochs) {
    changes.push_back(std::to_string(now.epochs) + " epochs in all, was " +
                      std::to_string(saved.epochs));
  }
  if (saved.max_steps != now.max_steps) {
    changes.push_back(steps_text(now.max_steps) + " in all, was " + steps_text(saved.max_steps));
  }
  return changes;
}

void restore_checkpoint(const Checkpoint& c, const std::filesystem::path& file,
                        const CheckpointConfig& now, MirroredStrategy& strategy, FitLoop& loop) {
  const CheckpointConfig& saved = c.config;
  auto refuse = [&](const std::string& problem) { throw CheckpointError(file, problem); };
  if (saved.model != now.model) {
    refuse(std::string("holds a ") + to_string(saved.model) + " model; this run trains a " +
           to_string(now.model));
  }
  const std::vector<WeightTensor>& mine = strategy.replica(0).model().weight_tensors();
  bool same = mine.size() == c.tensors.size();
  for (std::size_t i = 0; same && i < mine.size(); ++i) {
    same = mine[i].name == c.tensors[i].name && mine[i].shape == c.tensors[i].shape;
  }
  if (!same) refuse("its tensors are not those of this " + std::string(to_string(now.model)));
  const OptimizerConfig& a = saved.optimizer;
  const OptimizerConfig& b = now.optimizer;
  if (a.kind != b.kind) {
    refuse(std::string("holds the state of a ") + to_string(a.kind) + " optimizer; this run uses " +
           to_string(b.kind));
  }
  if (a.learning_rate != b.learning_rate || a.momentum != b.momentum || a.beta1 != b.beta1 ||
      a.beta2 != b.beta2 || a.epsilon != b.epsilon) {
    refuse("its optimizer had learning rate " + float_text(a.learning_rate) + "; this run has " +
           float_text(b.learning_rate) + " (a resumed run keeps its optimizer's settings)");
  }
  if (saved.loss_scaling != now.loss_scaling) {
    refuse(std::string("was trained with loss scaling ") + to_string(saved.loss_scaling) +
           "; this run uses " + to_string(now.loss_scaling));
  }
  if (saved.seed != now.seed || saved.shuffle_seed != now.shuffle_seed) {
    refuse("was trained with seed " + std::to_string(saved.seed) + "; this run has seed " +
           std::to_string(now.seed));
  }
  if (saved.train_examples != now.train_examples || saved.train_crc32 != now.train_crc32) {
    refuse("was trained on " + std::to_string(saved.train_examples) +
           " training examples (CRC-32 " + std::to_string(saved.train_crc32) + "); this run has " +
           std::to_string(now.train_examples) + " (CRC-32 " + std::to_string(now.train_crc32) +
           "): not the same data");
  }
  if (const std::string problem = loop.why_not(c.position); !problem.empty()) refuse(problem);
  if (c.position.in_epoch &&
      order_crc32(shuffled_indices(now.train_examples, now.shuffle_seed, c.position.epoch)) !=
          c.order_crc32) {
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
