// What mirrorlab prints in Keras' words: model.summary() and the progress bar, pinned to what
// Keras 3.15 (TensorFlow 2.21) printed when scripts/check-tensorflow ran it.
#include <gtest/gtest.h>

#include <string>

#include "app/output/keras_progress.h"
#include "core/nn/model.h"
#include "core/session/text/keras_summary.h"
#include "virtualgpu/memory/memory_arena.h"

namespace mirrorlab::app {
namespace {

using core::format_duration_per_step;
using core::format_eta;
using core::format_metric;
using core::model_summary;
using core::progress_bar;
using core::readable_memory_size;
using core::with_commas;

TEST(ModelSummary, IsKeras3sTableForTheCnn) {
  vgpu::MemoryArena arena("/gpu:0", std::size_t{64} << 20);
  const auto model = core::Model::create(core::ModelKind::kCnn, arena);
  const std::string summary = model_summary(*model, "cnn");
  // Keras 3's lines for the same layers (its ReLU layers written out as ours are).
  for (const char* line :
       {"Model: \"cnn\"\n"
        "┏━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━┓\n"
        "┃ Layer (type)                    ┃ Output Shape           ┃       Param # ┃\n"
        "┡━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━┩\n"
        "│ conv2d (Conv2D)                 │ (None, 26, 26, 32)     │           320 │\n"
        "├─────────────────────────────────┼────────────────────────┼───────────────┤\n",
        "│ max_pooling2d (MaxPooling2D)    │ (None, 13, 13, 32)     │             0 │\n",
        "│ dense (Dense)                   │ (None, 128)            │       692,352 │\n",
        "│ dense_1 (Dense)                 │ (None, 10)             │         1,290 │\n"
        "└─────────────────────────────────┴────────────────────────┴───────────────┘\n"
        " Total params: 693,962 (2.65 MB)\n"
        " Trainable params: 693,962 (2.65 MB)\n"
        " Non-trainable params: 0 (0.00 B)\n"}) {
    EXPECT_NE(summary.find(line), std::string::npos) << line << "\nnot in\n" << summary;
  }
}

TEST(ModelSummary, PythonsRowsFoldAnActivationAndNameAnActivationLayersType) {
  vgpu::MemoryArena arena("/gpu:0", std::size_t{64} << 20);
  const auto model = core::Model::create(core::ModelKind::kMlp, arena);
  // The MLP's first ReLU as a Dense's activation="relu", its second as an Activation("relu").
  const std::string summary =
      model_summary(*model, "mlp", {{"re_lu"}, {{"re_lu_1", "Activation"}}});
  EXPECT_EQ(summary.find("re_lu (ReLU)"), std::string::npos) << summary;
  EXPECT_NE(summary.find("│ re_lu_1 (Activation)            │ (None, 128)            │"),
            std::string::npos)
      << summary;
  EXPECT_EQ(summary.find("(ReLU)"), std::string::npos) << summary;
  // The folded layer's parameters (none) and every other layer's still count.
  EXPECT_NE(summary.find(" Total params: " + with_commas(model->num_params())), std::string::npos);
}

TEST(ModelSummary, SizesAndCountsAreWrittenAsKerasWritesThem) {
  EXPECT_EQ(with_commas(0), "0");
  EXPECT_EQ(with_commas(999), "999");
  EXPECT_EQ(with_commas(235146), "235,146");
  EXPECT_EQ(with_commas(1234567), "1,234,567");
  EXPECT_EQ(readable_memory_size(0), "0.00 B");
  EXPECT_EQ(readable_memory_size(235146.0 * 4), "918.54 KB");
  EXPECT_EQ(readable_memory_size(693962.0 * 4), "2.65 MB");
  EXPECT_EQ(readable_memory_size(1023), "1023.00 B");
  EXPECT_EQ(readable_memory_size(1024), "1.00 KB");
}

TEST(KerasProgress, BarCounterAndTimesAreKeras3s) {
  // Keras 3: "24/24 " then 20 cells, green for done and grey to go, counter in bold.
  EXPECT_EQ(progress_bar(24, 24, true),
            "\x1b[1m24/24\x1b[0m \x1b[32m━━━━━━━━━━━━━━━━━━━━\x1b[0m\x1b[37m\x1b[0m");
  EXPECT_EQ(progress_bar(5, 24, true),
            "\x1b[1m 5/24\x1b[0m \x1b[32m━━━━\x1b[0m\x1b[37m━━━━━━━━━━━━━━━━\x1b[0m");
  EXPECT_EQ(progress_bar(1, 24, true), "\x1b[1m 1/24\x1b[0m \x1b[37m━━━━━━━━━━━━━━━━━━━━\x1b[0m");
  // Without a terminal: no colour codes, the part to go drawn differently.
  EXPECT_EQ(progress_bar(6, 32, false), " 6/32 ━━━─────────────────");
  EXPECT_EQ(progress_bar(0, 0, false), "0/0 ━━━━━━━━━━━━━━━━━━━━");
  EXPECT_EQ(format_duration_per_step(0.035), "35ms/step");
  EXPECT_EQ(format_duration_per_step(2.4), "2s/step");
  EXPECT_EQ(format_duration_per_step(0.00085), "850us/step");
  EXPECT_EQ(format_duration_per_step(0.0), "0s/step");
  EXPECT_EQ(format_eta(14.7), "14s");
  EXPECT_EQ(format_eta(125), "2:05");
  EXPECT_EQ(format_eta(3725), "1:02:05");
  EXPECT_EQ(format_metric(0.10467), "0.1047");
  EXPECT_EQ(format_metric(2.3246), "2.3246");
  EXPECT_EQ(format_metric(0.0002), "2.0000e-04");
}

// The first epoch's log: its steps, seconds, and (loss, accuracy) on training and validation.
core::EpochLog first_epoch(std::int64_t steps, double seconds, core::Metrics train,
                           core::Metrics validation) {
  core::EpochLog log;
  log.epoch = 1;
  log.steps = log.steps_per_epoch = steps;
  log.seconds = seconds;
  log.train = train;
  log.has_validation = true;
  log.validation = validation;
  return log;
}

core::Metrics loss_and_accuracy(double loss, double accuracy) {
  core::Metrics m;
  m.loss = loss;
  m.accuracy = accuracy;
  return m;
}

TEST(KerasProgress, TheEpochLineOrdersTheMetricsAsKeras3Does) {
  std::FILE* out = std::tmpfile();
  ASSERT_NE(out, nullptr);
  KerasProgress progress(out, false);
  progress.on_epoch_begin(1, 2, 24);
  progress.on_epoch_end(
      first_epoch(24, 0.84, loss_and_accuracy(2.3246, 0.1047), loss_and_accuracy(2.3128, 0.094)));
  std::rewind(out);
  char text[512] = {};
  const std::size_t n = std::fread(text, 1, sizeof text - 1, out);
  std::fclose(out);
  // Keras 3.15's line for these numbers, colour codes aside.
  EXPECT_EQ(
      std::string(text, n),
      "Epoch 1/2\n24/24 ━━━━━━━━━━━━━━━━━━━━ 1s 35ms/step - accuracy: 0.1047 - loss: 2.3246 - "
      "val_accuracy: 0.0940 - val_loss: 2.3128\n");
}

// Keras 3.15's other lines, as it printed them when run here (2026-12-01):
// no "Epoch 1/1" for a fit of one epoch; verbose=2's "16/16 - 1s - 75ms/step - ..."; the loss
// alone without metrics=["accuracy"]; evaluate's line, the epoch's without validation.
TEST(KerasProgress, OneEpochVerboseTwoNoAccuracyAndEvaluateAsKeras3) {
  const core::EpochLog log =
      first_epoch(16, 1.2, loss_and_accuracy(2.4212, 0.107), loss_and_accuracy(2.3802, 0.12));

  core::KerasProgressText bar(false);
  EXPECT_EQ(bar.epoch_begin(1, 1), "");
  EXPECT_EQ(bar.epoch_begin(1, 2), "Epoch 1/2\n");

  core::KerasProgressText two(core::KerasTextStyle{false, true, true});
  EXPECT_EQ(two.epoch_begin(1, 2), "Epoch 1/2\n");
  EXPECT_EQ(two.batch_end(3, 16, log.train, 0.5), "");  // no bar, even where it could be live
  EXPECT_EQ(two.epoch_end(log),
            "16/16 - 1s - 75ms/step - accuracy: 0.1070 - loss: 2.4212 - val_accuracy: 0.1200 - "
            "val_loss: 2.3802\n");
  EXPECT_EQ(two.evaluate_end(16, 0.128, log.train),
            "16/16 - 0s - 8ms/step - accuracy: 0.1070 - loss: 2.4212\n");

  core::KerasProgressText loss_only(core::KerasTextStyle{false, false, false});
  EXPECT_EQ(loss_only.epoch_end(log),
            "16/16 ━━━━━━━━━━━━━━━━━━━━ 1s 75ms/step - loss: 2.4212 - val_loss: 2.3802\n");
  EXPECT_EQ(loss_only.evaluate_end(16, 0.064, log.train),
            "16/16 ━━━━━━━━━━━━━━━━━━━━ 0s 4ms/step - loss: 2.4212\n");
  // predict's: evaluate's without metrics (Keras 3.15: "2/2 - 0s - 17ms/step" at verbose=2).
  EXPECT_EQ(two.predict_end(2, 0.034), "2/2 - 0s - 17ms/step\n");
  EXPECT_EQ(loss_only.predict_end(16, 0.064), "16/16 ━━━━━━━━━━━━━━━━━━━━ 0s 4ms/step\n");
}

}  // namespace
}  // namespace mirrorlab::app
