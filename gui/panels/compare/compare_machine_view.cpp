#include "gui/panels/compare/compare_machine_view.h"

#include <algorithm>
#include <limits>

#include "core/nn/training_flops.h"
#include "gui/drawing/chart.h"
#include "gui/drawing/colors.h"
#include "gui/drawing/content_height.h"
#include "gui/drawing/table_cells.h"
#include "gui/drawing/wrapped_text.h"
#include "gui/model/speedup_table.h"
#include "gui/panels/lesson_asks.h"
#include "imgui.h"
#include "virtualgpu/collectives/all_reduce_algorithms.h"

namespace mirrorlab::gui {
namespace {

std::string machine_label(const ModelMachine& m) {
  return m.topology ? m.id : m.id + " (no fit yet)";
}

}  // namespace

const ModelMachine* choose_machine(FrameContext& frame, const char* label) {
  if (frame.machines == nullptr) return nullptr;
  const TopologyCatalog& catalog = *frame.machines;
  const ModelMachine* chosen = catalog.find(frame.view.model_machine);
  if (chosen == nullptr) {  // not among these presets: the first, for every panel
    chosen = &catalog.machines().front();
    frame.view.model_machine = chosen->id;
  }
  ImGui::SetNextItemWidth(ImGui::CalcTextSize("dgx-h100-2-nodes (no fit yet)").x +
                          ImGui::GetFrameHeight() * 1.5f);
  if (ImGui::BeginCombo(label, machine_label(*chosen).c_str())) {
    for (const ModelMachine& m : catalog.machines()) {
      if (ImGui::Selectable(machine_label(m).c_str(), &m == chosen)) {
        frame.view.model_machine = m.id;
        chosen = &m;
      }
      if (ImGui::IsItemHovered()) {
        ImGui::SetTooltip("%s", m.topology ? m.topology->title.c_str() : m.problem.c_str());
      }
    }
    ImGui::EndCombo();
  }
  return chosen;
}

void two_tabs(const char* id, const std::vector<std::string> (&labels)[2], bool* second, int* shown,
              const std::function<void(int tab)>& draw) {
  // Each tab's longest label that fits half the panel whole: ImGui would end a label that does
  // not fit with "...". The tab keeps its identity whichever label it shows.
  const ImGuiStyle& style = ImGui::GetStyle();
  const float room =
      (ImGui::GetContentRegionAvail().x - style.ItemInnerSpacing.x) / 2 - 2 * style.FramePadding.x;
  std::string shown_labels[2];
  for (int tab = 0; tab < 2; ++tab) {
    shown_labels[tab] = first_that_fits(labels[tab], room) + "###tab" + std::to_string(tab);
  }
  if (!ImGui::BeginTabBar(id)) return;
  const int wanted = *second ? 1 : 0;
  for (int tab = 0; tab < 2; ++tab) {
    const ImGuiTabItemFlags flags =
        tab == wanted && *shown != wanted ? ImGuiTabItemFlags_SetSelected : 0;
    if (!ImGui::BeginTabItem(shown_labels[tab].c_str(), nullptr, flags)) continue;
    *shown = tab;
    *second = tab == 1;
    draw(tab);
    ImGui::EndTabItem();
  }
  ImGui::EndTabBar();
}

void MachineView::Draw(FrameContext& frame, const char* panel) {
  const ModelMachine* machine = choose_machine(frame, "machine");
  if (machine == nullptr) return;
  frame.report.drew(panel, "machines", static_cast<double>(frame.machines->machines().size()));
  if (!frame.machines->presets_problem().empty()) say_problem(frame.machines->presets_problem());
  if (!machine->topology) {
    ImGui::Spacing();
    say_problem(machine->problem);
    frame.report.drew(panel, "machine_rows", 0);
    frame.report.drew(panel, "fit_missing", 1);
    return;
  }
  // The machine's title beside the chooser, or under it where too little room is left there (a
  // projector's large font in a narrow panel).
  const std::string& title = machine->topology->title;
  ImGui::SameLine();
  if (ImGui::GetContentRegionAvail().x <
      std::min(ImGui::CalcTextSize(title.c_str()).x, ImGui::GetFontSize() * 16)) {
    ImGui::NewLine();
  }
  text_wrapped("%s", title.c_str());
  // Its numbers are what a lesson's step on a machine asks the class to predict.
  if (frame.view.lesson_asks) {
    ImGui::Spacing();
    shows_the_lesson_asks(frame, "What the timing model predicts on this machine");
    frame.report.drew(panel, "machine_rows", 0);
    frame.report.drew(panel, "step_rows", 0);
    return;
  }
  two_tabs("machine sections",
           {{"All-reduce by size", "By size", "Sizes"}, {"Training step: speed-up", "Speed-up"}},
           &frame.view.compare_shows_step, &section_shown_, [&](int section) {
             frame.report.drew(panel, "machine_section", section);
             if (section == 0) {
               draw_by_size(frame, panel, *machine);
             } else {
               speedup_.Draw(frame, panel, *machine);
             }
           });
}

void MachineView::draw_by_size(FrameContext& frame, const char* panel,
                               const ModelMachine& machine) {
  const timing::Topology& t = *machine.topology;
  // The sizes by 4s, and the run's own gradients among them (what a lesson asks about).
  const RunModel run = run_model_of(frame.config);
  const double own = static_cast<double>(run.params()) * sizeof(float);
  if (computed_for_ != machine.id || computed_version_ != frame.machines->version() ||
      computed_own_ != own) {
    computed_for_ = machine.id;
    computed_version_ = frame.machines->version();
    computed_own_ = own;
    scrolled_to_own_ = false;
    problem_.clear();
    std::vector<double> sizes = machine_view_sizes();
    if (own > 0 && std::find(sizes.begin(), sizes.end(), own) == sizes.end()) {
      sizes.insert(std::upper_bound(sizes.begin(), sizes.end(), own), own);
    }
    not_run_ = t.has_nccl ? "" : "NCCL cannot run on " + t.id + ": it needs one GPU per rank.";
    for (const std::string& line : cannot_run_on_machine(t)) {
      not_run_.append(not_run_.empty() ? "" : "\n").append(line);
    }
    try {
      rows_ = predict_on_machine(t, sizes);
    } catch (const std::exception& e) {
      rows_.clear();
      problem_ = t.id + " cannot be predicted: " + e.what();
    }
  }
  if (!problem_.empty()) {
    say_problem(problem_);
    frame.report.drew(panel, "machine_rows", 0);
    return;
  }
  text_wrapped(
      "Predicted, not measured: one all-reduce on all %d GPUs. mirrorlab's algorithms step by "
      "step over the machine's %s%s. Shaded: the fastest at each size, in its algorithm's colour.",
      t.ranks(), t.fabric == timing::Fabric::kSharedMemory ? "memory" : "links",
      t.has_nccl ? "; NCCL by its own tuning model" : "");
  if (rows_.empty()) return;

  const std::size_t algorithms = rows_.front().algorithms.size();
  const int columns = static_cast<int>(algorithms) + 1 + (t.has_nccl ? 2 : 0);
  const float line = ImGui::GetTextLineHeightWithSpacing();
  // The size column as wide as its widest label ("2.6 MiB (this model)"), NCCL's pick as wide as
  // its widest ("NVLS Simple"); the times share the rest, under headers wrapped to fit them.
  const float size_width = ImGui::CalcTextSize("1023.9 KiB (this model)").x;
  float pick_width = ImGui::CalcTextSize("NCCL picks").x;
  for (const SizePrediction& row : rows_) {
    if (row.nccl) {
      pick_width = std::max(pick_width, ImGui::CalcTextSize(nccl_pick_text(*row.nccl).c_str()).x);
    }
  }
  const ImGuiStyle& style = ImGui::GetStyle();
  const float time_width =
      (ImGui::GetContentRegionAvail().x - size_width - (t.has_nccl ? pick_width : 0)) /
          static_cast<float>(columns - 1 - (t.has_nccl ? 1 : 0)) -
      2 * style.CellPadding.x - style.ScrollbarSize / static_cast<float>(columns);
  float header_lines = 1;
  for (const timing::Prediction& p : rows_.front().algorithms) {
    header_lines = std::max(header_lines, wrapped_line_count(p.algorithm, time_width));
  }
  if (t.has_nccl) {
    header_lines = std::max(header_lines, wrapped_line_count("NCCL (its model)", time_width));
  }
  // What goes under the table stays in view: the table scrolls within what is left, in whole
  // rows (its own row, the model's size, scrolled to the middle); the sources are one line until
  // opened.
  const float wrap = ImGui::GetContentRegionAvail().x;
  const float footer = wrapped_line_count(not_run_, wrap) * line +
                       ImGui::GetFrameHeightWithSpacing() + ImGui::GetStyle().ItemSpacing.y;
  const int rows = static_cast<int>(rows_.size());
  const int shown =
      table_rows_that_fit(header_lines, ImGui::GetContentRegionAvail().y - footer, rows, 3);
  const ImGuiTableFlags flags = ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV |
                                ImGuiTableFlags_ScrollY | ImGuiTableFlags_SizingStretchSame;
  int cells = 0;
  const float height = table_height(header_lines, shown);
  wants_more_height(table_height(header_lines, rows) - height);  // gui/drawing/content_height.h
  if (ImGui::BeginTable("by size", columns, flags, ImVec2(0, height))) {
    ImGui::TableSetupScrollFreeze(0, 1);
    ImGui::TableSetupColumn("size per GPU", ImGuiTableColumnFlags_WidthFixed, size_width);
    for (const timing::Prediction& p : rows_.front().algorithms) {
      ImGui::TableSetupColumn(p.algorithm.c_str());
    }
    if (t.has_nccl) {
      ImGui::TableSetupColumn("NCCL (its model)");
      ImGui::TableSetupColumn("NCCL picks", ImGuiTableColumnFlags_WidthFixed, pick_width);
    }
    table_headers_wrapped(header_lines);
    // The run's gradients: their row, scrolled to once.
    const auto it = std::find_if(rows_.begin(), rows_.end(),
                                 [&](const SizePrediction& r) { return r.bytes == own; });
    const int own_row = static_cast<int>(it - rows_.begin());
    if (!scrolled_to_own_ && it != rows_.end()) table_scroll_to_row(own_row, shown);
    scrolled_to_own_ = true;
    const int first = table_first_row_shown();
    frame.report.drew(panel, "own_row_shown", own_row >= first && own_row < first + shown ? 1 : 0);
    for (const SizePrediction& row : rows_) {
      ImGui::TableNextRow();
      double fastest = std::numeric_limits<double>::max();
      for (const timing::Prediction& p : row.algorithms) fastest = std::min(fastest, p.predicted);
      if (row.nccl) fastest = std::min(fastest, row.nccl->time_us * 1e-6);
      ImGui::TableNextColumn();
      if (row.bytes == own) {
        ImGui::Text("%s (this model)", format_bytes(row.bytes).c_str());
      } else {
        ImGui::TextUnformatted(format_bytes(row.bytes).c_str());
      }
      for (const timing::Prediction& p : row.algorithms) {
        ImGui::TableNextColumn();
        if (p.predicted == fastest) {
          shade_cell(algorithm_color(p.algorithm) & 0x70FFFFFF);
        }
        ImGui::TextUnformatted(format_seconds(p.predicted).c_str());
        if (ImGui::IsItemHovered()) {
          ImGui::SetTooltip("%s of %s per GPU on %s: %s\nslowest step: %s", p.algorithm.c_str(),
                            format_bytes(row.bytes).c_str(), t.id.c_str(),
                            format_seconds(p.predicted).c_str(), p.bottleneck.c_str());
        }
        ++cells;
      }
      if (row.nccl) {
        ImGui::TableNextColumn();
        if (row.nccl->time_us * 1e-6 == fastest) {
          shade_cell(rgb(algorithm_rgb(vgpu::kNcclName), 0x70));
        }
        ImGui::TextUnformatted(format_seconds(row.nccl->time_us * 1e-6).c_str());
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(nccl_pick_text(*row.nccl).c_str());
        cells += 2;
      }
    }
    ImGui::EndTable();
  }
  frame.report.drew(panel, "machine_rows", static_cast<double>(rows_.size()));
  frame.report.drew(panel, "machine_rows_shown", shown);
  frame.report.drew(panel, "machine_cells", cells);
  const float under = ImGui::GetCursorPosY();
  if (!not_run_.empty()) text_wrapped("%s", not_run_.c_str());
  if (ImGui::CollapsingHeader("Where its numbers come from")) {
    ImGui::PushTextWrapPos(0);
    text_wrapped_dim("%s", t.source.c_str());
    ImGui::PopTextWrapPos();
  }
  // The room the table left for these, had it all (gui/drawing/content_height.h).
  wants_more_height(footer - (ImGui::GetCursorPosY() - under));
}

}  // namespace mirrorlab::gui
