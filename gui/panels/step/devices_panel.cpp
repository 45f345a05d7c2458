#include "gui/panels/step/devices_panel.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "core/session/session_config.h"
#include "core/session/step_figures.h"
#include "gui/drawing/colors.h"
#include "gui/drawing/wrapped_text.h"
#include "gui/panels/lesson_asks.h"
#include "imgui.h"
#include "virtualgpu/memory/memory_arena.h"

namespace mirrorlab::gui {
namespace {

// The width, in lines of text, a worker's devices need to read side by side with another's.
constexpr float kWorkerColumnLines = 26;

core::Phase next_phase(core::Phase p) {
  switch (p) {
    case core::Phase::kSplit:
      return core::Phase::kForward;
    case core::Phase::kForward:
      return core::Phase::kBackward;
    case core::Phase::kBackward:
      return core::Phase::kWait;
    case core::Phase::kWait:
      return core::Phase::kAllReduce;
    case core::Phase::kAllReduce:
      return core::Phase::kUpdate;
    default:
      return core::Phase::kSplit;
  }
}

// MiB to one decimal, or whole when it is ("1024", "4.1").
std::string mib(std::size_t bytes) {
  const double value = static_cast<double>(bytes) / vgpu::kMiB;
  char text[32];
  std::snprintf(text, sizeof text, value == std::floor(value) ? "%.0f" : "%.1f", value);
  return text;
}

// "Global batch 48 = 16 x 3 replicas in sync", above the devices' cards (each card says its
// replica's weights' fingerprint after the step).
void draw_run_line(const FrameContext& frame) {
  const core::SessionSnapshot& run = frame.run;
  const std::string replicas = blank_if_asked(
      frame, "replicas", std::to_string(std::max<std::size_t>(1, run.replicas_in_sync)));
  text_wrapped("Global batch %s = %zu x %s replica%s in sync",
               blank_if_asked(frame, "global_batch", std::to_string(run.global_batch)).c_str(),
               run.batch_per_replica(), replicas.c_str(), plural_s(replicas));
}

std::string what_it_is(const core::DeviceStatus& d) {
  if (d.cuda_ordinal < 0) return d.what + ": host memory, own thread";
  return d.what + " on CUDA card " + std::to_string(d.cuda_ordinal);
}

// A device's name and its replica's number, as a card or a row heads it; the name alone while
// a lesson's step asks how many replicas there are (the last number would say it).
std::string device_heading(const FrameContext& frame, const std::string& name, int replica) {
  if (is_asked(frame, "replicas")) return name;
  return name + "  replica " + std::to_string(replica);
}

// Whether the replicas' weights are the same after the recorded step, in a sentence above the
// cards: each card's fingerprint alone is a dim line a class must compare by eye.
void draw_weights_line(FrameContext& frame) {
  const core::RecordedStep& record = frame.run.step_record;
  const std::optional<bool> same = core::weights_in_sync(record);
  if (record.replicas.size() < 2 || !same) return;
  ImGui::PushStyleColor(ImGuiCol_Text, *same ? rgb(0x009E73) : rgb(0xD55E00));
  if (*same) {
    text_wrapped("After step %lld every replica's weights are the same: fingerprint %016llx",
                 static_cast<long long>(record.step + 1),
                 static_cast<unsigned long long>(record.replicas.front().fingerprint));
  } else {
    text_wrapped("After step %lld the replicas' weights are NOT the same",
                 static_cast<long long>(record.step + 1));
  }
  ImGui::PopStyleColor();
  frame.report.drew("Devices", "weights_same", *same ? 1 : 0);
}

// The bar: limit is the full width, in use is filled, peak is a tick. Its tooltip names the
// limit as `limit` (a blank while a lesson's step asks for it).
void memory_bar(const core::DeviceStatus& d, const std::string& limit_shown, std::uint32_t color,
                float width, float height) {
  ImDrawList* draw = ImGui::GetWindowDrawList();
  const ImVec2 p = ImGui::GetCursorScreenPos();
  const double limit = static_cast<double>(std::max<std::size_t>(d.limit, 1));
  const float used = static_cast<float>(std::min(1.0, d.in_use / limit)) * width;
  const float peak = static_cast<float>(std::min(1.0, d.peak / limit)) * width;
  draw->AddRectFilled(p, ImVec2(p.x + width, p.y + height), rgb(0x303038));
  draw->AddRectFilled(p, ImVec2(p.x + std::max(used, 2.0f), p.y + height), color);
  draw->AddLine(ImVec2(p.x + peak, p.y - 2), ImVec2(p.x + peak, p.y + height + 2), rgb(0xFFFFFF),
                2.0f);
  draw->AddRect(p, ImVec2(p.x + width, p.y + height), rgb(0x808088));
  ImGui::Dummy(ImVec2(width, height));
  if (ImGui::IsItemHovered()) {
    ImGui::SetTooltip("in use %s MiB (filled), peak %s MiB (white tick), limit %s MiB (bar)",
                      mib(d.in_use).c_str(), mib(d.peak).c_str(), limit_shown.c_str());
  }
}

}  // namespace

std::string describe_device_phase(const core::SessionSnapshot& run, bool has_event,
                                  const core::RunEvent& last) {
  if (run.held_at) {
    return std::string("held after ") + core::to_string(run.held_at->boundary) + " (step " +
           std::to_string(run.held_at->step + 1) + ")";
  }
  // Copying replica 0's initial weights comes before the first step: a device that took them
  // waits for that step as one that sent them does.
  if (!has_event || last.phase == core::Phase::kBroadcastInit) return "waiting for the first step";
  const std::string step = " (step " + std::to_string(last.step + 1) + ")";
  if (run.state == core::SessionState::kRunning && last.phase != core::Phase::kEvaluate) {
    if (last.phase == core::Phase::kUpdate) {
      return std::string("in split, of step ") + std::to_string(last.step + 2);
    }
    return std::string("in ") + core::to_string(next_phase(last.phase)) + step;
  }
  return std::string("idle; last did ") + core::to_string(last.phase) + step;
}

void DevicesPanel::follow_events(const core::SessionSnapshot& run) {
  if (session_ != run.session || events_seen_ > run.events.size()) {
    session_ = run.session;
    events_seen_ = 0;
    last_event_.assign(run.devices.size(), core::RunEvent{});
    has_event_.assign(run.devices.size(), false);
  }
  for (; events_seen_ < run.events.size(); ++events_seen_) {
    const core::RunEvent& e = run.events[events_seen_];
    if (e.device < 0 || e.device >= static_cast<int>(last_event_.size())) continue;
    // What a device does is its compute's: a pack's all-reduce beside backward does not end it.
    if (e.lane == core::Lane::kCommunication) continue;
    last_event_[static_cast<std::size_t>(e.device)] = e;
    has_event_[static_cast<std::size_t>(e.device)] = true;
  }
}

// A run that could not be made (a replica that does not fit, NCCL where it cannot run): why, and
// the devices it was given, the one the reason names marked. While a lesson's step asks what
// happens, the reason waits for the step's run, as the Controls' does.
void DevicesPanel::draw_unmade(FrameContext& frame) {
  if (frame.setup_error.empty()) {  // no run asked for yet
    text_wrapped_dim("No run yet.");
    return;
  }
  if (frame.view.lesson_asks) {
    text_wrapped_dim(
        "The devices show here when the step runs: predict first, then \"Run the step and show "
        "me\".");
    return;
  }
  ImGui::PushStyleColor(ImGuiCol_Text, rgb(0xD55E00));
  text_wrapped("Cannot start this run: %s", frame.setup_error.c_str());
  ImGui::PopStyleColor();
  const std::vector<vgpu::LogicalDeviceConfiguration> devices = core::session_devices(frame.config);
  text_wrapped("The devices it was given (%zu):", devices.size());
  for (std::size_t i = 0; i < devices.size(); ++i) {
    const std::string device = "/gpu:" + std::to_string(i);
    const bool named = frame.setup_error.find(device + ":") != std::string::npos;
    swatch(replica_color(static_cast<int>(i)));
    text_wrapped("%s  limit %zu MiB%s", device.c_str(), devices[i].memory_limit_mib,
                 named ? "  <- the one the reason names" : "");
  }
  frame.report.drew(name(), "devices_not_made", static_cast<double>(devices.size()));
}

void DevicesPanel::Draw(FrameContext& frame) {
  const core::SessionSnapshot& run = frame.run;
  if (frame.session == nullptr) {
    draw_unmade(frame);
    return;
  }
  follow_events(run);
  if (run.workers.size() > 1) {
    draw_workers(frame);
    return;
  }
  const float scale = frame.view.font_scale;
  const float spacing = ImGui::GetStyle().ItemSpacing.x;
  const float avail = ImGui::GetContentRegionAvail().x;
  draw_run_line(frame);
  draw_weights_line(frame);
  const float card_height = ImGui::GetTextLineHeightWithSpacing() * 6.4f;
  // As many cards to a row as fit at full width; more (narrower) when the rows would not fit
  // in the panel's height, so every device stays in view.
  const int devices = std::max(1, static_cast<int>(run.devices.size()));
  int per_row = std::max(1, static_cast<int>((avail + spacing) / (340.0f * scale + spacing)));
  const int rows_fit = std::max(
      1, static_cast<int>((ImGui::GetContentRegionAvail().y + spacing) / (card_height + spacing)));
  per_row = std::min(devices, std::max(per_row, (devices + rows_fit - 1) / rows_fit));
  const float card_width = (avail - spacing * static_cast<float>(per_row - 1)) / per_row;
  // Room to spare below the cards (few devices on a projector): a taller memory bar, which
  // reads from the back of a hall, up to a line and a half more.
  const int rows = (devices + per_row - 1) / per_row;
  const float spare = (ImGui::GetContentRegionAvail().y + spacing) / static_cast<float>(rows) -
                      spacing - card_height;
  const float taller = std::clamp(spare, 0.0f, 1.5f * ImGui::GetTextLineHeight());
  if (card_width < 220.0f * scale) {
    // Cards this narrow would cut every line short (many devices, a large font): one row per
    // device instead, which stays readable for any count.
    draw_rows(frame);
    return;
  }
  const bool narrow = card_width < 300.0f * scale;
  for (std::size_t i = 0; i < run.devices.size(); ++i) {
    const core::DeviceStatus& d = run.devices[i];
    const int replica = static_cast<int>(i);
    if (i % static_cast<std::size_t>(per_row) != 0) ImGui::SameLine();
    ImGui::PushID(replica);
    ImGui::PushStyleColor(ImGuiCol_Border, replica_color(replica));
    ImGui::PushStyleVar(ImGuiStyleVar_ChildBorderSize, 2.0f);
    ImGui::BeginChild("card", ImVec2(card_width, card_height + taller), true,
                      ImGuiWindowFlags_NoScrollbar);
    swatch(replica_color(replica));
    ImGui::TextUnformatted(device_heading(frame, d.name, replica).c_str());
    // Each line in its longer form where the card has room for it, else its shorter one (the
    // longer on hover).
    const float room = ImGui::GetContentRegionAvail().x;
    const std::string kind = what_it_is(d);
    const std::string shown_kind = narrow ? d.what : first_that_fits({kind, d.what}, room);
    ImGui::TextDisabled("%s", shown_kind.c_str());
    if (shown_kind != kind && ImGui::IsItemHovered()) ImGui::SetTooltip("%s", kind.c_str());
    std::string phase = describe_device_phase(run, has_event_[i], last_event_[i]);
    const std::size_t step_said = phase.find(" (step");
    if (step_said != std::string::npos) {
      phase = narrow ? phase.substr(0, step_said)
                     : first_that_fits({phase, phase.substr(0, step_said)}, room);
    }
    ImGui::Text("%s", phase.c_str());
    const std::string in_use = mib(d.in_use),
                      limit = blank_if_asked(frame, "memory_limit_mib", mib(d.limit));
    memory_bar(d, limit, replica_color(replica), room, ImGui::GetTextLineHeight() * 0.9f + taller);
    const std::string full = in_use + " MiB in use, peak " + mib(d.peak) + " MiB, limit " + limit +
                             " MiB",
                      brief = in_use + " / " + limit + " MiB";
    ImGui::TextUnformatted((narrow ? brief : first_that_fits({full, brief}, room)).c_str());
    const auto& replicas = run.step_record.replicas;
    if (i < replicas.size() && replicas[i].has_fingerprint) {
      char print[24];
      std::snprintf(print, sizeof print, "%016llx",
                    static_cast<unsigned long long>(replicas[i].fingerprint));
      const std::string longer = std::string("weights' fingerprint ") + print;
      ImGui::TextDisabled(
          "%s",
          first_that_fits({longer, std::string("fingerprint ") + print, std::string(print)}, room)
              .c_str());
    }
    ImGui::EndChild();
    ImGui::PopStyleVar();
    ImGui::PopStyleColor();
    ImGui::PopID();
  }
  frame.report.drew(name(), "cards", static_cast<double>(run.devices.size()));
}

void DevicesPanel::draw_rows(FrameContext& frame) {
  const core::SessionSnapshot& run = frame.run;
  if (run.devices.empty()) return;
  // What the devices are and what they do, said once when it is the same for all of them.
  std::vector<std::string> phases;
  for (std::size_t i = 0; i < run.devices.size(); ++i) {
    phases.push_back(describe_device_phase(run, has_event_[i], last_event_[i]));
  }
  const auto all_equal = [](const std::vector<std::string>& texts) {
    return std::all_of(texts.begin(), texts.end(), [&](const auto& t) { return t == texts[0]; });
  };
  std::vector<std::string> kinds;
  for (const core::DeviceStatus& d : run.devices) kinds.push_back(what_it_is(d));
  const bool one_kind = all_equal(kinds), one_phase = all_equal(phases);
  if (one_kind) text_wrapped("%zu x %s", run.devices.size(), kinds[0].c_str());
  if (one_phase) text_wrapped("All %s", phases[0].c_str());
  const ImGuiTableFlags flags = ImGuiTableFlags_SizingStretchProp | ImGuiTableFlags_RowBg;
  if (!ImGui::BeginTable("device rows", one_phase ? 3 : 4, flags)) return;
  const float line = ImGui::GetTextLineHeight();
  ImGui::TableSetupColumn("device", ImGuiTableColumnFlags_WidthFixed);
  if (!one_phase) ImGui::TableSetupColumn("doing", ImGuiTableColumnFlags_WidthStretch, 1.0f);
  ImGui::TableSetupColumn("memory", ImGuiTableColumnFlags_WidthStretch, 0.6f);
  ImGui::TableSetupColumn("MiB", ImGuiTableColumnFlags_WidthFixed);
  for (std::size_t i = 0; i < run.devices.size(); ++i) {
    const core::DeviceStatus& d = run.devices[i];
    const std::uint32_t color = replica_color(static_cast<int>(i));
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    swatch(color);
    ImGui::TextUnformatted(d.name.c_str());
    if (ImGui::IsItemHovered()) {
      ImGui::SetTooltip("%s: %s", device_heading(frame, d.name, static_cast<int>(i)).c_str(),
                        kinds[i].c_str());
    }
    if (!one_phase) {
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(phases[i].c_str());
    }
    ImGui::TableNextColumn();
    ImGui::SetCursorPosY(ImGui::GetCursorPosY() + line * 0.15f);
    const std::string limit = blank_if_asked(frame, "memory_limit_mib", mib(d.limit));
    memory_bar(d, limit, color, ImGui::GetContentRegionAvail().x, line * 0.7f);
    ImGui::TableNextColumn();
    ImGui::Text("%s / %s MiB", mib(d.in_use).c_str(), limit.c_str());
  }
  ImGui::EndTable();
  frame.report.drew(name(), "rows", static_cast<double>(run.devices.size()));
}

void DevicesPanel::draw_workers(FrameContext& frame) {
  const core::SessionSnapshot& run = frame.run;
  const float line = ImGui::GetTextLineHeight();
  const std::size_t per_worker = run.workers[0].devices.size();
  text_wrapped(
      "%zu workers x %zu devices = %s replicas in sync; the workers here are %s "
      "(elsewhere a worker is a machine: TF_CONFIG says which)",
      run.workers.size(), per_worker,
      blank_if_asked(frame, "replicas", std::to_string(run.replicas_in_sync)).c_str(),
      run.workers_are.c_str());
  draw_run_line(frame);
  // After each step worker 0's strategy compares every worker's weights (replica 0's
  // fingerprint); a difference fails the step, so these are equal whenever the run goes on.
  if (run.workers_found_in_sync > 0) {
    std::size_t same = 0;
    for (const core::WorkerStatus& w : run.workers) {
      if (w.fingerprint == run.workers[0].fingerprint) ++same;
    }
    frame.report.drew(name(), "workers_same_weights", static_cast<double>(same));
    text_wrapped(
        "Weights bit-identical on every worker after %lld step%s: fingerprint "
        "%016llx on %zu of %zu workers (compared after each step)",
        static_cast<long long>(run.workers_found_in_sync),
        run.workers_found_in_sync == 1 ? "" : "s",
        static_cast<unsigned long long>(run.workers[0].fingerprint), same, run.workers.size());
  }
  // Side by side where the panel is wide enough for each worker's devices to read (a lesson's
  // full-width Devices panel): a line of the strip below saved per device, a column per worker.
  const std::size_t columns = std::clamp<std::size_t>(
      static_cast<std::size_t>(ImGui::GetContentRegionAvail().x / (kWorkerColumnLines * line)), 1,
      run.workers.size());
  std::size_t drawn = 0;
  if (columns > 1) {
    ImGui::Separator();
    if (ImGui::BeginTable("workers", static_cast<int>(columns),
                          ImGuiTableFlags_SizingStretchSame | ImGuiTableFlags_BordersInnerV)) {
      for (std::size_t w = 0; w < run.workers.size(); ++w) {
        ImGui::TableNextColumn();
        drawn += draw_worker(frame, w);
      }
      ImGui::EndTable();
    }
  } else {
    for (std::size_t w = 0; w < run.workers.size(); ++w) {
      ImGui::Separator();
      drawn += draw_worker(frame, w);
    }
  }
  frame.report.drew(name(), "worker_columns", static_cast<double>(columns));
  frame.report.drew(name(), "workers", static_cast<double>(run.workers.size()));
  frame.report.drew(name(), "worker_devices", static_cast<double>(drawn));
}

std::size_t DevicesPanel::draw_worker(FrameContext& frame, std::size_t w) {
  const core::SessionSnapshot& run = frame.run;
  const float line = ImGui::GetTextLineHeight();
  const core::WorkerStatus& worker = run.workers[w];
  const std::size_t per_worker = run.workers[0].devices.size();
  ImGui::BeginGroup();  // hovered anywhere, the tooltip below
  ImGui::Text("worker %zu", w);
  ImGui::SameLine();
  text_wrapped_dim("%s; TF_CONFIG task index %zu", worker.place.c_str(), w);
  ImGui::EndGroup();
  if (ImGui::IsItemHovered()) {
    ImGui::SetTooltip("TF_CONFIG='%s'\nweights' fingerprint after its last step: %016llx",
                      worker.tf_config.c_str(),
                      static_cast<unsigned long long>(worker.fingerprint));
  }
  const std::string id = "worker " + std::to_string(w);
  if (!ImGui::BeginTable(id.c_str(), 3, ImGuiTableFlags_SizingStretchProp)) return 0;
  ImGui::TableSetupColumn("device", ImGuiTableColumnFlags_WidthFixed);
  ImGui::TableSetupColumn("memory", ImGuiTableColumnFlags_WidthStretch);
  ImGui::TableSetupColumn("MiB", ImGuiTableColumnFlags_WidthFixed);
  std::size_t drawn = 0;
  for (std::size_t i = 0; i < worker.devices.size(); ++i) {
    const core::DeviceStatus& d = worker.devices[i];
    const int replica = static_cast<int>(w * per_worker + i);  // replica_id_in_sync_group
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    swatch(replica_color(replica));
    ImGui::TextUnformatted(device_heading(frame, d.name, replica).c_str());
    if (ImGui::IsItemHovered()) {
      ImGui::SetTooltip("worker %zu's %s: %s", w, d.name.c_str(), what_it_is(d).c_str());
    }
    ImGui::TableNextColumn();
    ImGui::SetCursorPosY(ImGui::GetCursorPosY() + line * 0.15f);
    const std::string limit = blank_if_asked(frame, "memory_limit_mib", mib(d.limit));
    memory_bar(d, limit, replica_color(replica), ImGui::GetContentRegionAvail().x, line * 0.7f);
    ImGui::TableNextColumn();
    ImGui::Text("%s / %s MiB", mib(d.in_use).c_str(), limit.c_str());
    ++drawn;
  }
  ImGui::EndTable();
  return drawn;
}

}  // namespace mirrorlab::gui
