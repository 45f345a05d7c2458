// A machine of the timing model drawn as its GPUs and the links between them, with one step's
// loads (timing::StepEstimate) on them: each link direction that carries bytes in the step is
// drawn thick and labelled with its bytes, the step's busiest resource in vermilion. One node:
// the GPUs in a row above their switch, host or shared memory, bridged pairs joined by arcs above.
// Two nodes: node 0 above the network, node 1 below it, each with its own switch or host. More
// nodes: a band each, the network's bytes written under each GPU.
#pragma once

#include "timing/topology.h"

namespace mirrorlab::gui {

struct PictureCounts {
  int gpus = 0;
  int loaded_links = 0;  // link directions (or engines, in one memory) carrying bytes
};

// Draws at the cursor, `width` x `height` pixels, and moves the cursor below. `step`: nullptr
// for none (before the all-reduce: every link idle).
PictureCounts draw_topology_picture(const timing::Topology& machine,
                                    const timing::StepEstimate* step, float width, float height);

// The seconds of the step's busiest resource, and whether `load` is one of those that take them
// (several often tie: every port of a ring's step carries the same bytes).
double busiest_seconds(const timing::StepEstimate& step);
bool is_one_of_the_busiest(const timing::LinkLoad& load, double busiest_seconds);

// The height the picture wants at the current font for `machine`.
float topology_picture_height(const timing::Topology& machine);

}  // namespace mirrorlab::gui
