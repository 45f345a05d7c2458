// Optimizers against hand-worked steps: literal values worked out on paper for the first steps,
// and an independent double-precision transcription of Keras' formulas for several steps.
// Also: names and parsing, size checks, and slots taken from (and counted in) the arena.
#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/nn/optimizer.h"
#include "virtualgpu/memory/memory_arena.h"

namespace mirrorlab::core {
namespace {

// SGD here is SGD with momentum 0.9 (its slot and its velocity checked); plain SGD, Keras'
// default, has its own tests below.
OptimizerConfig config_for(OptimizerKind kind, float lr) {
  OptimizerConfig config;
  config.kind = kind;
  config.learning_rate = lr;
  if (kind == OptimizerKind::kSgd) config.momentum = 0.9f;
  return config;
}

// Relative comparison with a small absolute floor (for values near zero).
void expect_close(double expected, double actual, double rel, const std::string& where) {
  const double tol = rel * std::abs(expected) + 1e-9;
  EXPECT_NEAR(actual, expected, tol) << where;
}

// The gradients fed at step s (0-based) for parameter i: mixed signs and scales, so that the
// per-element normalisation of Adam and Nadam is exercised.
double grad_at(int step, std::size_t i) {
  static const double kBase[] = {0.5, -0.25, 3.0, -0.001, 0.0, 1.5};
  const double scale[] = {1.0, -0.5, 2.0};
  return kBase[i % 6] * scale[step % 3] + 0.01 * step;
}

// ---- Independent references, in double, written straight from the formulas. ----

struct SgdRef {
  double lr, momentum;
  std::vector<double> v;
  void step(std::vector<double>& w, const std::vector<double>& g) {
    v.resize(w.size(), 0.0);
    for (std::size_t i = 0; i < w.size(); ++i) {
      v[i] = momentum * v[i] - lr * g[i];
      w[i] += v[i];
    }
  }
};

struct AdamRef {
  double lr, b1, b2, eps;
  std::vector<double> m, v;
  int t = 0;
  void step(std::vector<double>& w, const std::vector<double>& g) {
    m.resize(w.size(), 0.0);
    v.resize(w.size(), 0.0);
    ++t;
    const double lr_t = lr * std::sqrt(1.0 - std::pow(b2, t)) / (1.0 - std::pow(b1, t));
    for (std::size_t i = 0; i < w.size(); ++i) {
      m[i] = b1 * m[i] + (1.0 - b1) * g[i];
      v[i] = b2 * v[i] + (1.0 - b2) * g[i] * g[i];
      w[i] -= lr_t * m[i] / (std::sqrt(v[i]) + eps);
    }
  }
};

struct NadamRef {
  double lr, b1, b2, eps;
  std::vector<double> m, v;
  double m_schedule = 1.0;
  int t = 0;
  void step(std::vector<double>& w, const std::vector<double>& g) {
    m.resize(w.size(), 0.0);
    v.resize(w.size(), 0.0);
    ++t;
    const double u_t = b1 * (1.0 - 0.5 * std::pow(0.96, t));  // Keras 3: 0.96^t
    const double u_t1 = b1 * (1.0 - 0.5 * std::pow(0.96, t + 1));
    m_schedule *= u_t;
    const double m_schedule_next = m_schedule * u_t1;
    for (std::size_t i = 0; i < w.size(); ++i) {
      m[i] = b1 * m[i] + (1.0 - b1) * g[i];
      v[i] = b2 * v[i] + (1.0 - b2) * g[i] * g[i];
      const double g_hat = g[i] / (1.0 - m_schedule);
      const double m_hat = m[i] / (1.0 - m_schedule_next);
      const double v_hat = v[i] / (1.0 - std::pow(b2, t));
      const double m_bar = (1.0 - u_t) * g_hat + u_t1 * m_hat;
      w[i] -= lr * m_bar / (std::sqrt(v_hat) + eps);
    }
  }
};

// Runs `steps` steps of the optimizer and of the reference side by side, comparing after each.
template <class Ref>
void run_against_reference(OptimizerKind kind, Ref ref, float lr, int steps, double rel) {
  const std::size_t n = 12;
  vgpu::MemoryArena arena("test:0", vgpu::kMiB);
  auto opt = make_optimizer(config_for(kind, lr), n, arena);
  // Weights start at 0, so that float resolves the steps themselves: a float weight near 1
  // cannot resolve a 1e-3 step to better than ~1e-4 relative, which would hide formula errors.
  std::vector<float> w(n, 0.0f);
  std::vector<double> w_ref(n, 0.0);
  for (int s = 0; s < steps; ++s) {
    std::vector<float> g(n);
    std::vector<double> g_ref(n);
    for (std::size_t i = 0; i < n; ++i) {
      g[i] = static_cast<float>(grad_at(s, i));
      g_ref[i] = g[i];  // the same float value, so only the arithmetic differs
    }
    opt->apply(w, g);
    ref.step(w_ref, g_ref);
    EXPECT_EQ(opt->iterations(), s + 1);
    for (std::size_t i = 0; i < n; ++i) {
      expect_close(w_ref[i], w[i], rel,
                   std::string(to_string(kind)) + " step " + std::to_string(s + 1) + " param " +
                       std::to_string(i));
    }
  }
}

// ---- Literal values worked out by hand. ----

TEST(Sgd, MomentumThreeStepsByHand) {
  // lr 0.1, momentum 0.9, w = 1, g = 0.5 every step:
  //   v1 = -0.05                      w1 = 0.95
  //   v2 = 0.9*-0.05 - 0.05 = -0.095  w2 = 0.855
  //   v3 = 0.9*-0.095 - 0.05 = -0.1355 w3 = 0.7195
  vgpu::MemoryArena arena("test:0", vgpu::kMiB);
  auto opt = make_optimizer(config_for(OptimizerKind::kSgd, 0.1f), 1, arena);
  std::vector<float> w = {1.0f};
  const std::vector<float> g = {0.5f};
  const double expected[] = {0.95, 0.855, 0.7195};
  for (int s = 0; s < 3; ++s) {
    opt->apply(w, g);
    EXPECT_NEAR(w[0], expected[s], 1e-6) << "step " << s + 1;
  }
  EXPECT_EQ(opt->iterations(), 3);
}

TEST(Sgd, HasKerasDefaultOfNoMomentum) {
  EXPECT_EQ(OptimizerConfig{}.momentum, 0.0f);  // keras.optimizers.SGD(): momentum=0.0
}

TEST(Sgd, PlainWithoutMomentumHasNoSlot) {
  vgpu::MemoryArena arena("test:0", vgpu::kMiB);
  OptimizerConfig config = config_for(OptimizerKind::kSgd, 0.1f);
  config.momentum = 0.0f;
  auto opt = make_optimizer(config, 4, arena);
  EXPECT_EQ(arena.in_use(), 0u);
  std::vector<float> w = {1.0f, -1.0f, 0.0f, 2.0f};
  const std::vector<float> g = {0.5f, -0.5f, 1.0f, 0.0f};
  opt->apply(w, g);
  opt->apply(w, g);
  // Two plain steps: w - 2*lr*g.
  EXPECT_NEAR(w[0], 0.9f, 1e-6);
  EXPECT_NEAR(w[1], -0.9f, 1e-6);
  EXPECT_NEAR(w[2], -0.2f, 1e-6);
  EXPECT_NEAR(w[3], 2.0f, 1e-6);
  EXPECT_EQ(opt->iterations(), 2);
}

TEST(Adam, FirstStepWorkedOnPaper) {
  // Step 1: m = 0.1 g, v = 0.001 g^2, lr_t = lr*sqrt(0.001)/0.1, so
  //   dw = -lr * g / (|g| + eps/sqrt(0.001)) = -lr * g / (|g| + 3.16227766e-6).
  // With lr = 1e-3 and g = 0.5: dw = -1e-3 / (1 + 6.32455532e-6) = -9.99993675e-4.
  vgpu::MemoryArena arena("test:0", vgpu::kMiB);
  auto opt = make_optimizer(config_for(OptimizerKind::kAdam, 1e-3f), 1, arena);
  std::vector<float> w = {0.0f};  // start at 0 so that float resolves the step itself
  opt->apply(w, std::vector<float>{0.5f});
  expect_close(-9.99993675e-4, w[0], 1e-6, "adam step 1, g = 0.5");
}

TEST(Adam, FirstStepIsMinusLrTimesSignOfGradient) {
  // The same step for large |g|: the eps term is negligible and the step is -lr*sign(g),
  // whatever the scale of the gradient (Adam's signature behaviour).
  for (const float g : {-10.0f, 25.0f, 1000.0f, -4096.0f}) {
    vgpu::MemoryArena arena("test:0", vgpu::kMiB);
    auto opt = make_optimizer(config_for(OptimizerKind::kAdam, 1e-3f), 1, arena);
    std::vector<float> w = {0.0f};
    opt->apply(w, std::vector<float>{g});
    expect_close(g > 0 ? -1e-3 : 1e-3, w[0], 1e-6, "adam step 1, g = " + std::to_string(g));
  }
}

TEST(Nadam, FirstStepWorkedOnPaper) {
  // Step 1 with m = 0.1 g, v = 0.001 g^2 (v' = g^2), Keras 3's schedule (0.96^t, where Keras 2
  // had 0.96^(0.004 t); scripts/check-tensorflow caught the difference):
  //   u1 = 0.9*(1 - 0.5*0.96) = 0.468, u2 = 0.9*(1 - 0.5*0.96^2) = 0.48528,
  //   m_bar = (1-u1) g/(1-u1) + u2 * 0.1 g/(1-u1 u2) = g * (1 + 0.1 u2/(1 - u1 u2)),
  //   dw = -lr * m_bar / (|g| + eps).
  // u1 u2 = 0.22711104; 0.1 u2 / (1 - u1 u2) = 0.0627878033.
  // With lr = 1e-3 and g = 0.5 (eps negligible: 2e-7 relative): dw = -1.06278759e-3.
  const double b1 = 0.9;
  const double u1 = b1 * (1.0 - 0.5 * 0.96);
  const double u2 = b1 * (1.0 - 0.5 * 0.96 * 0.96);
  EXPECT_NEAR(u1, 0.468, 1e-12);
  EXPECT_NEAR(u2, 0.48528, 1e-12);
  vgpu::MemoryArena arena("test:0", vgpu::kMiB);
  auto opt = make_optimizer(config_for(OptimizerKind::kNadam, 1e-3f), 1, arena);
  std::vector<float> w = {0.0f};
  opt->apply(w, std::vector<float>{0.5f});
  const double exact = -1e-3 * 0.5 * (1.0 + 0.1 * u2 / (1.0 - u1 * u2)) / (0.5 + 1e-7);
  expect_close(exact, w[0], 1e-6, "nadam step 1, exact");
  expect_close(-1.06278759e-3, w[0], 1e-6, "nadam step 1, worked on paper");
}

// ---- Several steps against the independent references. ----

TEST(Sgd, MomentumMatchesReferenceOverThreeSteps) {
  run_against_reference(OptimizerKind::kSgd, SgdRef{0.05f, 0.9f, {}}, 0.05f, 3, 1e-5);
}

TEST(Adam, MatchesReferenceOverThreeSteps) {
  run_against_reference(OptimizerKind::kAdam, AdamRef{1e-3f, 0.9f, 0.999f, 1e-7f, {}, {}}, 1e-3f, 3,
                        1e-5);
}

TEST(Nadam, MatchesReferenceOverThreeSteps) {
  run_against_reference(OptimizerKind::kNadam, NadamRef{2e-3f, 0.9f, 0.999f, 1e-7f, {}, {}}, 2e-3f,
                        3, 1e-5);
}

TEST(Nadam, MatchesReferenceOverManySteps) {
  // The momentum schedule is a running product: a long run checks it is carried, not recomputed.
  run_against_reference(OptimizerKind::kNadam, NadamRef{1e-3f, 0.9f, 0.999f, 1e-7f, {}, {}}, 1e-3f,
                        50, 1e-4);
}

TEST(Adam, MatchesReferenceOverManySteps) {
  run_against_reference(OptimizerKind::kAdam, AdamRef{1e-3f, 0.9f, 0.999f, 1e-7f, {}, {}}, 1e-3f,
                        50, 1e-4);
}

// ---- Names, parsing and checks. ----

TEST(OptimizerKind, ParsesAndPrintsTheThreeNames) {
  EXPECT_EQ(parse_optimizer_kind("sgd"), OptimizerKind::kSgd);
  EXPECT_EQ(parse_optimizer_kind("adam"), OptimizerKind::kAdam);
  EXPECT_EQ(parse_optimizer_kind("nadam"), OptimizerKind::kNadam);
  for (const auto kind : {OptimizerKind::kSgd, OptimizerKind::kAdam, OptimizerKind::kNadam}) {
    EXPECT_EQ(parse_optimizer_kind(to_string(kind)), kind);
    vgpu::MemoryArena arena("test:0", vgpu::kMiB);
    EXPECT_EQ(make_optimizer(config_for(kind, 0.01f), 3, arena)->name(), to_string(kind));
  }
}

TEST(OptimizerKind, RejectsOtherNamesWithAClearMessage) {
  for (const std::string bad : {"Adam ", "", "rmsprop", "ADAM", "sgd "}) {
    try {
      parse_optimizer_kind(bad);
      ADD_FAILURE() << "'" << bad << "' was accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_EQ(std::string(e.what()),
                "unknown optimizer '" + bad + "': choose sgd, adam or nadam");
    }
  }
}

TEST(Optimizer, SizeMismatchThrowsAndChangesNothing) {
  for (const auto kind : {OptimizerKind::kSgd, OptimizerKind::kAdam, OptimizerKind::kNadam}) {
    vgpu::MemoryArena arena("test:0", vgpu::kMiB);
    auto opt = make_optimizer(config_for(kind, 0.01f), 4, arena);
    std::vector<float> w4(4, 1.0f), w3(3, 1.0f);
    const std::vector<float> g4(4, 0.5f), g5(5, 0.5f);
    EXPECT_THROW(opt->apply(w3, g4), std::invalid_argument) << to_string(kind);
    EXPECT_THROW(opt->apply(w4, g5), std::invalid_argument) << to_string(kind);
    try {
      opt->apply(w3, std::vector<float>(3, 0.5f));
      ADD_FAILURE() << "3 parameters accepted by an optimizer made for 4";
    } catch (const std::invalid_argument& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find('3'), std::string::npos) << msg;
      EXPECT_NE(msg.find('4'), std::string::npos) << msg;
    }
    EXPECT_EQ(opt->iterations(), 0);
    EXPECT_EQ(w4, std::vector<float>(4, 1.0f));
    // It still works afterwards.
    opt->apply(w4, g4);
    EXPECT_EQ(opt->iterations(), 1);
  }
}

TEST(Optimizer, SlotsAreCountedInTheArena) {
  const std::size_t n = 1000;
  struct Case {
    OptimizerKind kind;
    std::size_t bytes;
  };
  for (const Case c : {Case{OptimizerKind::kSgd, 4 * n}, Case{OptimizerKind::kAdam, 8 * n},
                       Case{OptimizerKind::kNadam, 8 * n}}) {
    vgpu::MemoryArena arena("test:0", vgpu::kMiB);
    auto weights = arena.allocate(4 * n, "weights");
    const std::size_t before = arena.in_use();
    {
      auto opt = make_optimizer(config_for(c.kind, 0.01f), n, arena);
      EXPECT_EQ(arena.in_use() - before, c.bytes) << to_string(c.kind);
    }
    EXPECT_EQ(arena.in_use(), before) << to_string(c.kind) << " did not give its slots back";
  }
}

TEST(Optimizer, ALearningRateSetTakesEffectAndABadOneChangesNothing) {
  for (const auto kind : {OptimizerKind::kSgd, OptimizerKind::kAdam, OptimizerKind::kNadam}) {
    vgpu::MemoryArena arena("test:0", vgpu::kMiB);
    OptimizerConfig config = config_for(kind, 0.1f);
    config.momentum = 0.0f;  // plain SGD: its step is -lr*g
    auto opt = make_optimizer(config, 1, arena);
    for (const float bad : {0.0f, -0.5f, NAN, INFINITY}) {
      EXPECT_THROW(opt->set_learning_rate(bad), std::invalid_argument) << bad;
    }
    opt->set_learning_rate(0.25f);
    std::vector<float> w = {0.0f};
    opt->apply(w, std::vector<float>{4.0f});
    // SGD: -0.25*4; Adam's first step: -lr*sign(g); Nadam's: -lr*1.0627878 (its first step
    // worked on paper above, for any g whose eps is negligible).
    const double expected = kind == OptimizerKind::kSgd    ? -1.0
                            : kind == OptimizerKind::kAdam ? -0.25
                                                           : -0.25 * 1.0627878033;
    expect_close(expected, w[0], 1e-5, std::string(to_string(kind)) + " after set 0.25");
  }
}

TEST(Optimizer, TooSmallArenaThrowsOutOfMemory) {
  const std::size_t n = 1000;
  for (const auto kind : {OptimizerKind::kSgd, OptimizerKind::kAdam, OptimizerKind::kNadam}) {
    // Room for one slot but not two: SGD's single slot does not fit either (limit < 4n).
    vgpu::MemoryArena arena("test:0", kind == OptimizerKind::kSgd ? 4 * n - 1 : 6 * n);
    EXPECT_THROW(make_optimizer(config_for(kind, 0.01f), n, arena), vgpu::OutOfMemoryError)
        << to_string(kind);
    EXPECT_EQ(arena.in_use(), 0u) << to_string(kind) << " leaked a slot after the failure";
  }
}

}  // namespace
}  // namespace mirrorlab::core
