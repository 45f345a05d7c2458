// The Sequential models: Keras' parameter counts, deterministic initialisation, shapes, the
// whole-model gradient against finite differences, memory accounting and the empty shard.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "core/nn/fingerprint.h"
#include "core/nn/loss.h"
#include "core/nn/model.h"
#include "virtualgpu/memory/memory_arena.h"

namespace mirrorlab::core {
namespace {

constexpr std::size_t kArenaBytes = 256 * vgpu::kMiB;

Tensor random_images(vgpu::MemoryArena& arena, int batch, unsigned seed) {
  Tensor x(arena, {batch, 28, 28, 1}, "input images");
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> pixel(0.0f, 1.0f);
  for (float& v : x.span()) v = pixel(rng);
  return x;
}

std::vector<std::uint8_t> random_labels(int batch, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<std::uint8_t> labels(batch);
  for (auto& l : labels) l = static_cast<std::uint8_t>(rng() % 10);
  return labels;
}

TEST(Model, ParseKind) {
  EXPECT_EQ(parse_model_kind("cnn"), ModelKind::kCnn);
  EXPECT_EQ(parse_model_kind("mlp"), ModelKind::kMlp);
  EXPECT_STREQ(to_string(ModelKind::kCnn), "cnn");
  EXPECT_STREQ(to_string(ModelKind::kMlp), "mlp");
  EXPECT_THROW(parse_model_kind("resnet"), std::invalid_argument);
}

TEST(Model, CnnMatchesKerasSummary) {
  vgpu::MemoryArena arena("test:0", kArenaBytes);
  auto model = Model::create(ModelKind::kCnn, arena);
  EXPECT_EQ(model->num_params(), 693962u);
  std::size_t total = 0, offset = 0;
  for (const LayerSummary& s : model->summary()) {
    EXPECT_EQ(s.offset, offset) << s.name;
    offset += s.params;
    total += s.params;
  }
  EXPECT_EQ(total, 693962u);
  const auto& s = model->summary();
  ASSERT_EQ(s.size(), 7u);
  EXPECT_EQ(s[0].name, "conv2d");
  EXPECT_EQ(s[0].type, "Conv2D");
  EXPECT_EQ(s[0].params, 320u);
  EXPECT_EQ(s[0].output_shape, (Shape{26, 26, 32}));
  EXPECT_EQ(s[2].name, "max_pooling2d");
  EXPECT_EQ(s[2].output_shape, (Shape{13, 13, 32}));
  EXPECT_EQ(s[3].output_shape, (Shape{5408}));
  EXPECT_EQ(s[4].name, "dense");
  EXPECT_EQ(s[4].params, 692352u);
  EXPECT_EQ(s[6].name, "dense_1");
  EXPECT_EQ(s[6].params, 1290u);
  EXPECT_EQ(s[6].output_shape, (Shape{10}));
}

TEST(Model, MlpMatchesKerasSummary) {
  vgpu::MemoryArena arena("test:0", kArenaBytes);
  auto model = Model::create(ModelKind::kMlp, arena);
  EXPECT_EQ(model->num_params(), 235146u);
  std::vector<std::size_t> dense_params;
  for (const LayerSummary& s : model->summary()) {
    if (s.type == "Dense") dense_params.push_back(s.params);
  }
  EXPECT_EQ(dense_params, (std::vector<std::size_t>{200960, 32896, 1290}));
  EXPECT_EQ(model->summary().front().name, "flatten");
  EXPECT_EQ(model->summary().back().name, "dense_2");
}

TEST(Model, SameSeedSameBitsOtherSeedOtherBits) {
  vgpu::MemoryArena a("test:0", kArenaBytes), b("test:1", kArenaBytes);
  for (ModelKind kind : {ModelKind::kCnn, ModelKind::kMlp}) {
    auto m1 = Model::create(kind, a);
    auto m2 = Model::create(kind, b);
    m1->init(42);
    m2->init(42);
    ASSERT_EQ(m1->num_params(), m2->num_params());
    EXPECT_EQ(
        std::memcmp(m1->params().data(), m2->params().data(), m1->num_params() * sizeof(float)), 0);
    m2->init(43);
    EXPECT_NE(fingerprint(m1->params()), fingerprint(m2->params()));
    // Re-initialising with the first seed gives the first weights back.
    m2->init(42);
    EXPECT_EQ(fingerprint(m1->params()), fingerprint(m2->params()));
  }
}

TEST(Model, InitIsGlorotUniformWithZeroBiases) {
  vgpu::MemoryArena arena("test:0", kArenaBytes);
  auto model = Model::create(ModelKind::kCnn, arena);
  model->init(7);
  const auto& s = model->summary();
  const auto params = model->params();
  // conv2d: kernel 288 values within sqrt(6 / (9 + 288)), then 32 zero biases.
  const float conv_limit = std::sqrt(6.0f / (9 + 9 * 32));
  for (std::size_t i = 0; i < 288; ++i) {
    ASSERT_LT(std::abs(params[s[0].offset + i]), conv_limit + 1e-7f) << i;
  }
  for (std::size_t i = 288; i < 320; ++i) EXPECT_EQ(params[s[0].offset + i], 0.0f);
  const float dense_limit = std::sqrt(6.0f / (5408 + 128));
  float largest = 0;
  for (std::size_t i = 0; i < 5408 * 128; ++i) {
    largest = std::max(largest, std::abs(params[s[4].offset + i]));
  }
  EXPECT_LE(largest, dense_limit);
  EXPECT_GT(largest, 0.99f * dense_limit);
  for (std::size_t i = 5408 * 128; i < s[4].params; ++i) EXPECT_EQ(params[s[4].offset + i], 0.0f);
}

TEST(Model, ForwardShapes) {
  vgpu::MemoryArena arena("test:0", kArenaBytes);
  for (ModelKind kind : {ModelKind::kCnn, ModelKind::kMlp}) {
    auto model = Model::create(kind, arena);
    model->init(1);
    for (int batch : {1, 5, 3}) {
      Tensor x = random_images(arena, batch, 2);
      const Tensor& logits = model->forward(x);
      EXPECT_EQ(logits.shape(), (Shape{batch, 10})) << to_string(kind);
      for (float v : logits.span()) ASSERT_TRUE(std::isfinite(v));
    }
  }
}

// A user's list of layers (keras.Sequential from Python): the two named models are such lists,
// and a list of their layers makes the same model, bit for bit.
TEST(ModelSpec, TheNamedModelsAreListsOfLayers) {
  vgpu::MemoryArena a("test:0", kArenaBytes), b("test:1", kArenaBytes);
  EXPECT_EQ(describe(layer_specs_of(ModelKind::kCnn)),
            "Conv2D(32) ReLU MaxPooling2D Flatten Dense(128) ReLU Dense(10)");
  EXPECT_EQ(describe(layer_specs_of(ModelKind::kMlp)),
            "Flatten Dense(256) ReLU Dense(128) ReLU Dense(10)");
  for (ModelKind kind : {ModelKind::kCnn, ModelKind::kMlp}) {
    auto named = Model::create(kind, a);
    Model listed(make_layers(layer_specs_of(kind)), Model::input_shape_of(kind), b);
    named->init(7);
    listed.init(7);
    ASSERT_EQ(named->num_params(), listed.num_params());
    EXPECT_EQ(fingerprint(named->params()), fingerprint(listed.params()));
    ASSERT_EQ(named->summary().size(), listed.summary().size());
    for (std::size_t i = 0; i < named->summary().size(); ++i) {
      EXPECT_EQ(named->summary()[i].name, listed.summary()[i].name);
      EXPECT_EQ(named->summary()[i].output_shape, listed.summary()[i].output_shape);
    }
  }
}

TEST(ModelSpec, ALayerThatCannotBeMadeIsNamedWithWhatToGive) {
  using K = LayerSpec::Kind;
  const auto error = [](std::vector<LayerSpec> spec) {
    try {
      make_layers(spec);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("(made)");
  };
  EXPECT_EQ(error({}), "a model needs at least one layer");
  EXPECT_EQ(error({{K::kFlatten, 0, "flatten"}, {K::kDense, 0, "dense"}}),
            "layer 1 (Dense 'dense'): 0 units: give a number from 1 to 65536");
  EXPECT_EQ(error({{K::kConv2D, 70000, "conv2d"}}),
            "layer 0 (Conv2D 'conv2d'): 70000 filters: give a number from 1 to 65536");
  EXPECT_EQ(error({{K::kReLU, 3, "re_lu"}}), "layer 0 (ReLU 're_lu') takes no size (given 3)");
  EXPECT_EQ(error({{K::kFlatten, 0, ""}}), "layer 0 (Flatten '') has no name: give it one");
  EXPECT_EQ(error({{K::kFlatten, 0, "a"}, {K::kDense, 10, "a"}}),
            "layer 1 (Dense 'a'): another layer has that name: names must differ");
  // A shape that does not fit is the model's to say, as for the named models.
  vgpu::MemoryArena arena("test:0", kArenaBytes);
  EXPECT_THROW(Model(make_layers(std::vector<LayerSpec>{{K::kDense, 10, "dense"},
                                                        {K::kConv2D, 4, "conv2d"}}),
                     {28, 28, 1}, arena),
               std::invalid_argument);
}

TEST(Model, WrongInputShapeThrows) {
  vgpu::MemoryArena arena("test:0", kArenaBytes);
  auto model = Model::create(ModelKind::kCnn, arena);
  Tensor x(arena, {2, 28, 27, 1}, "x");
  EXPECT_THROW(model->forward(x), std::invalid_argument);
}

// Mean loss over the batch, as a replica with the whole global batch computes it.
double mean_loss(Model& model, const Tensor& x, const std::vector<std::uint8_t>& labels) {
  const LossStats s = softmax_cross_entropy(model.forward(x), labels, 0, nullptr);
  return s.loss_sum / static_cast<double>(labels.size());
}

void check_model_gradient(ModelKind kind) {
  vgpu::MemoryArena arena("test:0", kArenaBytes);
  auto model = Model::create(kind, arena);
  model->init(3);
  const int batch = 3;
  Tensor x = random_images(arena, batch, 4);
  const auto labels = random_labels(batch, 5);
  Tensor grad_logits;
  softmax_cross_entropy(model->forward(x), labels, 1.0f / batch, &grad_logits, &arena);
  model->backward(grad_logits);
  const std::vector<float> analytic(model->grads().begin(), model->grads().end());

  // Sample parameters from every layer that has some: a few at random, plus the one with the
  // largest gradient (a check that cannot pass by comparing zeros with zeros).
  std::mt19937 rng(6);
  std::vector<std::size_t> picks;
  for (const LayerSummary& s : model->summary()) {
    if (s.params == 0) continue;
    for (int i = 0; i < 6; ++i) picks.push_back(s.offset + rng() % s.params);
    std::size_t best = s.offset;
    for (std::size_t i = s.offset; i < s.offset + s.params; ++i) {
      if (std::abs(analytic[i]) > std::abs(analytic[best])) best = i;
    }
    picks.push_back(best);
    picks.push_back(s.offset + s.params - 1);  // a bias
  }
  const float eps = 1e-3f;
  int checked_nonzero = 0;
  for (std::size_t p : picks) {
    float& w = model->params()[p];
    const float saved = w;
    w = saved + eps;
    const double plus = mean_loss(*model, x, labels);
    w = saved - eps;
    const double minus = mean_loss(*model, x, labels);
    w = saved;
    const double numeric = (plus - minus) / (2.0 * eps);
    checked_nonzero += std::abs(numeric) > 1e-3;
    EXPECT_NEAR(analytic[p], numeric, 1e-3 + 3e-2 * std::abs(numeric))
        << to_string(kind) << " parameter " << p;
  }
  EXPECT_GT(checked_nonzero, static_cast<int>(picks.size()) / 3);
}

TEST(Model, CnnGradientMatchesFiniteDifferences) { check_model_gradient(ModelKind::kCnn); }
TEST(Model, MlpGradientMatchesFiniteDifferences) { check_model_gradient(ModelKind::kMlp); }

TEST(Model, OutOfMemoryNamesTheDevice) {
  vgpu::MemoryArena arena("GPU:3 (virtual)", vgpu::kMiB);
  try {
    auto model = Model::create(ModelKind::kCnn, arena);
    FAIL() << "a 2.6 MiB model fit in 1 MiB";
  } catch (const vgpu::OutOfMemoryError& e) {
    EXPECT_NE(std::string(e.what()).find("GPU:3 (virtual)"), std::string::npos) << e.what();
    EXPECT_EQ(e.device(), "GPU:3 (virtual)");
  }
  EXPECT_EQ(arena.in_use(), 0u);
}

TEST(Model, ActivationOutOfMemoryNamesTheLayer) {
  // Parameters and gradients (2 x 2.6 MiB) fit; a batch of 256 activations does not.
  vgpu::MemoryArena arena("GPU:0", 8 * vgpu::kMiB);
  auto model = Model::create(ModelKind::kCnn, arena);
  Tensor x(arena, {256, 28, 28, 1}, "input images");
  try {
    model->forward(x);
    FAIL() << "no exception";
  } catch (const vgpu::OutOfMemoryError& e) {
    EXPECT_NE(std::string(e.what()).find("conv2d/"), std::string::npos) << e.what();
  }
}

TEST(Model, EmptyBatchGivesEmptyLogitsAndZeroGradients) {
  vgpu::MemoryArena arena("test:0", kArenaBytes);
  for (ModelKind kind : {ModelKind::kCnn, ModelKind::kMlp}) {
    auto model = Model::create(kind, arena);
    model->init(1);
    // A full step first, so that the zeros below are written, not left over.
    Tensor x4 = random_images(arena, 4, 1);
    Tensor grad_logits;
    softmax_cross_entropy(model->forward(x4), random_labels(4, 2), 0.25f, &grad_logits, &arena);
    model->backward(grad_logits);
    Tensor x0(arena, {0, 28, 28, 1}, "empty shard");
    const Tensor& logits = model->forward(x0);
    EXPECT_EQ(logits.shape(), (Shape{0, 10}));
    const LossStats s = softmax_cross_entropy(logits, {}, 0.25f, &grad_logits, &arena);
    EXPECT_EQ(s.count, 0);
    model->backward(grad_logits);
    for (float g : model->grads()) ASSERT_EQ(g, 0.0f) << to_string(kind);
  }
}

TEST(Model, StepsReuseMemoryAndDestructionGivesItAllBack) {
  vgpu::MemoryArena arena("test:0", kArenaBytes);
  {
    auto model = Model::create(ModelKind::kCnn, arena);
    model->init(1);
    EXPECT_GE(arena.in_use(), 2 * 693962 * sizeof(float));
    Tensor x = random_images(arena, 8, 1), grad_logits;
    const auto labels = random_labels(8, 2);
    std::size_t after_first = 0;
    for (int step = 0; step < 3; ++step) {
      softmax_cross_entropy(model->forward(x), labels, 0.125f, &grad_logits, &arena);
      model->backward(grad_logits);
      if (step == 0) after_first = arena.in_use();
      EXPECT_EQ(arena.in_use(), after_first) << "step " << step << " allocated again";
    }
    // A smaller last batch fits in the blocks already taken.
    Tensor x3 = random_images(arena, 3, 1);
    const std::size_t with_x3 = arena.in_use();
    softmax_cross_entropy(model->forward(x3), random_labels(3, 3), 0.125f, &grad_logits, &arena);
    model->backward(grad_logits);
    EXPECT_EQ(arena.in_use(), with_x3);
  }
  EXPECT_EQ(arena.in_use(), 0u);
}

}  // namespace
}  // namespace mirrorlab::core
