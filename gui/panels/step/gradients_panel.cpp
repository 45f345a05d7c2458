#include "gui/panels/step/gradients_panel.h"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <string>

#include "core/session/step_figures.h"
#include "gui/drawing/colors.h"
#include "gui/drawing/content_height.h"
#include "gui/drawing/wrapped_text.h"
#include "gui/panels/lesson_asks.h"
#include "gui/panels/step/step_lines.h"
#include "gui/panels/step/step_moment.h"
#include "imgui.h"
#include "imgui_internal.h"  // TableSetColumnWidth

namespace mirrorlab::gui {
namespace {

constexpr const char* kNormsScale = "Each bar: against the largest in its row.";

// Side of the square grid the kept values are laid out in (row-major, in the layer's order).
int grid_side(std::size_t values) {
  return std::max(1, static_cast<int>(std::ceil(std::sqrt(static_cast<double>(values)))));
}

float largest_magnitude(const std::vector<core::ReplicaRecord>& replicas, bool before) {
  float m = 0;
  for (const core::ReplicaRecord& r : replicas) {
    for (float v : before ? r.gradient_before : r.gradient_after) m = std::max(m, std::fabs(v));
  }
  return m;
}

void upload_heatmap(Texture& texture, const std::vector<float>& values, float scale) {
  const int side = grid_side(values.size());
  std::vector<std::uint32_t> pixels(static_cast<std::size_t>(side) * side, rgb(0x101014));
  for (std::size_t i = 0; i < values.size(); ++i) {
    pixels[i] = diverging_color(scale > 0 ? values[i] / scale : 0.0f);
  }
  texture.upload(side, side, pixels);
}

// The colour key: negative .. 0 .. positive, each row scaled to its largest |value|.
// `width`: the colour bar's; the words beside it go on the next line where they do not fit.
void draw_key(float width) {
  ImGui::TextDisabled("negative");
  next_beside_if_fits(width);
  ImDrawList* draw = ImGui::GetWindowDrawList();
  const ImVec2 p = ImGui::GetCursorScreenPos();
  const float h = ImGui::GetTextLineHeight();
  constexpr int kSteps = 24;
  for (int i = 0; i < kSteps; ++i) {
    const float t = -1.0f + 2.0f * (static_cast<float>(i) + 0.5f) / kSteps;
    const float x0 = p.x + width * static_cast<float>(i) / kSteps;
    draw->AddRectFilled(ImVec2(x0, p.y + h * 0.2f), ImVec2(x0 + width / kSteps + 1, p.y + h * 0.8f),
                        diverging_color(t));
  }
  ImGui::Dummy(ImVec2(width, h));
  next_beside_if_fits(ImGui::CalcTextSize("positive (0: dark)").x);
  ImGui::TextDisabled("positive (0: dark)");
}

// What the squares are: "dense: the middle 4096 of its 200960 gradient values, ...".
std::string squares_title(const core::RecordedStep& record) {
  const core::RecordedLayer& layer = record.layers[static_cast<std::size_t>(record.chosen_layer)];
  const std::size_t kept = record.replicas[0].gradient_before.size();
  if (kept < record.chosen_layer_values) {
    return formatted("%s: the middle %zu of its %zu gradient values, one square each, per replica",
                     layer.name.c_str(), kept, record.chosen_layer_values);
  }
  return formatted("%s: all %zu gradient values, one square each, per replica", layer.name.c_str(),
                   kept);
}

}  // namespace

// Before and after side by side, or one above the other: whichever gives larger squares (side
// by side needs 4 replicas or fewer), in `avail` less `below` lines of text under them. `narrow`:
// the narrower of two about as large.
GradientsPanel::SquareLayout GradientsPanel::square_layout(std::size_t replicas, ImVec2 avail,
                                                           float below, float font_scale,
                                                           bool narrow) {
  const float spacing = ImGui::GetStyle().ItemSpacing.x;
  const float line = ImGui::GetTextLineHeightWithSpacing();
  const auto gaps = [&](bool beside) {
    const float per_row = static_cast<float>(beside ? 2 * replicas : replicas);
    // Between squares, the wider gap between the two groups, and the squares' outlines.
    return (per_row - 1) * spacing + (beside ? 4 * spacing : 0) + 2 * per_row;
  };
  const auto square = [&](bool beside) {
    const float per_row = static_cast<float>(beside ? 2 * replicas : replicas);
    const float height_left = avail.y - (beside ? below : below + 1.5f) * line;
    // Not smaller than 3.5 lines of text where the width allows it: in a short panel the
    // words under the squares scroll instead.
    const float across = (avail.x - gaps(beside)) / per_row;
    const float least = std::max(16.0f, std::min(across, 3.5f * line));
    return std::clamp(std::min(across, beside ? height_left : height_left / 2), least,
                      std::max(least, 220.0f * font_scale));
  };
  SquareLayout layout;
  // Where words stand beside the squares, one above the other unless side by side is clearly
  // larger: the words then get the width.
  layout.side_by_side = replicas <= 4 && square(true) >= (narrow ? 1.25f : 1.0f) * square(false);
  layout.side = square(layout.side_by_side);
  layout.width = static_cast<float>(layout.side_by_side ? 2 * replicas : replicas) * layout.side +
                 gaps(layout.side_by_side);
  return layout;
}

namespace {

// "Before" and "after" in words: whether the replicas' gradients differ (before) and are the
// same sum (after). diff_after < 0: not shown yet. A replica with no examples is named: its
// gradient is 0, which "each saw other examples" would hide (an uneven last batch).
void add_verdict(std::vector<GradientWordsLine>& lines, const core::RecordedStep& record,
                 std::size_t replicas, double diff_before, double diff_after) {
  std::string empty;
  std::size_t empties = 0;
  for (const core::ReplicaRecord& r : record.replicas) {
    if (r.shard_count > 0) continue;
    empty += (empty.empty() ? "" : ", ") + r.device;
    ++empties;
  }
  const std::string differ =
      empties == 0 ? "the replicas differ, each saw other examples"
                   : "the replicas differ: each saw other examples, " + empty + " none (" +
                         (empties == 1 ? "its gradient is 0)" : "their gradients are 0)");
  const std::string before =
      replicas > 1 && diff_before >= 0
          ? formatted("Before: %s (largest difference %.3g)",
                      diff_before > 0 ? differ.c_str() : "equal", diff_before)
          : "";
  // One sentence where both are said, so that they take a line less.
  const std::string joint = before.empty() ? "" : before + "; after: ";
  if (diff_after == 0) {
    lines.push_back({formatted("%sidentical on every replica, the sum of all %zu.",
                               joint.empty() ? "After: " : joint.c_str(), replicas)});
  } else if (diff_after > 0) {
    lines.push_back({formatted("%sNOT identical (largest difference %.3g).",
                               joint.empty() ? "After: " : joint.c_str(), diff_after),
                     true});
  } else if (!before.empty()) {
    lines.push_back({before + "."});
  }
}

// Fingerprints of the weights after the update; returns whether every replica has the same.
bool add_fingerprints(std::vector<GradientWordsLine>& lines, const core::RecordedStep& record) {
  const bool same = record.replicas.empty() || core::weights_in_sync(record).value_or(false);
  std::string prints;
  for (const core::ReplicaRecord& r : record.replicas) {
    prints += formatted("%s%08" PRIx64, prints.empty() ? "" : " ", r.fingerprint >> 32);
  }
  if (same) {
    lines.push_back({"Weights after the update: fingerprint " + prints.substr(0, 8) +
                     " on every replica: in sync."});
  } else {
    lines.push_back({"Weights DIFFER between replicas: " + prints, true});
  }
  return same;
}

}  // namespace

int GradientsPanel::draw_before_after(FrameContext& frame, bool after, float below,
                                      const SquareLayout* chosen) {
  const core::RecordedStep& record = frame.run.step_record;
  text_wrapped_unformatted(squares_title(record));
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const SquareLayout squares =
      chosen != nullptr
          ? *chosen
          : square_layout(record.replicas.size(), avail, below, frame.view.font_scale, false);
  const float side = squares.side;
  int heatmaps = draw_heatmaps("before", before_, side, before_scale_);
  if (squares.side_by_side) ImGui::SameLine(0, 4 * ImGui::GetStyle().ItemSpacing.x);
  if (after) {
    heatmaps += draw_heatmaps("after: the sum", after_, side, after_scale_);
  } else {
    ImGui::BeginGroup();
    ImGui::TextDisabled("after: not yet");
    ImGui::EndGroup();
  }
  // The key's bar beside its two words where they fit in one line, 240 px (at font 1) at most.
  const float words = ImGui::CalcTextSize("negative").x +
                      ImGui::CalcTextSize("positive (0: dark)").x +
                      4 * ImGui::GetStyle().ItemSpacing.x;
  draw_key(std::clamp(avail.x - words, 3 * ImGui::GetFontSize(), 240.0f * frame.view.font_scale));
  return heatmaps;
}

void GradientsPanel::Draw(FrameContext& frame) {
  // A picture sized to its room (has_recorded_step says it fills it).
  const core::RecordedStep& record = frame.run.step_record;
  if (!has_recorded_step(frame, "Each replica's gradient")) return;
  const ShownMoment shown = shown_moment(frame);
  const bool before = shown.progress.backward;
  const bool after = shown.progress.all_reduced;
  draw_layer_choice(frame);
  if (record.packs_overlapped) {
    draw_overlapped(frame);
    return;
  }
  if (!before) {
    text_wrapped(
        "Step %lld: no gradients yet; each replica computes its own in the "
        "backward pass.",
        static_cast<long long>(record.step + 1));
    frame.report.drew(name(), "heatmaps", 0);
    return;
  }
  const int state = (before ? 1 : 0) | (after ? 2 : 0);
  if (uploaded_session_ != frame.run.session ||
      uploaded_version_ != frame.run.step_record_version || uploaded_state_ != state) {
    upload_heatmaps(record, before, after);
    uploaded_session_ = frame.run.session;
    uploaded_version_ = frame.run.step_record_version;
    uploaded_state_ = state;
  }
  if (record.layers.empty()) {
    draw_norms(frame);
    return;
  }
  // On a wide panel the norms and the words go beside the squares, so that the squares get the
  // panel's height (on a projector they are the picture the class looks at).
  const bool beside = ImGui::GetContentRegionAvail().x > ImGui::GetFontSize() * 40;
  int heatmaps = 0;
  const bool updated = shown.progress.updated;
  bool in_sync = false;
  const std::vector<GradientWordsLine> lines = words(frame, after, updated, &in_sync);
  const ColumnFit fit = beside ? fit_squares_column(frame, lines) : ColumnFit{};
  if (beside && ImGui::BeginTable("squares and words", 2)) {
    ImGui::TableSetupColumn("squares", ImGuiTableColumnFlags_WidthFixed, fit.column);
    ImGui::TableSetupColumn("words", ImGuiTableColumnFlags_WidthStretch);
    // Every frame: TableSetupColumn's width is taken only when the table is first made (and
    // ImGui 1.86 takes a width set only once the table has been laid out).
    if (ImGui::GetCurrentTable()->MinColumnWidth > 0) ImGui::TableSetColumnWidth(0, fit.column);
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    heatmaps = draw_before_after(frame, after, 2.0f, &fit.squares);
    ImGui::TableNextColumn();
    // Where they do not all fit, the words first: they say what the step shows.
    if (fit.words_fit) draw_norms(frame);
    draw_words(frame, lines, updated, in_sync);
    if (!fit.words_fit) draw_norms(frame);
    ImGui::EndTable();
  } else {
    draw_norms(frame);
    heatmaps = draw_before_after(frame, after, 10.0f, nullptr);
    draw_words(frame, lines, updated, in_sync);
  }
  const double diff_before = before_difference_, diff_after = after ? after_difference_ : -1;
  frame.report.drew(name(), "heatmaps", heatmaps);
  frame.report.drew(name(), "identical_after", diff_after == 0 ? 1 : 0);
  frame.report.drew(name(), "differ_before", diff_before > 0 ? 1 : 0);
}

// The squares' column as wide as they need at the height they have, from 55% of the panel at
// most: the widest (largest squares) whose words beside it still fit the panel's height; the
// narrowest (the colour key's width) when none does. The words get the rest.
GradientsPanel::ColumnFit GradientsPanel::fit_squares_column(
    FrameContext& frame, const std::vector<GradientWordsLine>& lines) const {
  const core::RecordedStep& record = frame.run.step_record;
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const float most = avail.x * 0.55f;
  const float line = ImGui::GetTextLineHeightWithSpacing();
  const std::string title = squares_title(record);
  const auto fitted = [&](float width) {  // the squares under their title in `width`
    return square_layout(record.replicas.size(),
                         ImVec2(width, avail.y - wrapped_line_count(title, width) * line), 2.0f,
                         frame.view.font_scale, true);
  };
  const float spacing = ImGui::GetStyle().ItemSpacing.x;
  const float least = std::min(
      most, ImGui::CalcTextSize("negative positive (0: dark)").x + 6 * ImGui::GetFontSize());
  ColumnFit fit;
  fit.column = least;
  for (int k = 0; k <= 8 && !fit.words_fit; ++k) {
    const float width = most - (most - least) * static_cast<float>(k) / 8;
    fit.squares = fitted(width);
    // Narrower squares leave the words more: their title may take more lines, so fit again.
    fit.column = std::clamp(fit.squares.width, least, width);
    if (fit.column < width) fit.squares = fitted(fit.column);
    fit.column = std::clamp(fit.squares.width, least, width);
    const float words_width = avail.x - fit.column - 2 * spacing;
    // (Half a line to spare: ImGui's line count, which this is, and ours can differ a little.)
    fit.words_fit = norms_height(record, words_width) + words_height(lines, words_width) <=
                    avail.y - 0.5f * line;
  }
  return fit;
}

std::vector<GradientWordsLine> GradientsPanel::words(FrameContext& frame, bool after, bool updated,
                                                     bool* in_sync) const {
  const core::RecordedStep& record = frame.run.step_record;
  std::vector<GradientWordsLine> lines;
  add_verdict(lines, record,
              std::max<std::size_t>(record.replicas.size(), frame.run.replicas_in_sync),
              before_difference_, after ? after_difference_ : -1);
  // Where the gradients came from and how they are summed, in figures.
  for (std::string line : {shards_line(record), gradient_weight_line(frame)}) {
    if (!line.empty()) lines.push_back({std::move(line)});
  }
  if (record.replicas.size() > 1 && record.all_reduce_steps > 0) {
    const std::string steps =
        blank_if_asked(frame, "allreduce_steps", std::to_string(record.all_reduce_steps));
    lines.push_back({formatted("The all-reduce (%s) sums them in %s step%s.",
                               record.all_reduce.c_str(), steps.c_str(), plural_s(steps))});
  }
  if (std::string line = reference_distance_line(frame); !line.empty()) {
    lines.push_back({std::move(line)});
  }
  if (updated) {
    const bool same = add_fingerprints(lines, record);
    if (in_sync != nullptr) *in_sync = same;
  }
  return lines;
}

float GradientsPanel::words_height(const std::vector<GradientWordsLine>& lines, float width) {
  float count = 0;
  for (const GradientWordsLine& line : lines) count += wrapped_line_count(line.text, width);
  return count * ImGui::GetTextLineHeightWithSpacing();
}

void GradientsPanel::draw_words(FrameContext& frame, const std::vector<GradientWordsLine>& lines,
                                bool updated, bool in_sync) {
  for (const GradientWordsLine& line : lines) {
    if (line.warning) ImGui::PushStyleColor(ImGuiCol_Text, rgb(0xD55E00));
    text_wrapped_unformatted(line.text);
    if (line.warning) ImGui::PopStyleColor();
  }
  if (updated) frame.report.drew(name(), "replicas_in_sync", in_sync ? 1 : 0);
}

void GradientsPanel::draw_layer_choice(FrameContext& frame) {
  const core::RecordedStep& record = frame.run.step_record;
  if (record.layers.empty()) return;
  int chosen = frame.view.chosen_layer >= 0 ? frame.view.chosen_layer : record.chosen_layer;
  chosen = std::clamp(chosen, 0, static_cast<int>(record.layers.size()) - 1);
  const std::string preview = record.layers[static_cast<std::size_t>(chosen)].name;
  // The combo and its label in the panel's width: the combo narrower, or the label left out.
  const float label = ImGui::CalcTextSize("layer to map").x + ImGui::GetStyle().ItemInnerSpacing.x;
  const float room = ImGui::GetContentRegionAvail().x;
  const float combo = std::min(ImGui::GetFontSize() * 12, room - label);
  const bool labelled = combo >= ImGui::GetFontSize() * 5;
  ImGui::SetNextItemWidth(labelled ? combo : room);
  if (ImGui::BeginCombo(labelled ? "layer to map" : "##layer to map", preview.c_str())) {
    for (std::size_t i = 0; i < record.layers.size(); ++i) {
      const core::RecordedLayer& l = record.layers[i];
      const std::string label = l.name + " (" + l.type + ", " + std::to_string(l.params) + ")";
      if (ImGui::Selectable(label.c_str(), static_cast<int>(i) == chosen)) {
        frame.view.chosen_layer = static_cast<int>(i);
        frame.session->choose_recorded_layer(static_cast<int>(i));
      }
    }
    ImGui::EndCombo();
  }
  if (chosen != record.chosen_layer) {
    ImGui::SameLine();
    ImGui::TextDisabled("(mapped from the next step on)");
  }
}

float GradientsPanel::norms_height(const core::RecordedStep& record, float width) const {
  const float row = ImGui::GetTextLineHeight() + 2 * ImGui::GetStyle().CellPadding.y;
  return static_cast<float>(record.layers.size() + 1) * row + ImGui::GetStyle().ItemSpacing.y +
         wrapped_line_count(kNormsScale, width) * ImGui::GetTextLineHeightWithSpacing();
}

void GradientsPanel::draw_norms(FrameContext& frame) {
  const core::RecordedStep& record = frame.run.step_record;
  const int n = static_cast<int>(record.replicas.size());
  const ImGuiTableFlags flags = ImGuiTableFlags_BordersInnerH | ImGuiTableFlags_SizingStretchSame;
  if (!ImGui::BeginTable("norms", n + 1, flags)) return;
  // The layer names keep their full width (dense, dense_1, ... must stay apart); the replicas
  // share the rest.
  float names = ImGui::CalcTextSize("norm").x;
  for (const auto& layer : record.layers) {
    names = std::max(names, ImGui::CalcTextSize(layer.name.c_str()).x);
  }
  const float first = std::max(names, n > 4 ? 0.0f : ImGui::CalcTextSize("gradient norm").x);
  ImGui::TableSetupColumn(n > 4 ? "norm" : "gradient norm", ImGuiTableColumnFlags_WidthFixed,
                          first);
  // A replica's column headed by its device, or by its number alone where the columns are too
  // narrow for "/gpu:3" (ImGui would end it with "...").
  const ImGuiStyle& style = ImGui::GetStyle();
  const float column = (ImGui::GetContentRegionAvail().x - first) / static_cast<float>(n) -
                       2 * style.CellPadding.x - style.ItemSpacing.x;
  for (int i = 0; i < n; ++i) {
    const std::string& device = record.replicas[static_cast<std::size_t>(i)].device;
    const std::string short_name = device.substr(device.find_first_not_of('/'));  // gpu:0
    const std::string label =
        first_that_fits({device, short_name, std::to_string(i)}, column) + "##" + device;
    ImGui::TableSetupColumn(label.c_str(), ImGuiTableColumnFlags_WidthStretch, 1.0f);
  }
  ImGui::TableHeadersRow();
  int bars = 0;
  for (std::size_t l = 0; l < record.layers.size(); ++l) {
    double largest = 0;
    for (const core::ReplicaRecord& r : record.replicas) {
      if (l < r.gradient_norms.size()) largest = std::max(largest, r.gradient_norms[l]);
    }
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(record.layers[l].name.c_str());
    for (int r = 0; r < n; ++r) {
      ImGui::TableNextColumn();
      const std::vector<double>& norms =
          record.replicas[static_cast<std::size_t>(r)].gradient_norms;
      if (l >= norms.size()) {
        ImGui::TextDisabled("-");
        continue;
      }
      // A bar as long as this replica's norm against the largest of the layer, the value on it.
      const ImVec2 p = ImGui::GetCursorScreenPos();
      const float w = ImGui::GetContentRegionAvail().x, h = ImGui::GetTextLineHeight();
      const float filled = largest > 0 ? static_cast<float>(norms[l] / largest) * w : 0;
      ImGui::GetWindowDrawList()->AddRectFilled(p, ImVec2(p.x + filled, p.y + h),
                                                replica_color(r, 150));
      // Many replicas make narrow columns: fewer digits then (the bar alone when none fit), all
      // of them on hover.
      char value[32] = "";
      for (const char* format : {"%.3g", "%.2g", "%.2f"}) {
        std::snprintf(value, sizeof value, format, norms[l]);
        if (ImGui::CalcTextSize(value).x <= w) break;
        value[0] = '\0';
      }
      draw_label(ImGui::GetWindowDrawList(), p, ImGui::GetColorU32(ImGuiCol_Text), value);
      ImGui::Dummy(ImVec2(w, h));  // the whole cell answers the pointer
      if (ImGui::IsItemHovered()) {
        ImGui::SetTooltip("%s, %s: gradient norm %.6g", record.layers[l].name.c_str(),
                          record.replicas[static_cast<std::size_t>(r)].device.c_str(), norms[l]);
      }
      ++bars;
    }
  }
  ImGui::EndTable();
  // The bars' scale is each row's own: said, so that equal bars in two rows are not read as
  // equal norms.
  if (bars > 0) text_wrapped_dim("%s", kNormsScale);
  frame.report.drew(name(), "norm_bars", bars);
}

int GradientsPanel::draw_heatmaps(const char* what, std::vector<Texture>& textures, float side,
                                  float scale) {
  const float spacing = ImGui::GetStyle().ItemSpacing.x;
  int drawn = 0;
  ImGui::BeginGroup();
  // Its title within the heat maps' width: "after: the sum (±0.01)", else "after (±0.01)", else
  // "after".
  char scale_text[32];
  std::snprintf(scale_text, sizeof scale_text, " (\xC2\xB1%.2g)", static_cast<double>(scale));
  const std::string full(what), head = full.substr(0, full.find(':'));
  const float width = static_cast<float>(textures.size()) * (side + spacing) - spacing;
  ImGui::TextDisabled(
      "%s",
      first_that_fits({full + scale_text, head + scale_text, head}, std::max(width, 0.0f)).c_str());
  for (std::size_t r = 0; r < textures.size(); ++r) {
    if (r > 0) ImGui::SameLine(0, spacing);
    const ImVec2 p = ImGui::GetCursorScreenPos();
    if (!textures[r].empty()) {
      ImGui::Image(textures[r].id(), ImVec2(side, side));
      ++drawn;
    } else {
      ImGui::Dummy(ImVec2(side, side));
    }
    ImGui::GetWindowDrawList()->AddRect(ImVec2(p.x - 1, p.y - 1),
                                        ImVec2(p.x + side + 1, p.y + side + 1),
                                        replica_color(static_cast<int>(r)), 0, 0, 2.0f);
  }
  ImGui::EndGroup();
  return drawn;
}

void GradientsPanel::draw_overlapped(FrameContext& frame) {
  const core::RecordedStep& record = frame.run.step_record;
  if (uploaded_session_ != frame.run.session ||
      uploaded_version_ != frame.run.step_record_version || uploaded_state_ != 4) {
    upload_heatmaps(record, false, true);
    uploaded_session_ = frame.run.session;
    uploaded_version_ = frame.run.step_record_version;
    uploaded_state_ = 4;
  }
  text_wrapped(
      "Step %lld: each pack was all-reduced in place while backward still computed the layers "
      "before it, so no moment holds a replica's own gradients. Tick 'pause at every phase' to "
      "see them: a step held at its phases all-reduces its packs after backward.",
      static_cast<long long>(record.step + 1));
  const SquareLayout squares = square_layout(record.replicas.size(), ImGui::GetContentRegionAvail(),
                                             4.0f, frame.view.font_scale, false);
  const int heatmaps = draw_heatmaps("after: the sum", after_, squares.side, after_scale_);
  frame.report.drew(name(), "heatmaps", heatmaps);
  frame.report.drew(name(), "identical_after", after_difference_ == 0 ? 1 : 0);
  frame.report.drew(name(), "differ_before", 0);
  frame.report.drew(name(), "packs_overlapped", 1);
}

void GradientsPanel::upload_heatmaps(const core::RecordedStep& record, bool before, bool after) {
  const std::size_t n = record.replicas.size();
  before_.resize(n);
  after_.resize(n);
  before_scale_ = largest_magnitude(record.replicas, true);
  after_scale_ = largest_magnitude(record.replicas, false);
  before_difference_ = core::gradient_spread(record, true).value_or(-1);
  after_difference_ = core::gradient_spread(record, false).value_or(-1);
  for (std::size_t r = 0; r < n; ++r) {
    const core::ReplicaRecord& rep = record.replicas[r];
    // Reuse each texture (Texture::upload replaces its pixels); drop it when there is nothing.
    if (before && !rep.gradient_before.empty()) {
      upload_heatmap(before_[r], rep.gradient_before, before_scale_);
    } else {
      before_[r] = Texture{};
    }
    if (after && !rep.gradient_after.empty()) {
      upload_heatmap(after_[r], rep.gradient_after, after_scale_);
    } else {
      after_[r] = Texture{};
    }
  }
}

}  // namespace mirrorlab::gui
