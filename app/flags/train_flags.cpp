#include "app/flags/train_flags.h"

#include <cstdio>
#include <limits>

#include "CLI/CLI.hpp"
#include "app/flags/fault_flags.h"
#include "app/output/printed_text.h"
#include "app/output/terminal_width.h"
#include "core/session/text/console_text.h"
#include "virtualgpu/collectives/all_reduce_algorithms.h"
#include "virtualgpu/collectives/all_reduce_choice.h"
#include "virtualgpu/memory/clock.h"

namespace mirrorlab::app {

core::RunSettings train_settings_defaults() {
  core::RunSettings s;
  s.workers = 0;  // as many as mpirun started (app/train/workers.h)
  return s;
}

std::string flag_for_setting(const std::string& key) {
  if (key == "learning_rate") return "--lr";
  if (key == "memory_mib") return "--memory-limit";
  if (key == "physical_gpus") return "--devices";
  if (key == "beta1" || key == "beta2" || key == "epsilon") return "";
  std::string flag = "--" + key;
  for (char& c : flag) c = c == '_' ? '-' : c;
  return flag;
}

void add_model_flag(CLI::App* cmd, core::RunSettings& s) {
  add_choice_flag(cmd, "--model", s.model, "Model");
}

void add_batch_per_replica_flag(CLI::App* cmd, core::RunSettings& s) {
  add_unsigned_flag(cmd, "--batch-per-replica", s.batch_per_replica, 1, std::uint64_t{1} << 16,
                    "Examples per replica per step (global batch = this x GPUs)");
}

void add_optimizer_flags(CLI::App* cmd, core::RunSettings& s) {
  add_choice_flag(cmd, "--optimizer", s.optimizer.kind, "Optimizer, with Keras 3's formulas");
  add_real_flag(cmd, "--lr", s.optimizer.learning_rate, 1e-9, 10.0,
                "Learning rate, for every optimizer (Keras' SGD defaults to 0.01)");
  add_real_flag(cmd, "--momentum", s.optimizer.momentum, 0.0, 1.0,
                "SGD's momentum: v = momentum*v - lr*g, w += v (0, Keras' default: plain SGD)");
}

void add_allreduce_flag(CLI::App* cmd, core::RunSettings& s) {
  std::string help =
      "All-reduce algorithm: auto (TensorFlow 2.21's choice: " + std::string(vgpu::kNcclName) +
      " with one CUDA GPU per replica, else " + std::string(vgpu::kRingName) + ")";
  for (const vgpu::AllReduceAlgorithm& a : vgpu::all_reduce_algorithms()) {
    help += "; " + std::string(a.name) + ": " + std::string(a.what);
  }
  add_choice_flag(cmd, "--allreduce", s.allreduce, core::allreduce_choices(), help);
}

void add_pack_flags(CLI::App* cmd, core::RunSettings& s) {
  add_unsigned_flag(
      cmd, "--bytes-per-pack", s.packs.bytes_per_pack, 0, std::uint64_t{1} << 40,
      "All-reduce the gradients in packs, last layer first, each closed once it holds more than "
      "this many bytes (TensorFlow's CommunicationOptions(bytes_per_pack=...); PyTorch DDP calls "
      "them buckets, bucket_cap_mb). 0: one pack, TensorFlow's default");
  add_whole_number_flag(
      cmd, "--num-packs", s.packs.num_packs, 0, 1 << 20,
      "All-reduce the gradients in this many equal packs, last first (TensorFlow's "
      "NcclAllReduce(num_packs=...)); not with --bytes-per-pack. 0: one pack");
  cmd->add_flag("--overlap,!--no-overlap", s.packs.overlap,
                "With several packs, start each pack's all-reduce as soon as backward has written "
                "it, while backward goes on (the default, as TensorFlow 2.21 ran its packs): a "
                "thread per device, which on a CUDA GPU queues the packs on a second stream of "
                "the GPU (the step then runs without a CUDA graph; several workers: the packs "
                "follow backward). The weights are the same bit for bit either way");
}

void add_training_flags(CLI::App* cmd, TrainOptions& o) {
  core::RunSettings& s = o.settings;
  add_model_flag(cmd, s);
  add_device_flags(cmd, s.devices);
  add_batch_per_replica_flag(cmd, s);
  add_whole_number_flag(cmd, "--epochs", s.epochs, 1, 1000, "Passes over the training set");
  add_whole_number_flag(
      cmd, "--max-steps", s.max_steps, 0, std::int64_t{1} << 40,
      "Stop after this many global steps (then still evaluate and report); 0: no limit");
  add_optimizer_flags(cmd, s);
  add_allreduce_flag(cmd, s);
  add_pack_flags(cmd, s);
  add_choice_flag(cmd, "--loss-scaling", s.loss_scaling,
                  "How a replica scales its loss; all but shard-mean agree on full batches");
  add_unsigned_flag(cmd, "--seed", s.seed, 0, std::numeric_limits<std::uint64_t>::max(),
                    "Seed for initial weights and shuffling");
  add_text_flag(cmd, "--data", o.data_dir, "Folder with Fashion-MNIST's gzipped IDX files")
      ->type_name("DIR");
  add_unsigned_flag(cmd, "--train-examples", s.train_examples, 0, std::uint64_t{1} << 31,
                    "Use only the first N training examples (0: all) for quick demos");
  add_fault_flags(cmd, o.faults);
  // Once parsed, the command's flags that were given (those its caller adds after these too).
  cmd->parse_complete_callback([cmd, &o] {
    o.given.clear();
    for (const CLI::Option* option : cmd->get_options()) {
      if (option->count() > 0) o.given.insert(option->get_name());
    }
  });
}

// Flags are checked one by one by CLI11; what depends on several of them is checked here, and the
// output files are created (as temporaries) so a path that cannot be written is said now. What
// depends on the devices (is a GPU visible, can NCCL run on them) is checked when they are made,
// still before the dataset is loaded.
std::string check_train_options(const TrainOptions& o, int* gpus, OutputFiles* outputs) {
  std::string problem;
  *gpus = device_count(o.settings.devices, &problem);
  if (problem.empty()) problem = check_fault_devices(o.faults, *gpus);
  if (problem.empty() && o.settings.packs.bytes_per_pack > 0 && o.settings.packs.num_packs > 0) {
    problem =
        "--bytes-per-pack and --num-packs both given: give one (packs by bytes, as TensorFlow's "
        "CollectiveAllReduce, or a count of equal packs, as its NcclAllReduce)";
  }
  if (problem.empty() && outputs != nullptr) problem = outputs->add("--history", o.history_file);
  if (problem.empty() && outputs != nullptr) problem = outputs->add("--trace", o.trace_file);
  return problem;
}

core::FashionMnist load_training_data(const TrainOptions& o, std::string* problem) {
  const auto load_start = vgpu::Clock::now();
  // Said before the load (a second or two), what it loaded after it: on the same line where
  // the terminal has room.
  const int width = terminal_width();
  const std::string loading =
      core::wrap_line("Loading Fashion-MNIST from " + o.data_dir + " ...", width, 0, "  ");
  std::printf("%s", loading.c_str());
  std::fflush(stdout);
  core::FashionMnist data = core::load_fashion_mnist(o.data_dir);
  if (o.settings.train_examples > data.train.size()) {
    std::printf("\n");
    std::fflush(stdout);
    *problem = "--train-examples " + std::to_string(o.settings.train_examples) + ": " + o.data_dir +
               " holds " + std::to_string(data.train.size()) +
               " training images; give at most that many (0: all of them)";
    return data;
  }
  if (o.settings.train_examples > 0) data.train = data.train.head(o.settings.train_examples);
  const std::string loaded =
      formatted("%zu training and %zu test images (%.1f s)", data.train.size(), data.test.size(),
                vgpu::seconds_between(load_start, vgpu::Clock::now()));
  const std::size_t line_start = loading.rfind('\n');
  const int used = static_cast<int>(core::character_count(
      line_start == std::string::npos ? loading : loading.substr(line_start + 1)));
  if (used + 1 + static_cast<int>(loaded.size()) <= width) {
    std::printf(" %s\n", loaded.c_str());
  } else {
    std::printf("\n");
    print_wrapped(loaded, "  ", "  ", width);
  }
  std::fflush(stdout);  // before any error on stderr, also when stdout is a pipe
  return data;
}

}  // namespace mirrorlab::app
