// The Compare panel's "Predicted on a machine" tab, its "Training step: speed-up" section: one
// training step of the run's model on 1 to all of the chosen machine's GPUs (speedup_table.h),
// as `mirrorlab compare` prints it: each count's compute (in turns where engines are shared), the
// all-reduce TensorFlow would run, the step, images/s, speed-up and what each device added, the
// count where another device stops paying marked '!', and why. Computed when the machine, the
// run's model, optimizer or batch change, or (this-machine) at most once a second as the run takes
// steps; never every frame.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "gui/model/speedup_table.h"
#include "gui/panels/panel.h"

namespace mirrorlab::gui {

class SpeedupView {
 public:
  // Draws into the current window for `machine` (which has a topology); reports to `panel`.
  void Draw(FrameContext& frame, const char* panel, const ModelMachine& machine);

 private:
  static constexpr int kColumns = 11;
  // What the table was computed for.
  struct Inputs {
    std::string machine;
    std::uint64_t catalog = 0;
    core::ModelKind model = core::ModelKind::kMlp;
    std::vector<core::LayerSpec> layers;  // a model of the user's
    core::OptimizerKind optimizer = core::OptimizerKind::kAdam;
    double update_flops = 0;  // per parameter: the optimizer's settings that count
    std::size_t batch = 0;
    core::PackOptions packs;
    // this-machine only: the run and its last step the compute was measured to
    std::uint64_t run = 0;
    std::int64_t last_step = -1;
    bool operator==(const Inputs&) const = default;
  };
  void update(FrameContext& frame, const ModelMachine& machine);
  // `below`: the height of what follows the table and must stay in view.
  void draw_table(FrameContext& frame, const char* panel, float below);

  Inputs inputs_;
  bool computed_ = false;
  double computed_at_ = -1e9;  // frame.seconds_since_start
  SpeedupTable table_;
  std::vector<std::array<std::string, kColumns>> cells_;  // each row's text, made with the table
  std::string verdict_;                                   // the rule and where adding stops
  std::array<std::string, 5> details_;                    // how the numbers are worked out
};

}  // namespace mirrorlab::gui
