// Gradient packs: the model's gradients all-reduced in several pieces instead of one buffer, as
// TensorFlow's CommunicationOptions(bytes_per_pack=...) and NcclAllReduce(num_packs=...) do (and
// PyTorch DDP's buckets, Horovod's tensor fusion). What TensorFlow 2.21 does, found by running it
// (docs/tensorflow-packs.md):
//  - bytes_per_pack (CollectiveAllReduce, MultiWorkerMirroredStrategy): the weight tensors are
//    walked in reverse order (the last layer's bias first) and added to the current pack, which
//    closes as soon as its bytes are more than bytes_per_pack; what is left is the last pack.
//    0 means one pack. The MLP (40, 5120, 512, 131072, 1024, 802816 bytes backwards) makes
//    3 packs at 4096, 2 at 100000, 6 at 1.
//  - num_packs (NcclAllReduce, HierarchicalCopyAllReduce): the gradients concatenated in forward
//    order and cut into num_packs equal parts, the remainder in the last; a part may cut a
//    tensor.
// Either way a pack is one contiguous range of the flat gradient buffer (Model::weight_tensors()
// lies in forward order). Packs are numbered in the order they are all-reduced: backwards, so
// pack 0 is the one backward finishes first.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "core/nn/model.h"
#include "core/nn/optimizer.h"
#include "timing/pack_schedule.h"
#include "timing/step_time.h"

namespace mirrorlab::core {

struct PackOptions {
  std::size_t bytes_per_pack = 0;  // TensorFlow's CommunicationOptions; 0: not by bytes
  int num_packs = 0;               // NcclAllReduce's; 0: not by count
  // With several packs, in a training step: each pack's all-reduce starts as soon as backward has
  // written its gradients, on the device's communication lane, while backward computes the
  // layers before (TensorFlow 2.21 did: with 3 packs a replica's first pack was all-reduced
  // before its backward ended, docs/tensorflow-packs.md). False: every pack after backward.
  bool overlap = true;
  bool operator==(const PackOptions&) const = default;
};

struct GradientPack {
  std::size_t begin = 0, end = 0;    // elements of the flat gradient buffer
  std::vector<std::string> tensors;  // the weight tensors it holds (in part: "dense/kernel (part)")
  std::size_t bytes() const { return (end - begin) * sizeof(float); }
};

// The packs of `tensors` (which tile the flat buffer in forward order), in the order they are
// all-reduced. One pack when neither option is set. Throws std::invalid_argument when both are
// set, or num_packs is negative (a sentence saying what to give).
std::vector<GradientPack> make_gradient_packs(const std::vector<WeightTensor>& tensors,
                                              const PackOptions& options);

// For the timing model (timing/pack_schedule.h): each pack's bytes, and the share of backward done
// when backward has written it, from its layers' arithmetic (core/nn/training_flops.h): backward
// goes from the last layer to the first, and a pack is written when the layer holding its first
// gradient is.
std::vector<timing::PackWork> pack_work(ModelKind model, const std::vector<GradientPack>& packs);

// make_gradient_packs over the weight tensors of `model` as Model::create lays them out.
std::vector<GradientPack> gradient_packs_of(ModelKind model, const PackOptions& options);

// For a predicted step (timing/step_time.h): sets `inputs`' packs, their backward (the share of
// inputs.replica_compute that is backward, by its arithmetic) and overlap, for `model`'s gradients
// at `batch_per_replica` examples; leaves them empty (one buffer) where `options` make one pack.
// Returns the packs.
std::vector<GradientPack> set_step_packs(timing::StepInputs& inputs, ModelKind model,
                                         const OptimizerConfig& optimizer,
                                         std::size_t batch_per_replica, const PackOptions& options);

// How a predicted step with `packs` (more than one) is priced on `topology`, in a sentence:
// `backward` the backward it hides behind, as text; `no_overlap`: how the user turned overlap off.
std::string packs_step_sentence(const std::vector<GradientPack>& packs, const PackOptions& options,
                                const timing::Topology& topology, const std::string& backward,
                                const std::string& no_overlap);

// "3 packs (bytes_per_pack 4096): dense_2/bias, dense_2/kernel 5160 B; ..." for the log.
std::string describe_packs(const std::vector<GradientPack>& packs, const PackOptions& options);

}  // namespace mirrorlab::core
