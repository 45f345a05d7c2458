#include "gui/drawing/topology_picture.h"

#include <algorithm>
#include <map>
#include <string>
#include <utility>

#include "gui/drawing/chart.h"
#include "gui/drawing/colors.h"
#include "imgui.h"

namespace mirrorlab::gui {
namespace {

constexpr std::uint32_t kBusiestRgb = 0xD55E00;  // Okabe-Ito vermilion: the step's bottleneck
constexpr std::uint32_t kIdleRgb = 0x4A4A55, kCarryingRgb = 0xD8D8D8, kHubRgb = 0x2E3A4A;
constexpr std::uint32_t kLabelRgb = 0xE8E8E8;

// The step's loads, found by where they are.
struct StepLoads {
  std::map<std::pair<int, int>, const timing::LinkLoad*> links;  // by (from, to)
  std::map<int, const timing::LinkLoad*> engines;                // by rank
  const timing::LinkLoad* memory = nullptr;
  double slowest = 0;     // the busiest resource's seconds (several may tie)
  double most_bytes = 0;  // of any link or engine, for the lines' thickness

  explicit StepLoads(const timing::StepEstimate* step) {
    if (step == nullptr) return;
    slowest = busiest_seconds(*step);
    for (const timing::LinkLoad& l : step->loads) {
      switch (l.kind) {
        case timing::ResourceKind::kLink:
          links[{l.from, l.to}] = &l;
          break;
        case timing::ResourceKind::kEngine:
          engines[l.from] = &l;
          break;
        case timing::ResourceKind::kMemory:
          memory = &l;
          continue;
      }
      most_bytes = std::max(most_bytes, l.bytes);
    }
  }
  const timing::LinkLoad* link(int from, int to) const {
    const auto it = links.find({from, to});
    return it == links.end() ? nullptr : it->second;
  }
  bool is_busiest(const timing::LinkLoad* l) const {
    return l != nullptr && is_one_of_the_busiest(*l, slowest);
  }
};

struct Painter {
  ImDrawList* draw;
  const StepLoads& loads;
  float line;   // the text's height
  bool labels;  // room to write each link's bytes beside it (else the table and tooltips say)
  int loaded = 0;

  float thickness(const timing::LinkLoad* l) const {
    if (l == nullptr || l->bytes <= 0 || loads.most_bytes <= 0) return 1.5f;
    return 2.0f + 4.0f * static_cast<float>(l->bytes / loads.most_bytes);
  }
  std::uint32_t color(const timing::LinkLoad* l) const {
    if (l == nullptr || l->bytes <= 0) return rgb(kIdleRgb);
    return rgb(loads.is_busiest(l) ? kBusiestRgb : kCarryingRgb);
  }
  // One direction from a to b (vertical or horizontal), its head at b.
  void direction(ImVec2 a, ImVec2 b, const timing::LinkLoad* l) {
    const std::uint32_t c = color(l);
    const float t = thickness(l), head = line * 0.35f;
    const float dx = b.x > a.x ? 1.0f : b.x < a.x ? -1.0f : 0.0f;
    const float dy = b.y > a.y ? 1.0f : b.y < a.y ? -1.0f : 0.0f;
    draw->AddLine(a, ImVec2(b.x - dx * head, b.y - dy * head), c, t);
    draw->AddTriangleFilled(
        b, ImVec2(b.x - dx * head * 1.6f - dy * head, b.y - dy * head * 1.6f - dx * head),
        ImVec2(b.x - dx * head * 1.6f + dy * head, b.y - dy * head * 1.6f + dx * head), c);
    if (l != nullptr && l->bytes > 0) ++loaded;
  }
  void label(ImVec2 at, const std::string& text, bool busiest) {
    if (!labels) return;
    draw_label(draw, at, rgb(busiest ? kBusiestRgb : kLabelRgb), text.c_str());
  }
  // A GPU's link to a bar (switch, host, network) at vertical distance: `out` leaves the GPU,
  // `in` arrives; their bytes to the right of the lines.
  void vertical_link(float x, float gpu_y, float bar_y, const timing::LinkLoad* out,
                     const timing::LinkLoad* in) {
    const float d = line * 0.3f;
    direction(ImVec2(x - d, gpu_y), ImVec2(x - d, bar_y), out);
    direction(ImVec2(x + d, bar_y), ImVec2(x + d, gpu_y), in);
    const double out_bytes = out ? out->bytes : 0, in_bytes = in ? in->bytes : 0;
    const float lx = x + d + line * 0.4f, mid = (gpu_y + bar_y) / 2 - line / 2;
    if (out_bytes > 0 && out_bytes == in_bytes) {
      label(ImVec2(lx, mid - line * 0.5f), format_bytes(out_bytes), loads.is_busiest(out));
      label(ImVec2(lx, mid + line * 0.5f), "each way", loads.is_busiest(in));
      return;
    }
    if (out_bytes > 0) {
      label(ImVec2(lx, mid - line * 0.5f), "out " + format_bytes(out_bytes), loads.is_busiest(out));
    }
    if (in_bytes > 0) {
      label(ImVec2(lx, mid + line * 0.5f), "in " + format_bytes(in_bytes), loads.is_busiest(in));
    }
  }
};

const char* hub_name(const timing::Topology& t) {
  switch (t.fabric) {
    case timing::Fabric::kSwitch:
      return "switch";
    case timing::Fabric::kPairs:
    case timing::Fabric::kHost:
      return "host (PCIe)";
    case timing::Fabric::kSharedMemory:
      return "one memory";
  }
  return "";
}

// The hub a GPU's link goes to in its node (links of kind link), or -1 in one shared memory.
int hub_end(const timing::Topology& t) {
  switch (t.fabric) {
    case timing::Fabric::kSwitch:
      return timing::kSwitch;
    case timing::Fabric::kPairs:
    case timing::Fabric::kHost:
      return timing::kHost;
    case timing::Fabric::kSharedMemory:
      return -1;
  }
  return -1;
}

// A GPU's name and what the step loads on its links and engine.
std::string gpu_tooltip(const timing::Topology& t, int rank, const timing::StepEstimate* step) {
  std::string text = t.gpu_name(rank);
  if (step == nullptr) return text;
  for (const timing::LinkLoad& l : step->loads) {
    if (l.kind == timing::ResourceKind::kMemory || (l.from != rank && l.to != rank)) continue;
    text.append("\n").append(l.resource).append(": ").append(format_bytes(l.bytes));
    text.append(l.kind == timing::ResourceKind::kEngine ? " read+written, " : ", ");
    text.append(format_seconds(l.seconds));
  }
  return text;
}

struct Layout {
  float box_h = 0, bar_h = 0, link = 0, bridge = 0;
};

Layout layout_of(const timing::Topology& t) {
  const float line = ImGui::GetTextLineHeight();
  Layout l;
  l.box_h = line * 1.7f;
  l.bar_h = line * 1.5f;
  l.link = line * 3.0f;
  l.bridge = t.fabric == timing::Fabric::kPairs ? line * 2.6f : 0;
  return l;
}

}  // namespace

double busiest_seconds(const timing::StepEstimate& step) {
  double most = 0;
  for (const timing::LinkLoad& l : step.loads) most = std::max(most, l.seconds);
  return most;
}

bool is_one_of_the_busiest(const timing::LinkLoad& load, double busiest) {
  return busiest > 0 && load.seconds >= busiest * (1 - 1e-9);
}

float topology_picture_height(const timing::Topology& t) {
  const Layout l = layout_of(t);
  if (t.nodes == 1) return l.bridge + l.box_h + l.link + l.bar_h + l.box_h * 0.3f;
  if (t.nodes == 2) return 3 * l.bar_h + 2 * l.box_h + 4 * l.link + l.box_h * 0.3f;
  return static_cast<float>(t.nodes) * (l.bridge + 2 * l.box_h + l.link + l.bar_h);
}

namespace {

// One picture being drawn: the topology, the step's loads, and where everything goes.
class Picture {
 public:
  Picture(const timing::Topology& t, const timing::StepEstimate* step, float width)
      : t(t),
        step(step),
        loads(step),
        draw(ImGui::GetWindowDrawList()),
        line(ImGui::GetTextLineHeight()),
        l(layout_of(t)),
        origin(ImGui::GetCursorScreenPos()),
        per_node(t.gpus_per_node),
        left(origin.x + (t.nodes > 1 ? ImGui::CalcTextSize("node 0 ").x : 0)),
        // The last GPU's labels need room right of its links.
        slot((width - (left - origin.x) - ImGui::CalcTextSize("out 000 MiB").x * 0.75f) /
             static_cast<float>(std::max(per_node, 1))),
        box_w(std::min(slot * 0.62f, line * 6)),
        paint{draw, loads, line, slot >= ImGui::CalcTextSize("out 000 MiB").x + line},
        // Narrow boxes show the GPU's number alone.
        long_names(box_w >= ImGui::CalcTextSize("/gpu:00").x),
        hub(hub_end(t)) {}

  // One node: its GPUs (with bridges above them) over their hub.
  void one_node() {
    float y = origin.y;
    const float gpu_y = y + l.bridge;
    gpus(0, gpu_y);
    bridges(0, gpu_y, -1);
    const float bar_y = gpu_y + l.box_h + l.link;
    links_to(0, gpu_y + l.box_h, bar_y, hub);
    bar(bar_y, hub_text(), memory_busiest());
  }
  // Two nodes: node 0's hub at the top, the network in the middle, node 1's hub at the bottom.
  void two_nodes() {
    float y = origin.y;
    bar(y, std::string("node 0 ") + hub_name(t), false);
    const float gpu0 = y + l.bar_h + l.link;
    links_to(0, gpu0, y + l.bar_h, hub);
    gpus(0, gpu0);
    const float net = gpu0 + l.box_h + l.link;
    links_to(0, gpu0 + l.box_h, net, timing::kNetwork);
    bar(net, "network (an adapter per GPU)", false);
    const float gpu1 = net + l.bar_h + l.link;
    links_to(1, gpu1, net + l.bar_h, timing::kNetwork);
    gpus(1, gpu1);
    const float hub1 = gpu1 + l.box_h + l.link;
    links_to(1, gpu1 + l.box_h, hub1, hub);
    bar(hub1, std::string("node 1 ") + hub_name(t), false);
    bridges(1, gpu1, -1);
  }
  // More nodes: a band per node; the network's bytes written under each GPU.
  void many_nodes() {
    float y = origin.y;
    for (int node = 0; node < t.nodes; ++node) {
      const float gpu_y = y + l.bridge;
      gpus(node, gpu_y);
      bridges(node, gpu_y, -1);
      for (int g = 0; g < per_node; ++g) {
        const int rank = node * per_node + g;
        const timing::LinkLoad* out = loads.link(rank, timing::kNetwork);
        const timing::LinkLoad* in = loads.link(timing::kNetwork, rank);
        std::string text;
        if (out != nullptr) text += "net out " + format_bytes(out->bytes);
        if (in != nullptr)
          text += std::string(text.empty() ? "" : ", ") + "net in " + format_bytes(in->bytes);
        if (!text.empty()) {
          ++paint.loaded;
          paint.label(ImVec2(centre(g) - box_w / 2, gpu_y + l.box_h), text,
                      loads.is_busiest(out) || loads.is_busiest(in));
        }
      }
      const float bar_y = gpu_y + 2 * l.box_h + l.link;
      links_to(node, gpu_y + l.box_h * 2, bar_y, hub);
      bar(bar_y, "node " + std::to_string(node) + " " + hub_name(t), false);
      y = bar_y + l.bar_h + l.box_h * 0.5f;
    }
  }
  PictureCounts counts() const {
    PictureCounts c = counts_;
    c.loaded_links = paint.loaded;
    return c;
  }

 private:
  float centre(int g) const { return left + slot * (static_cast<float>(g) + 0.5f); }

  // A bar across the node's GPUs (switch, host, memory, network), with its name and load.
  void bar(float y, const std::string& text, bool busiest) {
    const ImVec2 a(centre(0) - box_w / 2, y), b(centre(per_node - 1) + box_w / 2, y + l.bar_h);
    draw->AddRectFilled(a, b, rgb(kHubRgb), 4);
    if (busiest) draw->AddRect(a, b, rgb(kBusiestRgb), 4, 0, 3);
    draw_label(draw, ImVec2(a.x + line * 0.5f, y + (l.bar_h - line) / 2),
               rgb(busiest ? kBusiestRgb : kLabelRgb), text.c_str());
  }
  // A row of GPU boxes of `node` at y, counted.
  void gpus(int node, float y) {
    if (t.nodes > 1) {
      draw_label(draw, ImVec2(origin.x, y + (l.box_h - line) / 2), rgb(0xA0A0A8),
                 ("node " + std::to_string(node)).c_str());
    }
    for (int g = 0; g < per_node; ++g) {
      const int rank = node * per_node + g;
      const ImVec2 a(centre(g) - box_w / 2, y), b(centre(g) + box_w / 2, y + l.box_h);
      const auto engine = loads.engines.find(rank);
      const bool busiest = engine != loads.engines.end() && loads.is_busiest(engine->second);
      draw->AddRectFilled(a, b, rgb(0x24242C), 4);
      draw->AddRect(a, b, busiest ? rgb(kBusiestRgb) : replica_color(rank), 4, 0,
                    busiest ? 3.0f : 2.0f);
      const std::string name = (long_names ? "/gpu:" : "") + std::to_string(g);
      const float w = ImGui::CalcTextSize(name.c_str()).x;
      draw_label(draw, ImVec2(centre(g) - w / 2, y + (l.box_h - line) / 2), rgb(kLabelRgb),
                 name.c_str());
      if (ImGui::IsMouseHoveringRect(a, b)) {
        ImGui::SetTooltip("%s", gpu_tooltip(t, rank, step).c_str());
      }
      ++counts_.gpus;
    }
  }
  // Bridges between GPUs 2k and 2k+1 of the node, as brackets on the side away from its host.
  void bridges(int node, float box_edge, float dir) {
    if (t.fabric != timing::Fabric::kPairs) return;
    for (int g = 0; g + 1 < per_node; g += 2) {
      const int a = node * per_node + g, b = a + 1;
      const float x0 = centre(g), x1 = centre(g + 1);
      for (int k = 0; k < 2; ++k) {  // outer: a to b; inner: b to a
        const timing::LinkLoad* load = k == 0 ? loads.link(a, b) : loads.link(b, a);
        const float reach = box_edge + dir * (k == 0 ? l.bridge * 0.55f : l.bridge * 0.3f);
        const float inset = k == 0 ? 0 : line * 0.6f;
        const std::uint32_t c = paint.color(load);
        const float th = paint.thickness(load);
        const ImVec2 from(k == 0 ? x0 + inset : x1 - inset, box_edge);
        const ImVec2 to(k == 0 ? x1 - inset : x0 + inset, box_edge);
        draw->AddLine(from, ImVec2(from.x, reach), c, th);
        draw->AddLine(ImVec2(from.x, reach), ImVec2(to.x, reach), c, th);
        paint.direction(ImVec2(to.x, reach), to, load);
      }
      const timing::LinkLoad* ab = loads.link(a, b);
      const timing::LinkLoad* ba = loads.link(b, a);
      // Appended piece by piece: GCC 12 warns (wrongly) on " " + string.
      std::string text = "bridge";
      if (ab && ba && ab->bytes == ba->bytes) {
        text.append(" ").append(format_bytes(ab->bytes)).append(" each way");
      } else {
        if (ab)
          text.append(" ")
              .append(format_bytes(ab->bytes))
              .append(" to /gpu:" + std::to_string(g + 1));
        if (ab && ba) text.append(",");
        if (ba)
          text.append(" ").append(format_bytes(ba->bytes)).append(" to /gpu:" + std::to_string(g));
      }
      const float ty = box_edge + dir * (l.bridge * 0.55f) + (dir < 0 ? -line * 1.1f : line * 0.1f);
      paint.label(ImVec2(x0 + line * 0.2f, ty), text,
                  paint.loads.is_busiest(ab) || paint.loads.is_busiest(ba));
    }
  }
  // Each GPU's link to a bar (its hub, or the network) between y_gpu (its box's edge) and y_bar.
  void links_to(int node, float y_gpu, float y_bar, int end) {
    for (int g = 0; g < per_node; ++g) {
      const int rank = node * per_node + g;
      if (t.fabric == timing::Fabric::kSharedMemory && end != timing::kNetwork) {
        // One memory: the engine's bytes read and written, on the line to the memory.
        const auto engine = loads.engines.find(rank);
        const timing::LinkLoad* e = engine == loads.engines.end() ? nullptr : engine->second;
        const float x = centre(g);
        const std::uint32_t c = paint.color(e);
        draw->AddLine(ImVec2(x, y_gpu), ImVec2(x, y_bar), c, paint.thickness(e));
        if (e != nullptr && e->bytes > 0) {
          ++paint.loaded;
          paint.label(ImVec2(x + line * 0.4f, (y_gpu + y_bar) / 2 - line), format_bytes(e->bytes),
                      loads.is_busiest(e));
          paint.label(ImVec2(x + line * 0.4f, (y_gpu + y_bar) / 2), "read+written",
                      loads.is_busiest(e));
        }
        continue;
      }
      paint.vertical_link(centre(g), y_gpu, y_bar, loads.link(rank, end), loads.link(end, rank));
    }
  }
  std::string hub_text() const {
    std::string text = hub_name(t);
    if (loads.memory != nullptr) text += ": " + format_bytes(loads.memory->bytes) + " read+written";
    return text;
  }
  bool memory_busiest() const { return loads.memory != nullptr && loads.is_busiest(loads.memory); }

  const timing::Topology& t;
  const timing::StepEstimate* step;
  const StepLoads loads;
  ImDrawList* draw;
  const float line;
  const Layout l;
  const ImVec2 origin;
  const int per_node;
  const float left, slot, box_w;
  Painter paint;
  const bool long_names;
  const int hub;
  PictureCounts counts_;
};

}  // namespace

PictureCounts draw_topology_picture(const timing::Topology& t, const timing::StepEstimate* step,
                                    float width, float height) {
  Picture picture(t, step, width);
  if (t.nodes == 1) {
    picture.one_node();
  } else if (t.nodes == 2) {
    picture.two_nodes();
  } else {
    picture.many_nodes();
  }
  ImGui::Dummy(ImVec2(width, height));
  return picture.counts();
}

}  // namespace mirrorlab::gui
