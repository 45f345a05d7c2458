#include "gui/panels/all_reduce/all_reduce_model_view.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "gui/drawing/chart.h"
#include "gui/drawing/colors.h"
#include "gui/drawing/table_cells.h"
#include "gui/drawing/topology_picture.h"
#include "gui/drawing/wrapped_text.h"
#include "gui/panels/compare/compare_machine_view.h"
#include "imgui.h"

namespace mirrorlab::gui {
namespace {

// Puts the next item of `width` pixels on the line of the last one if it fits there.
void same_line_if_room(float width) {
  const float right = ImGui::GetWindowPos().x + ImGui::GetWindowContentRegionMax().x;
  if (ImGui::GetItemRectMax().x + ImGui::GetStyle().ItemSpacing.x + width <= right) {
    ImGui::SameLine();
  }
}

constexpr std::uint32_t kBusiestRgb = 0xD55E00;
constexpr int kSmallestSizeLog2 = 10, kLargestSizeLog2 = 30;  // 1 KiB to 1 GiB per GPU
constexpr std::size_t kLoadRows = 6;

// "8 moves of 8.0 MiB", or "16 moves, 72 MiB in all" when they differ.
std::string moves_text(const timing::ScheduleStep& step) {
  double total = 0;
  bool same = true;
  for (const timing::Move& m : step.moves) {
    total += m.bytes;
    same = same && m.bytes == step.moves.front().bytes;
  }
  const std::size_t n = step.moves.size();
  const std::string count = std::to_string(n) + (n == 1 ? " move" : " moves");
  if (n == 0) return "no moves";
  return same ? count + " of " + format_bytes(step.moves.front().bytes)
              : count + ", " + format_bytes(total) + " in all";
}

const timing::LinkLoad* busiest_load(const timing::StepEstimate& step) {
  for (const timing::LinkLoad& l : step.loads) {
    if (l.resource == step.bottleneck) return &l;
  }
  return nullptr;
}

// "8 MiB at 450 GB/s: 18.6 µs"
std::string load_text(const timing::LinkLoad& l) {
  char rate[32];
  std::snprintf(rate, sizeof rate, "%.0f GB/s", l.seconds > 0 ? l.bytes / l.seconds / 1e9 : 0.0);
  return format_bytes(l.bytes) + (l.kind == timing::ResourceKind::kLink ? "" : " read+written") +
         " at " + rate + ": " + format_seconds(l.seconds);
}

}  // namespace

bool arrows_walk_the_model(const ViewSettings& view, const char* allreduce_panel) {
  return !view.modelled_allreduce.empty() &&
         (view.focused_panel.empty() || view.focused_panel == allreduce_panel);
}

void AllReduceModelView::update(const FrameContext& frame, const ModelMachine& machine) {
  ViewSettings& view = frame.view;
  if (for_machine_ != machine.id || for_version_ != frame.machines->version()) {
    algorithms_ = modelled_algorithms(*machine.topology);
  }
  // An algorithm the machine cannot play (NCCL where it cannot run): its first.
  if (std::none_of(algorithms_.begin(), algorithms_.end(),
                   [&](const ModelledAlgorithm& a) { return a.id == view.modelled_allreduce; })) {
    view.modelled_allreduce = algorithms_.front().id;
  }
  if (!(view.modelled_bytes >= 4) || !std::isfinite(view.modelled_bytes)) {
    view.modelled_bytes = 64.0 * (1 << 20);
  }
  if (model_ && for_machine_ == machine.id && for_version_ == frame.machines->version() &&
      for_algorithm_ == view.modelled_allreduce && for_bytes_ == view.modelled_bytes) {
    return;
  }
  for_machine_ = machine.id;
  for_version_ = frame.machines->version();
  for_algorithm_ = view.modelled_allreduce;
  for_bytes_ = view.modelled_bytes;
  problem_.clear();
  model_.reset();
  for (const ModelledAlgorithm& a : algorithms_) {
    if (a.id != view.modelled_allreduce) continue;
    try {
      model_ = model_all_reduce(*machine.topology, a, view.modelled_bytes);
    } catch (const std::exception& e) {
      problem_ = machine.id + " cannot price " + a.title + ": " + e.what();
    }
  }
}

void AllReduceModelView::Draw(FrameContext& frame, const char* panel) {
  tag("THE MODEL, NOT A RUN", kPredictedRgb);
  text_wrapped("predicted by the timing model: nothing runs, nothing is measured.");
  const ModelMachine* machine = choose_machine(frame, "machine");
  if (machine == nullptr) return;
  frame.report.drew(panel, "model", 1);
  if (!machine->topology) {
    say_problem(machine->problem);
    frame.report.drew(panel, "model_steps", 0);
    return;
  }
  const timing::Topology& t = *machine->topology;
  update(frame, *machine);
  const auto chosen = std::find_if(algorithms_.begin(), algorithms_.end(), [&](const auto& a) {
    return a.id == frame.view.modelled_allreduce;
  });
  float widest = 0;  // the combo as wide as its longest title
  for (const ModelledAlgorithm& a : algorithms_) {
    widest = std::max(widest, ImGui::CalcTextSize(a.title.c_str()).x);
  }
  const float combo = widest + ImGui::GetFrameHeight() * 1.5f;
  same_line_if_room(combo + ImGui::CalcTextSize("algorithm").x);
  ImGui::SetNextItemWidth(combo);
  if (ImGui::BeginCombo("algorithm", chosen->title.c_str())) {
    for (const ModelledAlgorithm& a : algorithms_) {
      if (ImGui::Selectable(a.title.c_str(), a.id == chosen->id))
        frame.view.modelled_allreduce = a.id;
    }
    ImGui::EndCombo();
  }
  const float slider = ImGui::CalcTextSize("000 MiB per GPU").x + ImGui::GetFrameHeight();
  same_line_if_room(slider);
  int size_log2 = std::clamp(static_cast<int>(std::lround(std::log2(frame.view.modelled_bytes))),
                             kSmallestSizeLog2, kLargestSizeLog2);
  ImGui::SetNextItemWidth(slider);
  if (ImGui::SliderInt("##size", &size_log2, kSmallestSizeLog2, kLargestSizeLog2,
                       (format_bytes(frame.view.modelled_bytes) + " per GPU").c_str())) {
    frame.view.modelled_bytes = std::ldexp(1.0, size_log2);
  }
  if (!problem_.empty() || !model_) {
    text_wrapped("%s", problem_.c_str());
    return;
  }
  const ModelledAllReduce& m = *model_;
  const int steps = static_cast<int>(m.estimate.steps.size());
  frame.view.modelled_step = std::clamp(frame.view.modelled_step, 0, steps);
  const int shown = frame.view.modelled_step;

  std::string nccl;
  if (m.nccl_own && m.nccl_picks) {
    nccl = " NCCL's own model of its " + std::string(to_string(m.nccl_own->algorithm)) +
           " (pipelined, " + to_string(m.nccl_own->protocol) +
           "): " + format_seconds(m.nccl_own->time_us * 1e-6) + "; at this size NCCL picks " +
           nccl_pick_text(*m.nccl_picks) + ".";
  }
  const std::string call =
      m.estimate.call_latency > 0
          ? "handing it to the GPUs (" + format_seconds(m.estimate.call_latency) + "), then "
          : "";
  text_wrapped("%s of %d x %s on %s in %d step%s: %s, %sthe steps one after the other.%s",
               m.algorithm.title.c_str(), t.ranks(), format_bytes(m.bytes).c_str(), t.id.c_str(),
               steps, steps == 1 ? "" : "s", format_seconds(m.estimate.seconds).c_str(),
               call.c_str(), nccl.c_str());
  draw_controls(frame, steps);
  if (shown == 0) {
    text_wrapped(
        "Before the all-reduce: each GPU holds only its own %s. Right (or Next) "
        "plays the first step.",
        format_bytes(m.bytes).c_str());
  } else {
    const timing::StepEstimate& s = m.estimate.steps[static_cast<std::size_t>(shown - 1)];
    const timing::ScheduleStep& moves = m.schedule.steps[static_cast<std::size_t>(shown - 1)];
    const timing::LinkLoad* busiest = busiest_load(s);
    const double slowest = busiest_seconds(s);
    const auto tied = std::count_if(s.loads.begin(), s.loads.end(), [&](const auto& l) {
      return is_one_of_the_busiest(l, slowest);
    });
    const std::string which =
        tied > 1
            ? std::to_string(tied) + " resources as busy as each other, such as " + s.bottleneck
            : "the busiest resource, " + s.bottleneck;
    text_wrapped("Step %d of %d, %s: %s. %s = latency %s + %s (%s)", shown, steps, s.phase.c_str(),
                 moves_text(moves).c_str(), format_seconds(s.seconds).c_str(),
                 format_seconds(s.latency).c_str(), which.c_str(),
                 busiest ? load_text(*busiest).c_str() : "none");
  }
  draw_step_strip(frame, shown);
  const timing::StepEstimate* step =
      shown > 0 ? &m.estimate.steps[static_cast<std::size_t>(shown - 1)] : nullptr;
  const float width = ImGui::GetContentRegionAvail().x;
  const PictureCounts counts = draw_topology_picture(t, step, width, topology_picture_height(t));
  if (step != nullptr) draw_loads(*step, frame, panel);
  ImGui::PushTextWrapPos(0);
  text_wrapped_dim(
      "Each step's time: the latency of its slowest link plus its busiest resource's bytes over "
      "its bandwidth (alpha-beta). Left/Right: step back/forward. docs/timing-model.md says what "
      "the model leaves out.");
  ImGui::PopTextWrapPos();
  frame.report.drew(panel, "model_steps", steps);
  frame.report.drew(panel, "model_step", shown);
  frame.report.drew(panel, "model_gpus", counts.gpus);
  frame.report.drew(panel, "model_loaded_links", counts.loaded_links);
  frame.report.drew(panel, "model_seconds", m.estimate.seconds);
  frame.report.drew(panel, "model_step_seconds", step != nullptr ? step->seconds : 0);
}

void AllReduceModelView::draw_controls(FrameContext& frame, int steps) {
  int& shown = frame.view.modelled_step;
  ImGui::BeginDisabled(shown <= 0);
  if (ImGui::Button("< Back")) --shown;
  ImGui::EndDisabled();
  ImGui::SameLine();
  ImGui::SetNextItemWidth(ImGui::GetContentRegionAvail().x * 0.4f);
  ImGui::SliderInt("##after step", &shown, 0, std::max(steps, 1), "after step %d");
  ImGui::SameLine();
  ImGui::BeginDisabled(shown >= steps);
  if (ImGui::Button("Next >")) ++shown;
  ImGui::EndDisabled();
  shown = std::clamp(shown, 0, steps);
}

void AllReduceModelView::draw_step_strip(FrameContext& frame, int shown) {
  const timing::Estimate& e = model_->estimate;
  if (e.steps.empty() || !(e.seconds > 0)) return;
  ImDrawList* draw = ImGui::GetWindowDrawList();
  const float line = ImGui::GetTextLineHeight();
  const ImVec2 p = ImGui::GetCursorScreenPos();
  const float width = ImGui::GetContentRegionAvail().x;
  float x = p.x;
  if (e.call_latency > 0) {  // handing the all-reduce to the devices, before its first step
    const float w = static_cast<float>(e.call_latency / e.seconds) * width;
    draw->AddRectFilled(ImVec2(x, p.y), ImVec2(x + std::max(w - 1, 1.0f), p.y + line),
                        rgb(0x3A3A44));
    if (ImGui::IsMouseHoveringRect(ImVec2(x, p.y), ImVec2(x + w, p.y + line))) {
      ImGui::SetTooltip("handing the all-reduce to the GPUs: %s",
                        format_seconds(e.call_latency).c_str());
    }
    x += w;
  }
  for (std::size_t k = 0; k < e.steps.size(); ++k) {
    const float w = static_cast<float>(e.steps[k].seconds / e.seconds) * width;
    const bool current = static_cast<int>(k) + 1 == shown;
    const std::uint32_t fill = current ? rgb(kPredictedRgb) : rgb(k % 2 ? 0x5A5A66 : 0x707080);
    draw->AddRectFilled(ImVec2(x, p.y), ImVec2(x + std::max(w - 1, 1.0f), p.y + line), fill);
    if (ImGui::IsMouseHoveringRect(ImVec2(x, p.y), ImVec2(x + w, p.y + line))) {
      ImGui::SetTooltip("step %zu, %s: %s (click to show it)", k + 1, e.steps[k].phase.c_str(),
                        format_seconds(e.steps[k].seconds).c_str());
      if (ImGui::IsMouseClicked(0)) frame.view.modelled_step = static_cast<int>(k) + 1;
    }
    x += w;
  }
  ImGui::Dummy(ImVec2(width, line * 1.2f));
  ImGui::TextDisabled("each step's width: its share of the %s", format_seconds(e.seconds).c_str());
}

void AllReduceModelView::draw_loads(const timing::StepEstimate& step, FrameContext& frame,
                                    const char* panel) {
  std::vector<const timing::LinkLoad*> loads;
  for (const timing::LinkLoad& l : step.loads) loads.push_back(&l);
  std::stable_sort(loads.begin(), loads.end(),
                   [](const auto* a, const auto* b) { return a->seconds > b->seconds; });
  const std::size_t rows = std::min(loads.size(), kLoadRows);
  const ImGuiTableFlags flags =
      ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_SizingStretchProp;
  if (ImGui::BeginTable("loads", 3, flags)) {
    ImGui::TableSetupColumn(
        "this step's resources, busiest first (vermilion: the step waits for it)", 0, 3.0f);
    ImGui::TableSetupColumn("bytes", 0, 1.2f);
    ImGui::TableSetupColumn("time at its bandwidth", 0, 1.5f);
    table_headers_wrapped();
    for (std::size_t i = 0; i < rows; ++i) {
      const timing::LinkLoad& l = *loads[i];
      ImGui::TableNextRow();
      if (is_one_of_the_busiest(l, busiest_seconds(step))) {
        ImGui::TableSetBgColor(ImGuiTableBgTarget_RowBg0, rgb(kBusiestRgb, 0x60));
      }
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(l.resource.c_str());
      ImGui::TableNextColumn();
      ImGui::Text("%s%s", format_bytes(l.bytes).c_str(),
                  l.kind == timing::ResourceKind::kLink ? "" : " r+w");
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(format_seconds(l.seconds).c_str());
    }
    ImGui::EndTable();
  }
  if (loads.size() > rows) {
    ImGui::TextDisabled("and %zu more, none busier", loads.size() - rows);
  }
  frame.report.drew(panel, "model_load_rows", static_cast<double>(rows));
}

}  // namespace mirrorlab::gui
