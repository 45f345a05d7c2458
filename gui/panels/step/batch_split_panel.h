// Batch split: the real Fashion-MNIST images of the current global batch as thumbnails, each
// framed in the colour of the replica it goes to, grouped by replica with the examples' range,
// so the split (and an uneven last batch) can be seen. Labels: the class under each thumbnail
// when there is room, otherwise its number in the corner with the classes' key below.
#pragma once

#include <cstdint>
#include <vector>

#include "gui/drawing/texture.h"
#include "gui/panels/panel.h"

namespace mirrorlab::gui {

// At most this many thumbnails are drawn (and uploaded): those the record keeps; the rest are
// counted.
inline constexpr std::size_t kMaxThumbnails = core::kRecordedImages;

struct GridLayout;  // batch_split_panel.cpp

class BatchSplitPanel : public Panel {
 public:
  const char* name() const override { return "Batch split"; }
  void Draw(FrameContext& frame) override;

 private:
  // The atlas of the record's pictures (those it kept: core::kRecordedImages).
  void upload_thumbnails(const core::RecordedStep& record);
  struct Drawn {
    std::size_t thumbnails = 0;
    std::size_t names_shortened = 0;  // class names cut to fit under their tile
  };
  // The batch's thumbnails in their replicas' colours: how many were drawn, and shortened.
  Drawn draw_thumbnails(const core::RecordedStep& record, const GridLayout& grid);

  Texture atlas_;  // the batch's images side by side, kAtlasColumns to a row
  const void* atlas_session_ = nullptr;
  std::int64_t atlas_step_ = -2;
  std::vector<std::uint32_t> atlas_indices_;  // what the atlas holds
};

}  // namespace mirrorlab::gui
