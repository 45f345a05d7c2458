// Gradients: per replica and per layer, the L2 norm of the gradient each replica computed on its
// own shard; a heatmap of one chosen layer's gradient on every replica before the all-reduce
// (they differ: different examples) and after it (identical: every replica holds the sum); and
// the weights' fingerprints after the update, equal on every replica while they stay in sync.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gui/drawing/texture.h"
#include "gui/panels/panel.h"

namespace mirrorlab::gui {

// A line of the words beside or under the squares; `warning`: in the colour that says so.
struct GradientWordsLine {
  std::string text;
  bool warning = false;
};

class GradientsPanel : public Panel {
 public:
  const char* name() const override { return "Gradients"; }
  void Draw(FrameContext& frame) override;

 private:
  void draw_layer_choice(FrameContext& frame);
  void draw_norms(FrameContext& frame);
  struct SquareLayout {
    float side = 0;             // of each square
    bool side_by_side = false;  // before and after in one row
    float width = 0;            // of what they take
  };
  // The chosen layer's gradient as heatmaps, before and (once all-reduced) after; returns how
  // many were drawn. `chosen`: their layout where it was chosen for the column they are in; else
  // one that fits what is left of the panel less `below` lines.
  int draw_before_after(FrameContext& frame, bool after, float below, const SquareLayout* chosen);
  static SquareLayout square_layout(std::size_t replicas, ImVec2 avail, float below,
                                    float font_scale, bool narrow);
  // In words: the verdict, where the gradients came from, how they are summed, the weights
  // (`in_sync`, where given: whether every replica's weights are the same after the update).
  std::vector<GradientWordsLine> words(FrameContext& frame, bool after, bool updated,
                                       bool* in_sync) const;
  void draw_words(FrameContext& frame, const std::vector<GradientWordsLine>& lines, bool updated,
                  bool in_sync);
  // How tall the words and the norms' table are in `width`.
  static float words_height(const std::vector<GradientWordsLine>& lines, float width);
  float norms_height(const core::RecordedStep& record, float width) const;
  // The squares' column beside the words on a wide panel, and whether the words fit beside it.
  struct ColumnFit {
    SquareLayout squares;
    float column = 0;
    bool words_fit = false;
  };
  ColumnFit fit_squares_column(FrameContext& frame,
                               const std::vector<GradientWordsLine>& lines) const;
  // Heatmaps of the chosen layer, one per replica, in a row; returns how many were drawn.
  int draw_heatmaps(const char* what, std::vector<Texture>& textures, float side, float scale);
  // A step whose packs were all-reduced beside backward: the sums, and why no 'before'.
  void draw_overlapped(FrameContext& frame);
  void upload_heatmaps(const core::RecordedStep& record, bool before, bool after);

  std::vector<Texture> before_, after_;       // per replica
  float before_scale_ = 0, after_scale_ = 0;  // the largest |value| each row maps to full colour
  // The largest |difference| between replica 0's values and another's (-1: not comparable).
  double before_difference_ = -1, after_difference_ = -1;
  const void* uploaded_session_ = nullptr;
  std::uint64_t uploaded_version_ = 0;
  int uploaded_state_ = -1;  // which of before/after the textures hold
};

}  // namespace mirrorlab::gui
