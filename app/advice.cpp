#include "app/advice.h"

#include <new>

#include "app/flags/train_flags.h"
#include "core/io/dataset.h"
#include "virtualgpu/cuda/configuration_error.h"
#include "virtualgpu/memory/host_memory.h"
#include "virtualgpu/memory/memory_arena.h"

namespace mirrorlab::app {
namespace {

std::string configuration(const vgpu::ConfigurationError& e) {
  const std::string what = e.what();
  switch (e.subject()) {
    case vgpu::ConfigurationSubject::kDeviceCount:
      return "--gpus: " + what;
    case vgpu::ConfigurationSubject::kMemoryLimit:
      return "--memory-limit: " + what + ". Lower --memory-limit, or use fewer --gpus";
    case vgpu::ConfigurationSubject::kPhysicalGpus:
      return "--devices: " + what +
             ". 'mirrorlab devices' lists the GPUs; --gpus N makes N logical GPUs on one card";
    case vgpu::ConfigurationSubject::kSmSplit:
      return "--sm-split: " + what + ": lower --gpus, or leave out --sm-split to share the SMs";
    case vgpu::ConfigurationSubject::kBackend:
      return "--backend: " + what;
    case vgpu::ConfigurationSubject::kGeneral:
      break;
  }
  return what;
}

std::string out_of_memory(const vgpu::OutOfMemoryError& e, const AdviceContext& context) {
  const std::string what = std::string(e.what()) + ". ";
  switch (e.ran_out()) {
    case vgpu::MemoryRanOut::kLimit:
      if (context.bench) return what + "Lower -e/--maxbytes, or raise --memory-limit.";
      if (context.train != nullptr && context.train->settings.model == core::ModelKind::kMlp) {
        return what + "Use a higher --memory-limit or a smaller --batch-per-replica.";
      }
      return what +
             "Use a higher --memory-limit, a smaller --batch-per-replica, or, instead of the "
             "CNN, the smaller MLP (--model mlp).";
    case vgpu::MemoryRanOut::kHost:
      return what +
             "Use a lower --memory-limit or fewer --gpus, a smaller --batch-per-replica, or "
             "close other programs.";
    case vgpu::MemoryRanOut::kDevice:
      return what + "Use a lower --memory-limit or a smaller --batch-per-replica.";
    case vgpu::MemoryRanOut::kGpu:
      return what +
             "Close other programs using the card, give the devices less with --memory-limit so "
             "that together they fit in its free memory ('mirrorlab devices --backend cuda' "
             "shows it), or use a smaller --batch-per-replica.";
  }
  return e.what();
}

}  // namespace

std::string explain(const std::exception& error, const AdviceContext& context) {
  if (const auto* e = dynamic_cast<const vgpu::ConfigurationError*>(&error)) {
    return configuration(*e);
  }
  if (const auto* e = dynamic_cast<const vgpu::OutOfMemoryError*>(&error)) {
    return out_of_memory(*e, context);
  }
  if (const auto* e = dynamic_cast<const core::DataError*>(&error)) {
    return std::string(e->what()) +
           (e->missing() ? ", or pass --data DIR pointing at a folder with the four *-ubyte.gz "
                           "files."
                         : ", or fix --data to point at good files.");
  }
  if (dynamic_cast<const std::bad_alloc*>(&error) != nullptr) {
    // An allocation of the program's own (the dataset, a model's tensors) that the host refused:
    // under `ulimit -v` the address space left, else its RAM, says what limits the run.
    return "the host could not give this run the memory it asked for (std::bad_alloc): this "
           "process has " +
           vgpu::query_host_memory().describe() +
           ". Use a lower --memory-limit or fewer --gpus, or give the process more memory "
           "(raise ulimit -v, or close other programs).";
  }
  return error.what();
}

}  // namespace mirrorlab::app
