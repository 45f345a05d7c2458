#include "gui/panels/all_reduce/all_reduce_panel.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "core/session/step_figures.h"
#include "core/session/text/console_text.h"
#include "gui/drawing/chart.h"
#include "gui/drawing/colors.h"
#include "gui/drawing/content_height.h"
#include "gui/drawing/wrapped_text.h"
#include "gui/panels/lesson_asks.h"
#include "gui/panels/step/step_moment.h"
#include "imgui.h"
#include "virtualgpu/collectives/collective_replay.h"
#include "virtualgpu/workers/hierarchical_all_reduce.h"

namespace mirrorlab::gui {
namespace {

double milliseconds(vgpu::TimePoint start, vgpu::TimePoint finish) {
  return std::chrono::duration<double, std::milli>(finish - start).count();
}

// Elements in the flat gradient buffer: where the last layer ends.
std::size_t buffer_elements(const core::RecordedStep& record) {
  std::size_t count = 0;
  for (const core::RecordedLayer& l : record.layers) count = std::max(count, l.offset + l.params);
  for (const vgpu::CollectiveStep& s : record.collective_steps) {
    for (const vgpu::Transfer& t : s.transfers) count = std::max(count, t.end);
  }
  return count;
}

std::string contributors_text(std::uint64_t mask, int ranks) {
  std::string text;
  int count = 0;
  for (int r = 0; r < ranks; ++r) {
    if ((mask >> r) & 1u) text += (count++ ? " + " : "") + std::to_string(r);
  }
  return "replicas " + text + " (" + std::to_string(count) + " of " + std::to_string(ranks) + ")";
}

// Every worker's replicas where the run has several (this is worker 0, whose devices are the
// rows); 0 where it trains alone.
int every_workers_replicas(const core::SessionSnapshot& run) {
  return run.workers.size() > 1 ? run.replicas_in_sync : 0;
}

// What the step does, in words, for the line above the picture.
std::string describe_step(const vgpu::CollectiveStep& step, int ranks) {
  if (step.phase == vgpu::kAcrossWorkersPhase) {
    return "across workers: each worker's sum, in its first device, added to the other workers' "
           "(the worker group's exchange, its moves not drawn): the first device now holds "
           "every worker's replicas";
  }
  if (step.transfers.empty()) {
    return "one NCCL call: the library sums on every GPU at once; its steps are not visible";
  }
  bool adds = false;
  for (const vgpu::Transfer& t : step.transfers)
    adds = adds || t.kind == vgpu::TransferKind::kReduce;
  // The one-shot: every slice of every buffer added into the same slice of every other.
  const std::size_t n = static_cast<std::size_t>(ranks);
  if (adds && ranks > 2 && step.transfers.size() == n * n * (n - 1)) {
    return step.phase + ": each device sums one slice of all " + std::to_string(ranks) +
           " buffers and writes the sum into every buffer: each buffer read once and written once";
  }
  const std::string moves =
      std::to_string(step.transfers.size()) + " transfer" + (step.transfers.size() == 1 ? "" : "s");
  return step.phase + ": " + moves +
         (adds ? ", each added into its destination's chunk"
               : ", each copied over its destination's chunk") +
         (ranks > 2 && step.phase == "reduce-scatter" ? " (every GPU sends one chunk to the next)"
                                                      : "");
}

struct Geometry {
  float x = 0, width = 0;  // of the bars
  float top = 0, row = 0, gap = 0;
  std::size_t count = 1;
  bool largest = false;  // the rows at their largest: more room would be left empty
  float bar_y(int rank) const { return top + static_cast<float>(rank) * (row + gap); }
  float at(std::size_t element) const {
    return x +
           width * static_cast<float>(static_cast<double>(element) / static_cast<double>(count));
  }
};

// A "+" badge: a disc as wide as the text is high, the sign centred on it.
void draw_plus(ImDrawList* draw, ImVec2 centre, std::uint32_t color) {
  const float line = ImGui::GetTextLineHeight();
  draw->AddCircleFilled(centre, 0.5f * line, color);
  const ImVec2 sign = ImGui::CalcTextSize("+");
  draw_label(draw, ImVec2(centre.x - sign.x / 2, centre.y - sign.y / 2), rgb(0x000000), "+");
}

// Sized by the text (the font scale): a projector's arrows are as bold as its words.
void draw_arrow(ImDrawList* draw, ImVec2 from, ImVec2 to, float bulge, std::uint32_t color,
                bool reduce) {
  const float line = ImGui::GetTextLineHeight();
  const float head = 0.55f * line, half = 0.3f * line;
  const float thickness = std::max(1.5f, (reduce ? 0.16f : 0.08f) * line);
  const float dir = to.y > from.y ? 1.0f : -1.0f;
  const float pull = std::max(12.0f, std::fabs(to.y - from.y) * 0.4f);
  const ImVec2 c1(from.x + bulge, from.y + dir * pull), c2(to.x + bulge, to.y - dir * pull);
  draw->AddBezierCubic(from, c1, c2, ImVec2(to.x, to.y - dir * head * 0.8f), color, thickness);
  // The head: a triangle pointing along the last part of the curve (vertical at the end).
  draw->AddTriangleFilled(ImVec2(to.x, to.y), ImVec2(to.x - half, to.y - dir * head),
                          ImVec2(to.x + half, to.y - dir * head), color);
  if (reduce) draw_plus(draw, ImVec2(to.x + half + 0.5f * line, to.y - dir * head), color);
}

// The rows of the buffers, in the room the panel has left above the footer.
// `below`: the height of what is drawn under the picture, which stays in view.
Geometry plan_geometry(std::size_t count, int n, float font_scale, float below) {
  const float line = ImGui::GetTextLineHeight();
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  const float label_width = ImGui::CalcTextSize("/gpu:0 ").x + line;
  const float room = std::max(ImGui::GetContentRegionAvail().y - below, 60.0f * n * 0.5f);
  Geometry g;
  g.count = std::max<std::size_t>(count, 1);
  g.x = origin.x + label_width;
  g.width = std::max(40.0f, ImGui::GetContentRegionAvail().x - label_width - 24.0f);
  const float largest = 44.0f * font_scale;
  g.row = std::clamp(room / (static_cast<float>(n) * 1.8f), 10.0f, largest);
  g.largest = g.row >= largest;
  g.gap = g.row * 0.8f;
  g.top = origin.y + 4;
  return g;
}

// Each device's buffer as a row of chunks, striped with the replicas whose values each holds:
// `stripes` of them, every worker's replicas (this worker's first). Returns the number of chunks
// drawn.
int draw_buffers(ImDrawList* draw, const core::RecordedStep& record,
                 const std::vector<std::vector<vgpu::ChunkContributors>>& contributions,
                 const Geometry& g, float left, int stripes) {
  const int n = static_cast<int>(record.replicas.size());
  const float line = ImGui::GetTextLineHeight();
  int chunks = 0;
  for (int r = 0; r < n; ++r) {
    const float y = g.bar_y(r);
    draw->AddRectFilled(ImVec2(left, y + g.row / 2 - line / 2),
                        ImVec2(left + line * 0.8f, y + g.row / 2 + line * 0.3f), replica_color(r));
    draw_label(draw, ImVec2(left + line, y + g.row / 2 - line / 2), rgb(0xDDDDDD),
               record.replicas[static_cast<std::size_t>(r)].device.c_str());
    for (const vgpu::ChunkContributors& c : contributions[static_cast<std::size_t>(r)]) {
      const float x0 = g.at(c.begin), x1 = g.at(c.end);
      // One stripe per replica: its colour where the chunk holds its values, dark where not.
      const float stripe = g.row / static_cast<float>(stripes);
      for (int k = 0; k < stripes; ++k) {
        const bool has = (c.contributors >> k) & 1u;
        draw->AddRectFilled(ImVec2(x0, y + stripe * static_cast<float>(k)),
                            ImVec2(x1, y + stripe * static_cast<float>(k + 1)),
                            has ? replica_color(k) : rgb(0x303038));
      }
      draw->AddRect(ImVec2(x0, y), ImVec2(x1, y + g.row), rgb(0x101014), 0, 0, 1.5f);
      if (ImGui::IsMouseHoveringRect(ImVec2(x0, y), ImVec2(x1, y + g.row))) {
        ImGui::SetTooltip("%s, floats %zu-%zu: the sum of %s",
                          record.replicas[static_cast<std::size_t>(r)].device.c_str(), c.begin,
                          c.end, contributors_text(c.contributors, stripes).c_str());
      }
      ++chunks;
    }
  }
  return chunks;
}

// The step's transfers as arrows between the rows, their destinations outlined; NCCL's one
// opaque call as a box across them. Returns the number of arrows drawn; `places`: the arrows'
// different x positions (for the report).
int draw_transfers(ImDrawList* draw, const vgpu::CollectiveStep& step, const Geometry& g, int n,
                   std::set<int>& places) {
  const float line = ImGui::GetTextLineHeight();
  if (step.transfers.empty()) {
    const ImVec2 a(g.x + g.width * 0.2f, g.bar_y(0) + g.row + 2);
    const ImVec2 b(g.x + g.width * 0.8f, g.bar_y(n - 1) - 2);
    draw->AddRectFilled(a, b, rgb(0x4477AA, 200), 6);
    char text[96];
    std::snprintf(text, sizeof text, "%s: %.3f ms",
                  step.phase == vgpu::kAcrossWorkersPhase ? "across workers" : "ncclAllReduce",
                  milliseconds(step.start, step.finish));
    draw_label(draw, ImVec2(a.x + 8, (a.y + b.y) / 2 - line / 2), rgb(0xFFFFFF), text);
  }
  int arrows = 0;
  // A slice every buffer adds into every other (the one-shot): one sum per slice, each buffer
  // read once into it and written once from it, not n x (n - 1) arrows.
  std::map<std::pair<std::size_t, std::size_t>, int> reduced_pairs;
  for (const vgpu::Transfer& t : step.transfers) {
    if (t.kind == vgpu::TransferKind::kReduce && t.src != t.dst) ++reduced_pairs[{t.begin, t.end}];
  }
  const auto summed_by_all = [&](const vgpu::Transfer& t) {
    const auto found = reduced_pairs.find({t.begin, t.end});
    return n > 2 && found != reduced_pairs.end() && found->second == n * (n - 1);
  };
  for (const auto& [slice, pairs] : reduced_pairs) {
    if (n <= 2 || pairs != n * (n - 1)) continue;
    const float x = (g.at(slice.first) + g.at(slice.second)) / 2;
    const ImVec2 sum(x, (g.bar_y(0) + g.bar_y(n - 1) + g.row) / 2);
    for (int r = 0; r < n; ++r) {
      // Fanned out a little, so that the lines of rows above and below do not cover each other.
      const float y = g.bar_y(r) + g.row / 2;
      const float fan = (static_cast<float>(r) - static_cast<float>(n - 1) / 2) * 0.35f * line;
      draw->AddLine(ImVec2(x + fan, y), sum, replica_color(r), std::max(1.5f, 0.12f * line));
      draw->AddRect(ImVec2(g.at(slice.first), g.bar_y(r)),
                    ImVec2(g.at(slice.second), g.bar_y(r) + g.row), rgb(0xFFFFFF), 0, 0, 2.0f);
      ++arrows;
    }
    draw_plus(draw, sum, rgb(0xFFFFFF));
  }
  // A chunk one device sends to several (reduce-to-one's broadcast): from one place, its arrows
  // would lie on each other and read as a chain 0 -> 1 -> 2 -> 3.
  std::map<std::tuple<int, std::size_t, std::size_t>, int> sent_to;
  for (const vgpu::Transfer& t : step.transfers) {
    if (t.src != t.dst) ++sent_to[{t.src, t.begin, t.end}];
  }
  for (const vgpu::Transfer& t : step.transfers) {
    if (t.src < 0 || t.src >= n || t.dst < 0 || t.dst >= n || t.src == t.dst) continue;
    if (summed_by_all(t)) continue;
    const bool down = t.dst > t.src;
    // Several arrows may share a chunk: spread them by receiver where one device sends it to
    // several, else by sender (everyone sends the whole buffer to one device).
    const bool fanned_out = sent_to[{t.src, t.begin, t.end}] > 1;
    const float spread = g.width / static_cast<float>(g.count) *
                         static_cast<float>(t.end - t.begin) / static_cast<float>(n + 1);
    const float x = g.at(t.begin) + spread * static_cast<float>((fanned_out ? t.dst : t.src) + 1);
    places.insert(static_cast<int>(std::lround(x)));
    const ImVec2 from(x, down ? g.bar_y(t.src) + g.row : g.bar_y(t.src));
    const ImVec2 to(x, down ? g.bar_y(t.dst) : g.bar_y(t.dst) + g.row);
    const bool reduce = t.kind == vgpu::TransferKind::kReduce;
    const float bulge = (down ? 1.0f : -1.0f) * std::min(60.0f, 8.0f * std::abs(t.dst - t.src));
    draw_arrow(draw, from, to, bulge, replica_color(t.src), reduce);
    draw->AddRect(ImVec2(g.at(t.begin), g.bar_y(t.dst)),
                  ImVec2(g.at(t.end), g.bar_y(t.dst) + g.row), rgb(0xFFFFFF), 0, 0, 2.0f);
    ++arrows;
  }
  return arrows;
}

// What each device received and sent in the steps shown, in bytes: "/gpu:0 940,584" each; "" before
// the all-reduce's first step.
std::string bytes_text(const core::RecordedStep& record, int done) {
  if (done <= 0) return "";
  std::string received, sent;
  bool same = true;
  for (std::size_t r = 0; r < record.replicas.size(); ++r) {
    const int replica = static_cast<int>(r);
    const double in = core::all_reduce_bytes(record, replica, true, done).value_or(0);
    const double out = core::all_reduce_bytes(record, replica, false, done).value_or(0);
    same = same && in == out;
    const std::string device = (r == 0 ? "" : ", ") + record.replicas[r].device + " ";
    received += device + core::grouped_digits(std::to_string(std::llround(in)));
    sent += device + core::grouped_digits(std::to_string(std::llround(out)));
  }
  const std::string steps = done == 1 ? "In step 1" : "In steps 1 to " + std::to_string(done);
  return steps + ", bytes received: " + received +
         "; sent: " + (same ? "by each, as many as it received" : sent);
}

constexpr const char* kPictureKey =
    "Stripes: whose gradients a chunk holds. Thick arrow with +: added into the chunk; thin "
    "arrow: copied over it; lines meeting at a +: every buffer's slice read into one sum and "
    "the sum written back to each. Left/Right: step back/forward.";

constexpr const char* kKeyTitle = "What the stripes, arrows and + mean";

// The key to the picture and the recorded steps' time.
void draw_footer(const core::RecordedStep& record) {
  // One line until opened: the picture gets the panel's height (the lesson says what it shows).
  if (ImGui::CollapsingHeader(kKeyTitle)) {
    ImGui::PushTextWrapPos(0);
    text_wrapped_dim("%s", kPictureKey);
    ImGui::PopTextWrapPos();
  }
  if (record.collective_steps.empty()) return;
  // The steps' own times, summed: a step held between its steps (pausing at phases) waits
  // for the viewer, and that wait is no part of the all-reduce.
  double total = 0;
  for (const vgpu::CollectiveStep& st : record.collective_steps) {
    total += milliseconds(st.start, st.finish);
  }
  text_wrapped_dim("%zu of %d steps recorded: %.3f ms of work in all",
                   record.collective_steps.size(), record.all_reduce_steps, total);
}

}  // namespace

int AllReducePanel::draw_heading(FrameContext& frame, std::size_t count) {
  const core::RecordedStep& record = frame.run.step_record;
  const int n = static_cast<int>(record.replicas.size());
  const int total_steps = record.all_reduce_steps;
  const int recorded = static_cast<int>(record.collective_steps.size());
  const ShownMoment shown = shown_moment(frame);
  const int done = std::min(shown.progress.collective_steps, recorded);

  // Of several workers, worker 0's devices are the rows; the others' do the same on theirs.
  const std::size_t workers = frame.run.workers.size();
  const std::string whose = workers > 1
                                ? ", worker 0's devices (each of the " + std::to_string(workers) +
                                      " workers does the same on its own)"
                                : "";
  // Gradient packs: every pack's steps, numbered on (core/strategy/gradient_packs.h).
  const int packs = recorded > 0 ? record.collective_steps.front().packs : 1;
  const std::string in_packs = packs > 1 ? ", " + std::to_string(packs) + " packs of " +
                                               std::to_string(total_steps / packs) +
                                               " steps, the last layer's first"
                                         : "";
  const std::string steps = blank_if_asked(frame, "allreduce_steps", std::to_string(total_steps));
  text_wrapped("%s of %d x %s (%s floats) in %s step%s%s%s", record.all_reduce.c_str(), n,
               format_bytes(static_cast<double>(count) * sizeof(float)).c_str(),
               core::grouped_digits(std::to_string(count)).c_str(), steps.c_str(), plural_s(steps),
               in_packs.c_str(), whose.c_str());
  // The slider walks the all-reduce: 0 is before it, k after its k-th step.
  int wanted = done;
  ImGui::SetNextItemWidth(ImGui::GetContentRegionAvail().x * 0.45f);
  ImGui::BeginDisabled(recorded == 0 || !shown.progress.backward);
  if (ImGui::SliderInt("after step", &wanted, 0, std::max(recorded, 1)) && wanted != done) {
    const int moment = moment_after_all_reduce_step(record, std::min(wanted, recorded));
    if (moment >= 0) watch_moment(frame, moment);
  }
  ImGui::EndDisabled();
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip(
        "0: before the all-reduce; k: after its k-th step. Left/Right arrows step too.");

  if (!shown.progress.backward) {
    text_wrapped(
        "Step %lld is before its backward pass: there are no gradients to "
        "all-reduce yet.",
        static_cast<long long>(record.step + 1));
  } else if (done == 0) {
    text_wrapped("Before the all-reduce: each GPU holds only its own replica's gradient.");
  } else {
    const vgpu::CollectiveStep& step = record.collective_steps[static_cast<std::size_t>(done - 1)];
    const std::string pack = step.packs > 1 ? " (pack " + std::to_string(step.pack + 1) + " of " +
                                                  std::to_string(step.packs) + ")"
                                            : "";
    text_wrapped("Step %d of %d%s, %s (%.3f ms)", done, total_steps, pack.c_str(),
                 describe_step(step, n).c_str(), milliseconds(step.start, step.finish));
  }
  return done;
}

void AllReducePanel::replay(const FrameContext& frame, std::size_t count, int done) {
  // Replayed when the record or the step shown changes, not every frame.
  if (replayed_session_ == frame.run.session &&
      replayed_version_ == frame.run.step_record_version && replayed_steps_ == done) {
    return;
  }
  const core::RecordedStep& record = frame.run.step_record;
  const std::span<const vgpu::CollectiveStep> steps(record.collective_steps.data(),
                                                    static_cast<std::size_t>(done));
  // Of several workers, this is worker 0: the step across them brings the others' replicas in.
  contributions_ = vgpu::replay_contributions(
      static_cast<int>(record.replicas.size()), std::max<std::size_t>(count, 1), steps,
      every_workers_replicas(frame.run), vgpu::kAcrossWorkersPhase);
  replayed_session_ = frame.run.session;
  replayed_version_ = frame.run.step_record_version;
  replayed_steps_ = done;
}

void AllReducePanel::Draw(FrameContext& frame) {
  // A picture sized to its room: the model's says it fills it here, the run's in
  // has_recorded_step.
  bool model = !frame.view.modelled_allreduce.empty();
  // Each choice's words as long as the panel's width allows.
  const float room = ImGui::GetContentRegionAvail().x - ImGui::GetFrameHeight() -
                     ImGui::GetStyle().ItemInnerSpacing.x;
  const std::string run_choice =
      first_that_fits({"this run's all-reduce", "this run's"}, room) + "###run";
  const std::string model_choice =
      first_that_fits({"the model's, on a machine", "the model's"}, room) + "###model";
  if (ImGui::RadioButton(run_choice.c_str(), !model)) model = false;
  next_beside_if_fits(ImGui::CalcTextSize(model_choice.c_str(), nullptr, true).x +
                      ImGui::GetFrameHeight() + ImGui::GetStyle().ItemInnerSpacing.x);
  if (ImGui::RadioButton(model_choice.c_str(), model)) model = true;
  if (!model) {
    frame.view.modelled_allreduce.clear();
    draw_the_run(frame);
  } else {
    // The first the machine can play, unless one is chosen already.
    if (frame.view.modelled_allreduce.empty()) {
      frame.view.modelled_allreduce = modelled_algorithm_ids().front();
    }
    fills_room();  // gui/drawing/content_height.h
    model_view_.Draw(frame, name());
  }
}

void AllReducePanel::draw_the_run(FrameContext& frame) {
  const core::RecordedStep& record = frame.run.step_record;
  // While the step asks how the all-reduce goes (its steps, its bytes), no all-reduce's steps
  // already taken: lesson 6 step 3 asked the one-shot's steps beside the ring's "Step 6 of 6",
  // left by the step before. The buffers before an all-reduce (lesson 5 step 2's) tell nothing.
  if (asks_about(frame, "allreduce_") && shown_moment(frame).progress.collective_steps > 0 &&
      shows_the_lesson_asks(frame, "The all-reduce")) {
    return;
  }
  if (!has_recorded_step(frame, "The all-reduce")) return;
  const int n = static_cast<int>(record.replicas.size());
  if (n == 1) {
    text_wrapped(
        "One replica: its gradient is already the whole batch's, so there is "
        "nothing to all-reduce. Use 2 or more virtual GPUs.");
    frame.report.drew(name(), "buffers", 1);
    return;
  }
  if (record.packs_overlapped) {
    text_wrapped(
        "Step %lld: its packs were all-reduced while backward still ran, each on its device's "
        "communication lane (the Timeline's 'comm.' rows), so no moment of the step had every "
        "replica at one all-reduce step. Tick 'pause at every phase' in Controls to watch one "
        "pack after another here: a step held at its phases all-reduces them after backward.",
        static_cast<long long>(record.step + 1));
    frame.report.drew(name(), "buffers", 0);
    frame.report.drew(name(), "packs_overlapped", 1);
    return;
  }
  const std::size_t count = buffer_elements(record);
  const int done = draw_heading(frame, count);

  // The buffers, one row per device, and the shown step's transfers.
  replay(frame, count, done);
  ImDrawList* draw = ImGui::GetWindowDrawList();
  const float left = ImGui::GetCursorScreenPos().x, top = ImGui::GetCursorScreenPos().y;
  // What goes under the picture, measured first so that the picture leaves it room.
  const std::string bytes = bytes_text(record, done);
  const float width = ImGui::GetContentRegionAvail().x;
  const float spaced = ImGui::GetTextLineHeightWithSpacing();
  const float key = ImGui::GetStateStorage()->GetInt(ImGui::GetID(kKeyTitle), 0) != 0
                        ? ImGui::CalcTextSize(kPictureKey, nullptr, false, width).y
                        : 0.0f;
  // (An empty text measures a line: none is drawn. Nor is the footer's line before a step.)
  const float below =
      (bytes.empty() ? 0.0f : ImGui::CalcTextSize(bytes.c_str(), nullptr, false, width).y) + key +
      ImGui::GetFrameHeightWithSpacing() + (record.collective_steps.empty() ? 0.6f : 1.6f) * spaced;
  const Geometry g = plan_geometry(count, n, frame.view.font_scale, below);
  const int stripes = std::max(n, every_workers_replicas(frame.run));
  const int chunks = draw_buffers(draw, record, contributions_, g, left, stripes);
  std::set<int> arrow_places;
  const int arrows =
      done > 0 ? draw_transfers(draw, record.collective_steps[static_cast<std::size_t>(done - 1)],
                                g, n, arrow_places)
               : 0;
  frame.report.drew(name(), "arrow_places", static_cast<double>(arrow_places.size()));
  ImGui::Dummy(ImVec2(g.x + g.width - left, g.bar_y(n) - top));
  const float picture_end = content_height();
  if (!bytes.empty()) text_wrapped("%s", bytes.c_str());
  draw_footer(record);
  if (g.largest) {
    // More room would be empty below the picture: the panel uses what it drew, and the room
    // plan_geometry() keeps below the picture, so that given just that it stays at its largest.
    fills_room_up_to(content_height() + std::max(0.0f, below - (content_height() - picture_end)));
  }
  frame.report.drew(name(), "buffers", n);
  frame.report.drew(name(), "chunks", chunks);
  frame.report.drew(name(), "arrows", arrows);
  frame.report.drew(name(), "step_shown", done);
}

}  // namespace mirrorlab::gui
