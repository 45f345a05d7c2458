#include "core/strategy/gradient_packs.h"

#include <algorithm>
#include <stdexcept>

#include "core/nn/training_flops.h"

namespace mirrorlab::core {
namespace {

std::string bytes_text(std::size_t bytes) {
  if (bytes >= 10 * 1024 * 1024) return std::to_string(bytes / (1024 * 1024)) + " MiB";
  if (bytes >= 10 * 1024) return std::to_string(bytes / 1024) + " KiB";
  return std::to_string(bytes) + " B";
}

std::vector<GradientPack> by_bytes(const std::vector<WeightTensor>& tensors, std::size_t limit) {
  std::vector<GradientPack> packs;
  GradientPack open;
  bool started = false;
  for (auto t = tensors.rbegin(); t != tensors.rend(); ++t) {
    if (!started) open = GradientPack{t->offset + t->size, t->offset + t->size, {}};
    started = true;
    open.begin = t->offset;
    open.tensors.push_back(t->name);
    if (open.bytes() > limit) {  // strictly more, as TensorFlow's group_by_size
      packs.push_back(std::move(open));
      started = false;
    }
  }
  if (started) packs.push_back(std::move(open));
  return packs;
}

std::vector<GradientPack> by_count(const std::vector<WeightTensor>& tensors, int count) {
  const std::size_t total = tensors.empty() ? 0 : tensors.back().offset + tensors.back().size;
  const auto n = static_cast<std::size_t>(count);
  const std::size_t part = total / n;  // TensorFlow's equal parts, the remainder in the last
  std::vector<GradientPack> packs;
  for (std::size_t p = n; p-- > 0;) {
    GradientPack pack{p * part, p + 1 == n ? total : (p + 1) * part, {}};
    for (auto t = tensors.rbegin(); t != tensors.rend(); ++t) {
      const std::size_t b = std::max(pack.begin, t->offset);
      const std::size_t e = std::min(pack.end, t->offset + t->size);
      if (b >= e) continue;
      pack.tensors.push_back(b == t->offset && e == t->offset + t->size ? t->name
                                                                        : t->name + " (part)");
    }
    packs.push_back(std::move(pack));
  }
  return packs;
}

}  // namespace

std::vector<GradientPack> make_gradient_packs(const std::vector<WeightTensor>& tensors,
                                              const PackOptions& options) {
  if (options.bytes_per_pack > 0 && options.num_packs > 0) {
    throw std::invalid_argument(
        "packs by bytes (bytes_per_pack " + std::to_string(options.bytes_per_pack) +
        ") and by count (num_packs " + std::to_string(options.num_packs) +
        ") at once: give one of them, as TensorFlow takes bytes_per_pack for "
        "CollectiveAllReduce and num_packs for NcclAllReduce");
  }
  if (options.num_packs < 0) {
    throw std::invalid_argument("num_packs " + std::to_string(options.num_packs) +
                                ": give a count of packs (1 or more), or 0 for one pack");
  }
  const std::size_t total = tensors.empty() ? 0 : tensors.back().offset + tensors.back().size;
  if (options.num_packs > 0 && static_cast<std::size_t>(options.num_packs) > total) {
    throw std::invalid_argument("num_packs " + std::to_string(options.num_packs) +
                                ": the model has only " + std::to_string(total) +
                                " gradients; give at most that many packs");
  }
  if (options.bytes_per_pack > 0) return by_bytes(tensors, options.bytes_per_pack);
  if (options.num_packs > 1) return by_count(tensors, options.num_packs);
  return by_bytes(tensors, static_cast<std::size_t>(-1));
}

std::vector<GradientPack> gradient_packs_of(ModelKind model, const PackOptions& options) {
  // The layout is the model's own: made once, on the host, weights and gradients only.
  const std::size_t params = training_flops(model, OptimizerConfig{}).params;
  vgpu::MemoryArena arena("/gradient packs", 2 * params * sizeof(float) + vgpu::kMiB);
  return make_gradient_packs(Model::create(model, arena)->weight_tensors(), options);
}

std::vector<GradientPack> set_step_packs(timing::StepInputs& inputs, ModelKind model,
                                         const OptimizerConfig& optimizer,
                                         std::size_t batch_per_replica,
                                         const PackOptions& options) {
  std::vector<GradientPack> packs = gradient_packs_of(model, options);
  inputs.packs.clear();
  inputs.backward = 0;
  inputs.overlap = options.overlap;
  if (packs.size() <= 1) return packs;
  inputs.packs = pack_work(model, packs);
  const TrainingFlops flops = training_flops(model, optimizer);
  inputs.backward = inputs.replica_compute * flops.backward *
                    static_cast<double>(batch_per_replica) / flops.per_step(batch_per_replica);
  return packs;
}

std::vector<timing::PackWork> pack_work(ModelKind model, const std::vector<GradientPack>& packs) {
  struct LayerSpan {
    std::size_t offset = 0, params = 0;
    double backward = 0;
  };
  std::vector<LayerSpan> layers;
  Shape shape = Model::input_shape_of(model);
  std::size_t offset = 0;
  double total = 0;
  for (const auto& layer : Model::layers_of(model)) {
    const LayerFlops f = layer->flops(shape);
    LayerSpan span{offset, 0, f.param_gradients + (layers.empty() ? 0 : f.input_gradient)};
    for (const ParamSpec& spec : layer->param_specs(shape)) span.params += shape_size(spec.shape);
    offset += span.params;
    total += span.backward;
    layers.push_back(span);
    shape = layer->output_shape(shape);
  }
  std::vector<timing::PackWork> work;
  for (const GradientPack& pack : packs) {
    double done = 0;  // backward from the last layer down to the one holding pack.begin
    for (auto l = layers.rbegin(); l != layers.rend(); ++l) {
      done += l->backward;
      if (l->params > 0 && pack.begin >= l->offset) break;
    }
    work.push_back(
        {static_cast<double>(pack.bytes()), total > 0 ? std::min(1.0, done / total) : 1});
  }
  return work;
}

std::string describe_packs(const std::vector<GradientPack>& packs, const PackOptions& options) {
  std::string text = std::to_string(packs.size()) + (packs.size() == 1 ? " pack" : " packs");
  if (options.bytes_per_pack > 0) {
    text += " (bytes_per_pack " + std::to_string(options.bytes_per_pack) + ")";
  } else if (options.num_packs > 0) {
    text += " (num_packs " + std::to_string(options.num_packs) + ")";
  }
  text += ", in the order they are all-reduced:";
  for (std::size_t i = 0; i < packs.size(); ++i) {
    text += i == 0 ? " " : "; ";
    for (std::size_t t = 0; t < packs[i].tensors.size(); ++t) {
      text += (t == 0 ? "" : ", ") + packs[i].tensors[t];
    }
    text.append(" ").append(bytes_text(packs[i].bytes()));
  }
  return text;
}

std::string packs_step_sentence(const std::vector<GradientPack>& packs, const PackOptions& options,
                                const timing::Topology& topology, const std::string& backward,
                                const std::string& no_overlap) {
  // Two devices' lanes beside their backward: at full speed where communication has hardware of
  // its own.
  const bool own_hardware = timing::communication_concurrency(topology, 2) >= 1;
  const std::string one_buffer =
      "\"one buffer\" is the step with the gradients all-reduced at once.";
  std::string text = "The gradients in " + describe_packs(packs, options) + ". ";
  if (!options.overlap) {
    return text + "Every pack after backward (" + no_overlap +
           "): each its own all-reduce, latency and all; " + one_buffer;
  }
  return text + "Each pack's all-reduce starts when backward has written it (backward is " +
         backward + " of the compute, by its arithmetic), at " +
         (own_hardware ? "full speed beside it (GPUs move data on hardware of their own)"
                       : "the speed the cores the replicas leave idle give it") +
         "; the all-reduce column is what the step waits for after backward, " + one_buffer;
}

}  // namespace mirrorlab::core
