#include "gui/panels/step/batch_split_panel.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <functional>
#include <string>

#include "core/io/dataset.h"
#include "gui/drawing/colors.h"
#include "gui/drawing/content_height.h"
#include "gui/drawing/wrapped_text.h"
#include "gui/panels/step/step_lines.h"
#include "gui/panels/step/step_moment.h"
#include "imgui.h"

namespace mirrorlab::gui {
namespace {

constexpr int kAtlasColumns = 32;
constexpr int kImageSide = 28;  // Fashion-MNIST

constexpr float kNamesFrom = 76.0f;  // tiles this wide (times the font scale) get the class name

// The largest tile (side in pixels) with which every replica's thumbnails fit in `width` x
// `height` below one header line per replica, counting the class name under tiles big enough
// to carry one; at least `smallest` (then the panel scrolls).
float fitting_tile(const std::vector<std::size_t>& counts, float width, float height, float header,
                   float gap, float smallest, float scale) {
  const float name_line = ImGui::GetTextLineHeight();
  for (float tile = 112 * scale; tile > smallest; tile -= 2) {
    const int columns = std::max(1, static_cast<int>((width + gap) / (tile + gap)));
    const float row = tile + gap + (tile >= kNamesFrom * scale ? name_line : 0.0f);
    float needed = 0;
    for (std::size_t c : counts) {
      const std::size_t rows = (c + static_cast<std::size_t>(columns) - 1) / columns;
      needed += header + static_cast<float>(rows) * row;
    }
    if (needed <= height) return tile;
  }
  return smallest;
}

std::string short_class(int label) {
  std::string name = core::fashion_mnist_class_name(label);
  return name == "T-shirt/top" ? "T-shirt" : name;
}

}  // namespace

void BatchSplitPanel::upload_thumbnails(const core::RecordedStep& record) {
  const std::size_t n = std::min(record.indices.size(), kMaxThumbnails);
  const int rows = static_cast<int>((n + kAtlasColumns - 1) / kAtlasColumns);
  const int width = kAtlasColumns * kImageSide, height = std::max(1, rows) * kImageSide;
  std::vector<std::uint32_t> pixels(static_cast<std::size_t>(width) * height, 0xFF000000u);
  const std::size_t pixels_each = static_cast<std::size_t>(kImageSide) * kImageSide;
  const bool fashion_mnist_sized =
      record.image_rows == kImageSide && record.image_cols == kImageSide;
  for (std::size_t i = 0; i < n; ++i) {
    if (!fashion_mnist_sized || (i + 1) * pixels_each > record.images.size()) break;
    const std::uint8_t* image = record.images.data() + i * pixels_each;
    const int x0 = static_cast<int>(i % kAtlasColumns) * kImageSide;
    const int y0 = static_cast<int>(i / kAtlasColumns) * kImageSide;
    for (int y = 0; y < kImageSide; ++y) {
      for (int x = 0; x < kImageSide; ++x) {
        const std::uint32_t v = image[y * kImageSide + x];
        pixels[static_cast<std::size_t>(y0 + y) * width + (x0 + x)] =
            0xFF000000u | (v << 16) | (v << 8) | v;
      }
    }
  }
  atlas_.upload(width, height, pixels);
  atlas_indices_.assign(record.indices.begin(),
                        record.indices.begin() + static_cast<std::ptrdiff_t>(n));
}

// How the batch's thumbnails are laid out in the room below the heading.
struct GridLayout {
  std::vector<std::size_t> drawn_counts;  // per replica, within kMaxThumbnails in all
  std::size_t drawn_total = 0;
  float gap = 0, tile = 0, cell_height = 0, width = 0;
  int columns = 1;
  bool compact = false;    // one grid in batch order under one key line, not a grid per replica
  bool names_fit = false;  // the class name under each thumbnail
  bool digits = false;     // the class's number in each thumbnail's corner, the key below
};

namespace {

// Grouped: a header line per replica, its thumbnails below. Compact, when that leaves the
// thumbnails too small: one key line for the replicas and one grid in batch order (the shards
// are consecutive, so they read as blocks of colour). Labels' key: only when digits show.
GridLayout plan_grid(const std::vector<std::size_t>& counts, ImVec2 avail, float scale) {
  GridLayout g;
  g.gap = 2.0f * scale;
  g.width = avail.x;
  const float line = ImGui::GetTextLineHeightWithSpacing();
  g.drawn_counts = counts;
  std::size_t budget = kMaxThumbnails;
  for (std::size_t& c : g.drawn_counts) c = std::min(c, budget), budget -= c;
  for (std::size_t c : g.drawn_counts) g.drawn_total += c;
  const float header = line + 2 * g.gap;
  const auto fit = [&](bool compact, float reserved) {
    return compact ? fitting_tile({g.drawn_total}, avail.x, avail.y - reserved, 2 * line, g.gap,
                                  8 * scale, scale)
                   : fitting_tile(g.drawn_counts, avail.x, avail.y - reserved, header, g.gap,
                                  8 * scale, scale);
  };
  const float digits_from = 34.0f * scale;  // a digit in the corner of a smaller one hides it
  const float key_height = 2.2f * line;
  g.tile = fit(false, 0);
  g.compact = g.tile < 24.0f * scale && fit(true, 0) > g.tile;
  if (g.compact) g.tile = fit(true, 0);
  if (g.tile >= digits_from) {  // digits need their key below: keep them only if both fit
    const float with_key = fit(g.compact, key_height);
    g.tile = with_key >= digits_from ? with_key : std::min(g.tile, digits_from - 2);
  }
  g.names_fit = g.tile >= kNamesFrom * scale;
  g.digits = !g.names_fit && g.tile >= digits_from;
  g.cell_height = g.tile + g.gap + (g.names_fit ? ImGui::GetTextLineHeight() : 0.0f);
  g.columns = std::max(1, static_cast<int>((avail.x + g.gap) / (g.tile + g.gap)));
  return g;
}

// One thumbnail: example `example` of the batch at place `k` of the grid starting at `origin`;
// images in draw channel 0, frames and labels in channel 1. Returns whether its class name was
// shortened to fit under it.
bool draw_thumbnail(ImDrawList* draw, const Texture& atlas, const core::RecordedStep& record,
                    const GridLayout& g, ImVec2 origin, std::size_t k, std::size_t example,
                    int replica) {
  const float atlas_w = static_cast<float>(atlas.width());
  const float atlas_h = static_cast<float>(atlas.height());
  const float tile = g.tile;
  const float x = origin.x + static_cast<float>(k % g.columns) * (tile + g.gap);
  const float y = origin.y + static_cast<float>(k / g.columns) * g.cell_height;
  const ImVec2 uv0(static_cast<float>(example % kAtlasColumns) * kImageSide / atlas_w,
                   static_cast<float>(example / kAtlasColumns) * kImageSide / atlas_h);
  const ImVec2 uv1(uv0.x + kImageSide / atlas_w, uv0.y + kImageSide / atlas_h);
  draw->ChannelsSetCurrent(0);
  draw->AddImage(atlas.id(), ImVec2(x, y), ImVec2(x + tile, y + tile), uv0, uv1);
  draw->ChannelsSetCurrent(1);
  const float border = std::clamp(tile / 12.0f, 1.0f, 3.0f);
  draw->AddRect(ImVec2(x, y), ImVec2(x + tile, y + tile), replica_color(replica), 0, 0, border);
  const int label = example < record.labels.size() ? record.labels[example] : 0;
  bool shortened = false;
  if (g.names_fit) {
    // Within its tile, half an em to spare: "Ankle boot" under a tile about as wide ran into the
    // next one's name ("Ankle boot Ankle boot T-shirt").
    // A name too wide keeps its last word, capitalised ("Boot").
    const std::string name = short_class(label);
    std::string last = name.substr(name.rfind(' ') + 1);
    last[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(last[0])));
    const std::string shown = first_that_fits({name, last}, tile - 0.5f * ImGui::GetFontSize());
    draw_label(draw, ImVec2(x, y + tile + 1), rgb(0xDDDDDD), shown.c_str());
    shortened = shown != name;
  } else if (g.digits) {
    const char digit[2] = {static_cast<char>('0' + label), 0};
    const ImVec2 size = ImGui::CalcTextSize(digit);
    draw->AddRectFilled(ImVec2(x + tile - size.x - 3, y + 1), ImVec2(x + tile - 1, y + size.y),
                        replica_color(replica, 220));
    draw_label(draw, ImVec2(x + tile - size.x - 2, y), text_color_on(replica_rgb(replica)), digit);
  }
  if (ImGui::IsMouseHoveringRect(ImVec2(x, y), ImVec2(x + tile, y + tile))) {
    ImGui::SetTooltip("example %zu of the batch (training image %u): %s\ngoes to %s (replica %d)",
                      example + 1, record.indices[example], core::fashion_mnist_class_name(label),
                      record.replicas[static_cast<std::size_t>(replica)].device.c_str(), replica);
  }
  return shortened;
}

// Replica r's swatch, device and slice of the batch: long above its own grid, short in the
// compact key line.
void replica_title(const core::RecordedStep& record, std::size_t r, const GridLayout& g) {
  const core::ReplicaRecord& rep = record.replicas[r];
  swatch(replica_color(static_cast<int>(r)), g.gap);
  if (rep.shard_count == 0) {
    ImGui::Text("%s: none", rep.device.c_str());
  } else if (g.compact) {
    ImGui::Text("%s: %zu-%zu (%zu)", rep.device.c_str(), rep.shard_begin + 1,
                rep.shard_begin + rep.shard_count, rep.shard_count);
  } else {
    ImGui::Text("%s  replica %zu: examples %zu-%zu of the batch (%zu)", rep.device.c_str(), r,
                rep.shard_begin + 1, rep.shard_begin + rep.shard_count, rep.shard_count);
  }
}

// Below the thumbnails: how many were left out, and what the labels mean.
void draw_footer(const core::RecordedStep& record, const GridLayout& g) {
  if (g.drawn_total < record.indices.size()) {
    ImGui::TextDisabled("+ %zu more not drawn", record.indices.size() - g.drawn_total);
  }
  if (g.digits) {
    std::string key = "Labels:";
    for (int c = 0; c < 10; ++c) key += "  " + std::to_string(c) + " " + short_class(c);
    ImGui::PushTextWrapPos(0);
    text_wrapped_dim("%s", key.c_str());
    ImGui::PopTextWrapPos();
  } else if (!g.names_fit) {
    text_wrapped_dim("Hover over an image for its label; more room (key 2) shows them all.");
  }
}

}  // namespace

BatchSplitPanel::Drawn BatchSplitPanel::draw_thumbnails(const core::RecordedStep& record,
                                                        const GridLayout& g) {
  // Images in one channel, frames and labels in another: each channel is then one draw call
  // with one texture, instead of two per thumbnail (the atlas, then the font's for the frame),
  // and a software renderer pays per draw call.
  ImDrawList* draw = ImGui::GetWindowDrawList();
  draw->ChannelsSplit(2);
  draw->ChannelsSetCurrent(1);
  const std::size_t n = record.replicas.size();
  Drawn drawn;
  // The replicas' thumbnails from `origin`, each at its place in the batch (compact) or in its
  // replica's own grid.
  const auto grid = [&](std::size_t r, ImVec2 origin) {
    const core::ReplicaRecord& rep = record.replicas[r];
    for (std::size_t k = 0; k < g.drawn_counts[r]; ++k) {
      const std::size_t example = rep.shard_begin + k;  // its place in the batch and the atlas
      if (example >= atlas_indices_.size()) break;
      if (draw_thumbnail(draw, atlas_, record, g, origin, g.compact ? example : k, example,
                         static_cast<int>(r))) {
        ++drawn.names_shortened;
      }
      ++drawn.thumbnails;
    }
  };
  const auto rows_of = [&](std::size_t count) {
    const std::size_t rows = (count + g.columns - 1) / g.columns;
    ImGui::Dummy(ImVec2(g.width, static_cast<float>(rows) * g.cell_height));
  };
  if (g.compact) {
    for (std::size_t r = 0; r < n; ++r) {
      if (r > 0) ImGui::SameLine(0, 3 * g.gap + ImGui::GetFontSize());
      replica_title(record, r, g);
    }
    const ImVec2 origin = ImGui::GetCursorScreenPos();
    for (std::size_t r = 0; r < n; ++r) grid(r, origin);
    rows_of(g.drawn_total);
  } else {
    for (std::size_t r = 0; r < n; ++r) {
      replica_title(record, r, g);
      grid(r, ImGui::GetCursorScreenPos());
      rows_of(g.drawn_counts[r]);
    }
  }
  draw->ChannelsMerge();
  return drawn;
}

void BatchSplitPanel::Draw(FrameContext& frame) {
  // A picture sized to its room (has_recorded_step says it fills it).
  const core::RecordedStep& record = frame.run.step_record;
  if (!has_recorded_step(frame, "The global batch")) return;
  if (atlas_session_ != frame.run.session || atlas_step_ != record.step ||
      atlas_indices_.size() != std::min(record.indices.size(), kMaxThumbnails) ||
      !std::equal(atlas_indices_.begin(), atlas_indices_.end(), record.indices.begin())) {
    upload_thumbnails(record);
    atlas_session_ = frame.run.session;
    atlas_step_ = record.step;
  }

  const ShownMoment shown = shown_moment(frame);
  const std::size_t n = record.replicas.size();
  std::vector<std::size_t> counts;
  for (const core::ReplicaRecord& r : record.replicas) counts.push_back(r.shard_count);
  const bool uneven =
      std::adjacent_find(counts.begin(), counts.end(), std::not_equal_to<>()) != counts.end();
  const std::size_t examples = record.indices.size();
  if (n == 1) {
    text_wrapped("Step %lld: a global batch of %zu example%s, on one replica",
                 static_cast<long long>(record.step + 1), examples, examples == 1 ? "" : "s");
  } else if (const std::size_t workers = frame.run.workers.size(); workers > 1) {
    // Worker 0's replicas are the rows; the others take the rest of the batch.
    const std::size_t all = std::max<std::size_t>(n, frame.run.replicas_in_sync);
    text_wrapped(
        "Step %lld: a global batch of %zu example%s, split %zu ways (%zu workers x %zu); worker "
        "0's %zu replicas below, the other workers' take the rest",
        static_cast<long long>(record.step + 1), examples, examples == 1 ? "" : "s", all, workers,
        all / workers, n);
  } else {
    text_wrapped("Step %lld: a global batch of %zu example%s, split %zu ways",
                 static_cast<long long>(record.step + 1), examples, examples == 1 ? "" : "s", n);
  }
  ImGui::PushTextWrapPos(0);
  // A watched custom loop's data set is its own: no epoch known.
  std::string epoch = frame.run.steps_per_epoch == 0
                          ? ""
                          : "One epoch is " + std::to_string(frame.run.steps_per_epoch) +
                                " global step" + (frame.run.steps_per_epoch == 1 ? "." : "s.");
  if (const std::string weight = gradient_weight_line(frame); !weight.empty()) {
    epoch += (epoch.empty() ? "" : " ") + weight + ".";
  }
  text_wrapped_unformatted(epoch);
  ImGui::PopTextWrapPos();
  if (uneven) {
    // TensorFlow's rule, as split_global_batch applied it: the first replica's share is the
    // ceil(b / N) each takes.
    ImGui::PushTextWrapPos(0);
    ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(0.94f, 0.89f, 0.26f, 1.0f));
    text_wrapped(
        "Uneven: the epoch's last batch. As in TensorFlow, each replica takes the next ceil(%zu / "
        "%zu) = %zu examples until none are left.",
        record.indices.size(), n, counts.front());
    ImGui::PopStyleColor();
    ImGui::PopTextWrapPos();
  }
  if (!shown.progress.split) {
    text_wrapped_dim("Not split yet: each replica will get its slice when the step starts.");
  }

  const GridLayout grid = plan_grid(counts, ImGui::GetContentRegionAvail(), frame.view.font_scale);
  const Drawn drawn = draw_thumbnails(record, grid);
  frame.report.drew(name(), "names_shortened", static_cast<double>(drawn.names_shortened));
  draw_footer(record, grid);
  frame.report.drew(name(), "thumbnails", static_cast<double>(drawn.thumbnails));
  frame.report.drew(name(), "replicas", static_cast<double>(n));
  frame.report.drew(name(), "uneven", uneven ? 1 : 0);
}

}  // namespace mirrorlab::gui
