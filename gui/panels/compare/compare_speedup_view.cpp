#include "gui/panels/compare/compare_speedup_view.h"

#include <algorithm>
#include <cstdio>

#include "core/nn/training_flops.h"
#include "core/session/text/console_text.h"
#include "gui/drawing/chart.h"
#include "gui/drawing/colors.h"
#include "gui/drawing/content_height.h"
#include "gui/drawing/table_cells.h"
#include "gui/drawing/wrapped_text.h"
#include "imgui.h"

namespace mirrorlab::gui {
namespace {

constexpr std::uint32_t kStopRgb = 0xD55E00;  // vermillion: the count that stops paying

std::string printed(const char* format, double value) {
  char text[32];
  std::snprintf(text, sizeof text, format, value);
  return text;
}

// "13,006,153": a whole number in groups of three, read from afar.
std::string grouped(double value) { return core::grouped_digits(printed("%.0f", value)); }

void bold_wrapped(const FrameContext& frame, const std::string& text) {
  const bool bold = frame.fonts != nullptr && frame.fonts->bold != nullptr;
  if (bold) ImGui::PushFont(frame.fonts->bold);
  ImGui::BeginGroup();  // every line beside what came before on the line (a tag)
  text_wrapped_unformatted(text);
  ImGui::EndGroup();
  if (bold) ImGui::PopFont();
}

}  // namespace

void SpeedupView::update(FrameContext& frame, const ModelMachine& machine) {
  const core::SessionConfig& config = frame.session ? frame.session->config() : frame.config;
  RunModel run = run_model_of(config);
  // A watched run's batch is its latest fit's.
  if (!frame.run.driven_by.empty() && frame.run.batch_per_replica() > 0) {
    run.batch_per_replica = frame.run.batch_per_replica();
  }
  const bool here = &machine == &frame.machines->fitted();
  Inputs now;
  now.machine = machine.id;
  now.catalog = frame.machines->version();
  now.model = run.model;
  now.layers = run.layers;
  now.optimizer = run.optimizer.kind;
  now.update_flops = core::update_flops_per_param(run.optimizer);
  now.batch = run.batch_per_replica;
  now.packs = run.packs;
  if (here) {
    now.run = frame.run_id;
    now.last_step = frame.session ? frame.run.steps_done : -1;
  }
  if (computed_ && now == inputs_) return;
  // On this machine the compute follows the run's steps: while it runs, at most once a second,
  // so that the table does not flicker.
  Inputs same_but_step = inputs_;
  same_but_step.last_step = now.last_step;
  if (computed_ && here && same_but_step == now && table_.problem.empty() && frame.run.stepping &&
      frame.seconds_since_start - computed_at_ < 1.0) {
    return;
  }
  inputs_ = now;
  computed_ = true;
  computed_at_ = frame.seconds_since_start;
  std::optional<RunCompute> live;
  if (here && frame.session) live = run_compute(frame.run, *machine.topology);
  table_ = predict_speedup(*machine.topology, here, run, live, format_seconds);
  const SpeedupTable& t = table_;
  verdict_ = timing::pays_rule_sentence() + " " + t.verdict.verdict;
  details_ = {"Compute of one replica: " + t.compute_source + ".",
              t.compute_numbers.empty()
                  ? std::string()
                  : "Where the compute's numbers come from: " + t.compute_numbers,
              t.all_reduce + " " + t.engines_text, t.packs_text,
              timing::step_formula_sentence(run.batch_per_replica) + " " +
                  timing::step_left_out_sentence()};
  cells_.clear();
  for (std::size_t i = 0; i < table_.rows.size(); ++i) {
    const timing::StepTime& r = table_.rows[i];
    const bool past = table_.stop.stopped && r.devices == table_.stop.next;
    const std::string one_buffer =
        i < table_.one_buffer.size() ? format_seconds(table_.one_buffer[i].seconds) : "-";
    // Of every pack's all-reduce, the share behind backward (the rest is the all-reduce column).
    const std::string hidden =
        i < table_.one_buffer.size() && r.all_reduce_total > 0
            ? printed("%.0f%%", 100 * (r.all_reduce_total - r.all_reduce) / r.all_reduce_total)
            : "-";
    cells_.push_back({std::to_string(r.devices), std::to_string(r.replicas_per_engine),
                      format_seconds(r.compute),
                      r.devices == 1 ? std::string("-") : format_seconds(r.all_reduce),
                      format_seconds(r.seconds), one_buffer, hidden, grouped(r.images_per_second),
                      printed("%.2fx", r.speedup), printed("%+.2f", r.added) + (past ? " !" : ""),
                      r.all_reduce_how.empty() ? std::string("-") : r.all_reduce_how});
  }
}

void SpeedupView::Draw(FrameContext& frame, const char* panel, const ModelMachine& machine) {
  if (frame.machines == nullptr || !machine.topology) return;
  update(frame, machine);
  const SpeedupTable& t = table_;
  tag("PREDICTED", kPredictedRgb);
  bold_wrapped(frame, t.heading);
  if (!t.problem.empty()) {
    say_problem(t.problem);
    frame.report.drew(panel, "step_rows", 0);
    frame.report.drew(panel, "step_problem", 1);
    return;
  }
  // The table near the top, where a projector's narrow panel still shows it; how each number is
  // worked out, in `mirrorlab compare`'s words, below it.
  text_wrapped_unformatted(t.summary);
  // The verdict under the table stays in view: the table scrolls within what is left.
  const float wrap = ImGui::GetContentRegionAvail().x;
  const float below =
      (wrapped_line_count(verdict_, wrap) + wrapped_line_count(t.verdict.why, wrap) + 2.0f) *
      ImGui::GetTextLineHeightWithSpacing();
  draw_table(frame, panel, below);
  const float under = ImGui::GetCursorPosY();
  text_wrapped_unformatted(verdict_);
  if (!t.verdict.why.empty()) text_wrapped_unformatted(t.verdict.why);
  // How each number is worked out: one line until opened, so that the table and its verdict
  // fill a projector's panel without scrolling.
  if (!details_.empty() && ImGui::CollapsingHeader("How each number is worked out")) {
    for (const std::string& detail : details_) {
      if (!detail.empty()) text_wrapped_dim("%s", detail.c_str());
    }
  }
  // The room the table left for these, had it all (gui/drawing/content_height.h).
  wants_more_height(below - (ImGui::GetCursorPosY() - under));
  frame.report.drew(panel, "step_rows", static_cast<double>(t.rows.size()));
  frame.report.drew(panel, "step_problem", 0);
  frame.report.drew(panel, "step_paying_devices", t.stop.devices);
  frame.report.drew(panel, "step_nccl", t.nccl ? 1 : 0);
  frame.report.drew(panel, "step_one_buffer", t.one_buffer.empty() ? 0 : 1);
}

void SpeedupView::draw_table(FrameContext& frame, const char* panel, float below) {
  const SpeedupTable& t = table_;
  enum Column {
    kDevices,
    kInTurn,
    kCompute,
    kAllReduce,
    kStep,
    kOneBuffer,
    kHidden,
    kImages,
    kSpeedup,
    kAdded,
    kDetail
  };
  const char* labels[kColumns] = {
      "devices", "in turn", "compute",
      // With packs beside backward: the part not hidden by it.
      !t.one_buffer.empty() && t.packs_overlap ? "all-reduce left" : "all-reduce", "step",
      "one buffer", "hidden", "images/s", "speed-up", "added",
      t.nccl ? "NCCL picks" : "slowest step"};
  // 'in turn' only where engines are shared. A panel too narrow for every column (a projector's
  // large font beside a lesson) leaves some out, in this order, and shows a whole row on hovering
  // it; devices, step, speed-up and added always stay, scrolling sideways if even they do not fit.
  std::array<bool, kColumns> shown;
  shown.fill(true);
  shown[kInTurn] = t.engines != 0;
  shown[kOneBuffer] = shown[kHidden] = !t.one_buffer.empty();  // with packs
  const float pad = ImGui::GetStyle().CellPadding.x * 2 + ImGui::GetStyle().ItemSpacing.x;
  std::array<float, kColumns> widest{};
  for (int c = 0; c < kColumns; ++c) {
    widest[c] = ImGui::CalcTextSize(labels[c]).x + pad;
    for (const auto& row : cells_) {
      widest[c] = std::max(widest[c], ImGui::CalcTextSize(row[c].c_str()).x + pad);
    }
  }
  const auto needed = [&] {
    float sum = 0;
    for (int c = 0; c < kColumns; ++c) sum += shown[c] ? widest[c] : 0;
    return sum;
  };
  const float room = ImGui::GetContentRegionAvail().x;
  for (const Column c : {kDetail, kImages, kInTurn, kCompute, kAllReduce, kHidden, kOneBuffer}) {
    if (needed() <= room) break;
    shown[c] = false;
  }
  const int never_shown = (t.engines == 0 ? 1 : 0) + (t.one_buffer.empty() ? 2 : 0);
  const bool left_out = std::count(shown.begin(), shown.end(), false) > never_shown;
  const bool narrow = needed() > room;
  const int columns = static_cast<int>(std::count(shown.begin(), shown.end(), true));
  const float line = ImGui::GetTextLineHeightWithSpacing();
  const float sideways = narrow ? ImGui::GetStyle().ScrollbarSize : 0.0f;
  const int rows = static_cast<int>(cells_.size());
  const float whole = table_height(1, rows) + sideways;  // the header and every row
  // The note under the table when columns are left out stays in view too.
  const char* note = "A wider panel shows every column; hover a row for all of it.";
  const float note_height =
      left_out ? wrapped_line_count(note, ImGui::GetContentRegionAvail().x) * line : 0.0f;
  const float room_y = ImGui::GetContentRegionAvail().y - below - note_height;
  const bool scrolls = whole > room_y;  // rows scroll under a fixed header
  const ImGuiTableFlags flags = ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV |
                                (narrow ? ImGuiTableFlags_ScrollX | ImGuiTableFlags_SizingFixedFit
                                        : ImGuiTableFlags_SizingStretchProp) |
                                (scrolls ? ImGuiTableFlags_ScrollY : 0);
  // Scrolling, at least the header and two rows, in whole rows: never more than the whole table.
  const int in_view = scrolls ? table_rows_that_fit(1, room_y - sideways, rows, 2) : rows;
  const float height = scrolls ? table_height(1, in_view) + sideways : narrow ? whole : 0;
  frame.report.drew(panel, "step_rows_shown", in_view);
  const float top = ImGui::GetCursorPosY();
  if (!ImGui::BeginTable("training step", columns, flags, ImVec2(0, height))) return;
  if (scrolls) ImGui::TableSetupScrollFreeze(0, 1);
  for (int c = 0; c < kColumns; ++c) {
    if (shown[c]) ImGui::TableSetupColumn(labels[c]);
  }
  ImGui::TableHeadersRow();
  int cells = 0;
  for (std::size_t i = 0; i < cells_.size(); ++i) {
    const timing::StepTime& r = t.rows[i];
    const bool past = t.stop.stopped && r.devices == t.stop.next;
    ImGui::TableNextRow();
    if (past) ImGui::TableSetBgColor(ImGuiTableBgTarget_RowBg1, rgb(kStopRgb, 0x60));
    for (int c = 0; c < kColumns; ++c) {
      if (!shown[c]) continue;
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(cells_[i][c].c_str());
      ++cells;
      if (!ImGui::IsItemHovered()) continue;
      std::string tip;
      if (left_out) {
        for (int k = 0; k < kColumns; ++k) {
          if (k == kInTurn && t.engines == 0) continue;
          if ((k == kOneBuffer || k == kHidden) && t.one_buffer.empty()) continue;
          tip += std::string(labels[k]) + ": " + cells_[i][k] + "\n";
        }
      }
      if (c == kAdded && past) {
        const bool one = r.devices == t.stop.devices + 1;
        tip += std::string(one ? "This device" : "Each of these devices") + " added " +
               cells_[i][kAdded].substr(0, cells_[i][kAdded].find(' ')) +
               " of one device's images/s, less than " + printed("%.2f", timing::kPaysForItself) +
               ": " + (one ? "it does not pay for itself." : "they do not pay for themselves.");
      }
      if (!tip.empty()) ImGui::SetTooltip("%s", tip.c_str());
    }
  }
  ImGui::EndTable();
  // Scrolling, or drawn whole in less than the room it asks of the panel (see
  // gui/drawing/content_height.h).
  wants_more_height(whole - (ImGui::GetCursorPosY() - top - ImGui::GetStyle().ItemSpacing.y));
  if (left_out) text_wrapped_dim("%s", note);
  frame.report.drew(panel, "step_cells", cells);
  frame.report.drew(panel, "step_columns", columns);
}

}  // namespace mirrorlab::gui
