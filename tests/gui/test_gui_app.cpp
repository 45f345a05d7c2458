// `mirrorlab gui` as a user (or CI) runs it, under Xvfb: a scripted run trains a few steps,
// measures the algorithms, draws every panel, writes a screenshot and a report; the test checks
// the report (each panel drew what it should) and the pixels (not blank, the replica and
// phase colours present). Skips with the reason when Xvfb or the data set is missing.
#include <gtest/gtest.h>
#include <stb_image.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <tuple>

#include "nlohmann/json.hpp"
#include "tests/gui/gui_app_support.h"

namespace {

using namespace mirrorlab::testing::gui_app;  // NOLINT: the tests' shared vocabulary
namespace fs = std::filesystem;

// Ctrl-C in the terminal closes the window as if the user had, and the status says why.
TEST_F(GuiApp, CtrlCClosesTheWindowWithStatus130) {
  const Result r =
      shell(kHeadless + " 1280x800 sh -c '" + kMirrorlab +
            " gui --model mlp --train-examples 2048 --run & p=$!; sleep 4; kill -INT $p; "
            "for i in $(seq 40); do kill -0 $p 2>/dev/null || break; sleep 0.5; done; "
            "kill -KILL $p 2>/dev/null; wait $p; echo exit=$?'");
  EXPECT_NE(r.output.find("Window closed by SIGINT (Ctrl-C)."), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("exit=130"), std::string::npos) << r.output;
}

// A screenshot that cannot be written whole (a full disk, here a file size limit) leaves no
// half PNG, says why and fails the scripted run.
TEST_F(GuiApp, AScreenshotOverAFullDiskLeavesNoFileAndExits1) {
  const std::string png = path("shot.png");
  const Result r =
      shell("sh -c \"trap '' XFSZ; ulimit -f 64; exec " + kHeadless + " 1280x800 " + kMirrorlab +
            " gui --model mlp --train-examples 512 --steps 1 "
            "--frames 2 --screenshot " +
            png + "\"");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("write failed: File too large"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("Screenshot written"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(png));
}

struct Image {
  int width = 0, height = 0;
  std::unique_ptr<unsigned char, void (*)(void*)> pixels{nullptr, stbi_image_free};
  std::set<std::uint32_t> colors() const {
    std::set<std::uint32_t> set;
    for (int i = 0; i < width * height; ++i) {
      const unsigned char* p = pixels.get() + 3 * i;
      set.insert((std::uint32_t{p[0]} << 16) | (std::uint32_t{p[1]} << 8) | p[2]);
    }
    return set;
  }
};

Image load_png(const std::string& path) {
  Image image;
  int channels = 0;
  image.pixels.reset(stbi_load(path.c_str(), &image.width, &image.height, &channels, 3));
  return image;
}

// A screenshot is the picture its name asks for: a JPEG for .jpg, a PNG for .png; another ending
// is refused before the window opens (it was written as a PNG whatever the name said).
TEST_F(GuiApp, AScreenshotIsAPngOrAJpegByItsName) {
  const std::string on_800 = kHeadless + " 1280x800 " + kMirrorlab + " gui --frames 2 ";
  const Result jpeg = shell(on_800 + "--screenshot " + path("shot.JPG"));
  ASSERT_EQ(jpeg.status, 0) << jpeg.output;
  std::ifstream in(path("shot.JPG"), std::ios::binary);
  std::string magic(3, '\0');
  in.read(magic.data(), 3);
  EXPECT_EQ(magic, "\xFF\xD8\xFF") << "not a JPEG";
  const Image image = load_png(path("shot.JPG"));  // stb reads either
  ASSERT_TRUE(image.pixels);
  EXPECT_EQ(image.width, 1280);
  EXPECT_GT(image.colors().size(), 50U) << "a blank picture";
  const Result gif = shell(on_800 + "--screenshot " + path("shot.gif"));
  EXPECT_EQ(gif.status, 2) << gif.output;
  EXPECT_NE(gif.output.find("shot.gif: mirrorlab saves pictures as PNG or JPEG: end the name in "
                            ".png or .jpg"),
            std::string::npos)
      << gif.output;
  EXPECT_FALSE(fs::exists(path("shot.gif")));
}

TEST_F(GuiApp, ScriptedRunTrainsMeasuresAndDrawsEveryPanel) {
  const Result r = gui_with_fit(kSavedFit,
                                "--gpus 2 --train-examples 2048 --steps 6 --compare --frames 3 "
                                "--screenshot " +
                                    path("all.png") + " --report " + path("all.json"));
  ASSERT_EQ(r.status, 0) << r.output;
  const auto report = read_json(path("all.json"));
  EXPECT_EQ(report["notes"]["steps_done"], 6.0) << report.dump(1);
  EXPECT_EQ(report["notes"]["session_failed"], 0.0);
  const auto& panels = report["panels"];
  for (const char* name : {"Controls", "Devices", "Batch split", "Gradients", "All-reduce",
                           "Timeline", "Training", "Compare"}) {
    ASSERT_TRUE(panels.contains(name)) << name << " never drew: " << report.dump(1);
    EXPECT_GE(panels[name]["frames"].get<int>(), 3) << name;
  }
  EXPECT_EQ(panels["Devices"]["cards"], 2.0);
  // The last step's batch: 64 per replica, every image drawn, split in two even halves.
  EXPECT_EQ(panels["Batch split"]["thumbnails"], 128.0);
  EXPECT_EQ(panels["Batch split"]["replicas"], 2.0);
  EXPECT_EQ(panels["Batch split"]["uneven"], 0.0);
  // The whole step: the chosen layer before (2) and after (2) the all-reduce; the replicas'
  // gradients differ before and are identical after; the weights are in sync.
  EXPECT_EQ(panels["Gradients"]["heatmaps"], 4.0);
  EXPECT_EQ(panels["Gradients"]["differ_before"], 1.0);
  EXPECT_EQ(panels["Gradients"]["identical_after"], 1.0);
  EXPECT_EQ(panels["Gradients"]["replicas_in_sync"], 1.0);
  EXPECT_GT(panels["Gradients"]["norm_bars"].get<double>(), 0.0);
  // The ring (auto on CPU virtual GPUs, as TensorFlow 2.21 chooses) has 2 steps on 2 replicas;
  // shown after the last, the all-gather: each replica passes its chunk to the other.
  EXPECT_EQ(panels["All-reduce"]["buffers"], 2.0);
  EXPECT_EQ(panels["All-reduce"]["step_shown"], 2.0);
  EXPECT_EQ(panels["All-reduce"]["arrows"], 2.0);
  EXPECT_EQ(panels["Timeline"]["lanes"], 2.0);
  EXPECT_GT(panels["Timeline"]["spans"].get<double>() + panels["Timeline"]["folds"].get<double>(),
            0.0);
  EXPECT_EQ(panels["Training"]["points"], 6.0);
  EXPECT_GT(panels["Training"]["images_per_second"].get<double>(), 0.0);
  // reduce-to-one, ring and one-shot: step and all-reduce, each beside the fit's prediction; NCCL,
  // which cannot run on CPU virtual GPUs, predicted on the chosen machine (dgx-h100); the sweep's
  // sizes with the model's line of each algorithm.
  EXPECT_EQ(panels["Compare"]["bars"], 6.0);
  EXPECT_EQ(panels["Compare"]["bars_predicted"], 3.0);
  EXPECT_EQ(panels["Compare"]["nccl_predicted"], 1.0);
  EXPECT_EQ(panels["Compare"]["fit_missing"], 0.0);
  EXPECT_GT(panels["Compare"]["sweep_points"].get<double>(), 0.0);
  EXPECT_EQ(panels["Compare"]["sweep_model_lines"], 3.0);

  const Image image = load_png(path("all.png"));
  ASSERT_TRUE(image.pixels) << "no PNG written";
  EXPECT_EQ(image.width, 1600);
  EXPECT_EQ(image.height, 1000);
  const auto colors = image.colors();
  EXPECT_GT(colors.size(), 100u) << "the screenshot is (nearly) blank";
  EXPECT_TRUE(colors.count(0xE69F00)) << "replica 0's Okabe-Ito orange is missing";
  EXPECT_TRUE(colors.count(0x56B4E9)) << "replica 1's Okabe-Ito sky blue is missing";
  EXPECT_TRUE(colors.count(0xEE6677)) << "the timeline's all-reduce spans are missing";
}

// Without --width or --height the window is 1600x1000 at most the screen's work area: a 1280x720
// projector shows it whole (it opened 1600x1000, a fifth of it off the screen), and a lesson at
// font 1.5 there opens in the presenter layout. A size asked for is the size given.
TEST_F(GuiApp, TheWindowFitsASmallerScreenUnlessASizeIsAsked) {
  const std::string on_720 = kHeadless + " 1280x720 " + kMirrorlab + " gui --frames 3 ";
  const Result fitted = shell(on_720 + "--lesson 1 --font-scale 1.5 --screenshot " +
                              path("fitted.png") + " --report " + path("fitted.json"));
  ASSERT_EQ(fitted.status, 0) << fitted.output;
  const Image small = load_png(path("fitted.png"));
  ASSERT_TRUE(small.pixels) << fitted.output;
  EXPECT_EQ(small.width, 1280);
  EXPECT_EQ(small.height, 720);
  EXPECT_EQ(read_json(path("fitted.json"))["notes"]["presenter_layout"], 1.0);
  for (const auto& [flags, width, height] : std::vector<std::tuple<std::string, int, int>>{
           {"--width 1000 --height 600", 1000, 600}, {"--width 1600 --height 1000", 1600, 1000}}) {
    const Result asked = shell(on_720 + flags + " --screenshot " + path("asked.png"));
    ASSERT_EQ(asked.status, 0) << asked.output;
    const Image image = load_png(path("asked.png"));
    ASSERT_TRUE(image.pixels) << asked.output;
    EXPECT_EQ(image.width, width) << flags;
    EXPECT_EQ(image.height, height) << flags;
  }
}

TEST_F(GuiApp, EachPanelCanFillTheWindowAlone) {
  for (const char* panel :
       {"Devices", "Batch split", "Gradients", "All-reduce", "Timeline", "Training", "Compare"}) {
    const Result r =
        gui(std::string("--train-examples 1024 --steps 2 --frames 2 --panel '") + panel +
            "' --report " + path("one.json") + " --screenshot " + path("one.png"));
    ASSERT_EQ(r.status, 0) << panel << ": " << r.output;
    const auto drawn = read_json(path("one.json"))["panels"];
    EXPECT_TRUE(drawn.contains(panel)) << panel;
    EXPECT_EQ(drawn.size(), 2u) << panel << " and the controls only: " << drawn.dump();
    EXPECT_GT(load_png(path("one.png")).colors().size(), 50u) << panel;
  }
}

TEST_F(GuiApp, WalksIntoAStepPhaseByPhaseAndHoldsIt) {
  // split, forward, backward, then the first all-reduce step: held there at the end.
  const Result r =
      gui("--train-examples 1024 --steps 1 --phases 4 --allreduce reduce-to-one --frames 2 "
          "--report " +
          path("phases.json"));
  ASSERT_EQ(r.status, 0) << r.output;
  const auto report = read_json(path("phases.json"));
  EXPECT_EQ(report["notes"]["held_within_step"], 1.0) << report.dump(1);
  EXPECT_EQ(report["notes"]["steps_done"], 1.0);  // the held step is not done
  EXPECT_EQ(report["panels"]["Controls"]["moments"], 4.0);
  EXPECT_EQ(report["panels"]["Controls"]["faults_enabled"], 1.0);
  // Held after the reduce, the first of reduce-to-one's two steps: one arrow (gpu:1 into
  // gpu:0); the gradients exist but are not all-reduced yet.
  const auto& panels = report["panels"];
  EXPECT_EQ(panels["All-reduce"]["step_shown"], 1.0) << report.dump(1);
  EXPECT_EQ(panels["All-reduce"]["arrows"], 1.0);
  EXPECT_EQ(panels["Gradients"]["heatmaps"], 2.0);
  EXPECT_EQ(panels["Gradients"]["identical_after"], 0.0);
  EXPECT_EQ(panels["Gradients"]["differ_before"], 1.0);
}

// Reduce-to-one on 4 GPUs: the reduce's three arrows into /gpu:0, then the broadcast's three out
// of it, each at a place of its own. The broadcast's had left one place and lay on each other,
// reading as a chain 0 -> 1 -> 2 -> 3 (the ring's pattern).
TEST_F(GuiApp, EachArrowOfAReduceOrABroadcastHasItsOwnPlace) {
  for (const int phases : {4, 5}) {
    const Result r = gui("--gpus 4 --allreduce reduce-to-one --model mlp --train-examples 1024 " +
                         std::string("--phases ") + std::to_string(phases) +
                         " --frames 2 --report " + path("r1.json"));
    ASSERT_EQ(r.status, 0) << r.output;
    const auto panel = read_json(path("r1.json"))["panels"]["All-reduce"];
    EXPECT_EQ(panel["step_shown"], phases - 3.0) << panel.dump(1);
    EXPECT_EQ(panel["arrows"], 3.0) << panel.dump(1);
    EXPECT_EQ(panel["arrow_places"], 3.0) << panel.dump(1);
  }
}

TEST_F(GuiApp, StepsThroughARingAllReduceOnFourGpus) {
  // split, forward, backward and two of the ring's six steps (reduce-scatter): held there, the
  // All-reduce panel draws the second step's four transfers, one per GPU to its neighbour.
  const Result r =
      gui("--gpus 4 --allreduce ring --model mlp --train-examples 1024 --phases 5 "
          "--frames 2 --report " +
          path("ring.json") + " --screenshot " + path("ring.png"));
  ASSERT_EQ(r.status, 0) << r.output;
  const auto report = read_json(path("ring.json"));
  const auto& panels = report["panels"];
  EXPECT_EQ(report["notes"]["held_within_step"], 1.0) << report.dump(1);
  EXPECT_EQ(panels["All-reduce"]["buffers"], 4.0);
  EXPECT_EQ(panels["All-reduce"]["step_shown"], 2.0);
  EXPECT_EQ(panels["All-reduce"]["arrows"], 4.0);
  // After two reduce-scatter steps each buffer is cut into 4 chunks: 16 in all.
  EXPECT_EQ(panels["All-reduce"]["chunks"], 16.0);
  EXPECT_EQ(panels["Devices"].value("rows", 0.0), 4.0) << "4 narrow cards are listed as rows";
  const auto colors = load_png(path("ring.png")).colors();
  for (std::uint32_t c : {0xE69F00u, 0x56B4E9u, 0x009E73u, 0xF0E442u}) {
    EXPECT_TRUE(colors.count(c)) << std::hex << "replica colour " << c << " missing";
  }
}

// A panel's logged words with one space between words (the log keeps the spaces the wrapped
// words were placed with).
std::string one_space(std::string words) {
  words.erase(
      std::unique(words.begin(), words.end(), [](char a, char b) { return a == ' ' && b == ' '; }),
      words.end());
  return words;
}

// Settings no run can be made of (NCCL on CPU-backed devices) are said at the top of the
// Controls, under a "not started" badge, before anything that could push them below the fold
// (lesson 7 asks about that sentence with the Controls framed).
TEST_F(GuiApp, ARunThatCannotStartSaysWhyAtTheTopOfTheControls) {
  const Result r =
      gui("--gpus 2 --allreduce nccl --model mlp --train-examples 256 --frames 2 "
          "--report " +
          path("refused.json"));
  const auto report = read_json(path("refused.json"));
  const std::string words = one_space(report["words"].value("Controls", ""));
  const std::size_t why = words.find("Cannot start this run");
  ASSERT_NE(why, std::string::npos) << r.output << words;
  EXPECT_LT(why, words.find("Inside a step")) << words;
  EXPECT_LT(words.find("not started"), why) << words;
}

// The one-shot on four GPUs in one step: each slice of every buffer read into one sum and the
// sum written back, one line per buffer and slice (16), not one "+" arrow per pair of buffers
// and slice (48); the words say each buffer is read once and written once.
TEST_F(GuiApp, TheOneShotIsDrawnAsOneSumPerSlice) {
  const Result r =
      gui("--gpus 4 --allreduce one-shot --model mlp --train-examples 1024 "
          "--steps 1 --frames 2 --panel All-reduce --report " +
          path("one_shot.json"));
  ASSERT_EQ(r.status, 0) << r.output;
  const auto report = read_json(path("one_shot.json"));
  const auto& panel = report["panels"]["All-reduce"];
  EXPECT_EQ(panel["step_shown"], 1.0) << panel.dump(1);
  EXPECT_EQ(panel["arrows"], 16.0) << panel.dump(1);
  const std::string words = one_space(report["words"].value("All-reduce", ""));
  EXPECT_NE(words.find("each buffer read once and written once"), std::string::npos) << words;
}

// The All-reduce panel plays the timing model's NCCL Tree on dgx-h100 (8 GPUs in a chain: 7 steps
// up, 7 down), held after its third step: the one link direction out of /gpu:5 and the one into
// /gpu:4 carry both trees' halves. NVLS's first step loads every port both ways.
TEST_F(GuiApp, TheAllReducePanelPlaysAModelledNcclAllReduceStepByStep) {
  const Result r =
      gui("--model mlp --train-examples 1024 --steps 1 --frames 2 --panel All-reduce "
          "--topology dgx-h100 --model-allreduce nccl-tree --model-step 3 --report " +
          path("tree.json") + " --screenshot " + path("tree.png"));
  ASSERT_EQ(r.status, 0) << r.output;
  const auto tree = read_json(path("tree.json"))["panels"]["All-reduce"];
  EXPECT_EQ(tree["model"], 1.0) << tree.dump(1);
  EXPECT_EQ(tree["model_steps"], 14.0);
  EXPECT_EQ(tree["model_step"], 3.0);
  EXPECT_EQ(tree["model_gpus"], 8.0);
  EXPECT_EQ(tree["model_loaded_links"], 2.0);
  EXPECT_GT(tree["model_step_seconds"].get<double>(), 0.0);
  EXPECT_FALSE(tree.contains("buffers")) << "the run's buffers are not drawn beside the model";
  const auto colors = load_png(path("tree.png")).colors();
  EXPECT_TRUE(colors.count(0xCC79A7)) << "the 'THE MODEL, NOT A RUN' tag is missing";
  EXPECT_TRUE(colors.count(0xD55E00)) << "the busiest resource is not marked";

  const Result nvls =
      gui("--model mlp --train-examples 1024 --frames 2 --panel All-reduce "
          "--model-allreduce nccl-nvls --model-step 1 --model-size 1M --report " +
          path("nvls.json"));
  ASSERT_EQ(nvls.status, 0) << nvls.output;
  const auto panel = read_json(path("nvls.json"))["panels"]["All-reduce"];
  EXPECT_EQ(panel["model_steps"], 2.0) << panel.dump(1);
  EXPECT_EQ(panel["model_loaded_links"], 16.0);
}

// "Predicted on a machine": every preset and this-machine in the chooser; for pcie-2, 10 sizes of
// reduce-to-one, ring, NCCL's time and NCCL's choice, and why the one-shot is not among them (no
// peer access between the two cards).
TEST_F(GuiApp, TheComparePanelPredictsEachSizeOnAChosenMachine) {
  const Result r = gui_with_fit(path("no-fit.toml"),
                                "--model mlp --train-examples 1024 --frames 2 --panel Compare "
                                "--topology pcie-2 --report " +
                                    path("pcie.json"));
  ASSERT_EQ(r.status, 0) << r.output;
  std::size_t presets = 0;
  for (const auto& f :
       fs::directory_iterator(std::string(MIRRORLAB_SOURCE_DIR) + "/timing/topologies")) {
    presets += f.path().extension() == ".toml";
  }
  const auto compare = read_json(path("pcie.json"))["panels"]["Compare"];
  EXPECT_EQ(compare["machines"], presets + 1.0) << compare.dump(1);
  // The sizes 4 KiB to 1 GiB by 4s, and the MLP's own gradients (785 KiB) among them.
  EXPECT_EQ(compare["machine_rows"], 11.0);
  EXPECT_EQ(compare["machine_cells"], 44.0);
  const std::string words = read_json(path("pcie.json"))["words"].value("Compare", "");
  EXPECT_NE(words.find("KiB (this model)"), std::string::npos) << words;
  const auto report = read_json(path("pcie.json"));
  EXPECT_TRUE(panel_says(report, "Compare", "one-shot cannot run on pcie-2")) << words;
  EXPECT_TRUE(panel_says(report, "Compare", "(no peer access)")) << words;
}

// "Predicted on a machine", its training step: on a preset the run's model's kernels priced on
// the preset's GPU (8 H100s: a CNN step of 64 pays on all 8, NCCL all-reduces; 2 H100s through
// PCIe: the second does not pay); on
// this machine a sentence until the run has taken steps, then the table from the run's own
// phase times on the fit's 4 GPUs. Lesson 8's steps open it; lesson 7's the all-reduce by size.
TEST_F(GuiApp, TheComparePanelShowsTheTrainingStepsSpeedupOnAMachine) {
  const auto compare = [&](const std::string& fit, const std::string& args) {
    const Result r = gui_with_fit(fit,
                                  "--model cnn --train-examples 1024 --frames 4 --panel "
                                  "Compare --speedup --report " +
                                      path("step.json") + " " + args);
    EXPECT_EQ(r.status, 0) << args << "\n" << r.output;
    return read_json(path("step.json"))["panels"]["Compare"];
  };
  const auto dgx = compare(path("no-fit.toml"), "--topology dgx-h100");
  EXPECT_EQ(dgx["machine_section"], 1.0) << dgx.dump(1);
  EXPECT_EQ(dgx["step_problem"], 0.0) << dgx.dump(1);
  EXPECT_EQ(dgx["step_rows"], 8.0);
  EXPECT_EQ(dgx["step_paying_devices"], 8.0);
  EXPECT_EQ(dgx["step_nccl"], 1.0);
  const auto pcie = compare(path("no-fit.toml"), "--topology pcie-2");
  EXPECT_EQ(pcie["step_rows"], 2.0) << pcie.dump(1);
  EXPECT_EQ(pcie["step_paying_devices"], 1.0);
  const auto waiting = compare(kSavedFit, "--topology this-machine");
  EXPECT_EQ(waiting["step_problem"], 1.0) << waiting.dump(1);
  EXPECT_EQ(waiting["step_rows"], 0.0);
  const auto here = compare(kSavedFit, "--topology this-machine --gpus 2 --steps 6");
  EXPECT_EQ(here["step_problem"], 0.0) << here.dump(1);
  EXPECT_EQ(here["step_rows"], 4.0);
  EXPECT_EQ(here["step_nccl"], 0.0);
#ifdef MIRRORLAB_HAVE_LESSONS
  for (const auto& [lesson, section] :
       {std::pair<std::string, double>{"computation-against-communication --lesson-step 3", 1},
        {"nccl-against-the-fallback --lesson-step 3", 0}}) {
    const Result r = gui("--lesson " + lesson + " --frames 4 --report " + path("lesson.json"));
    ASSERT_EQ(r.status, 0) << r.output;
    const auto panel = read_json(path("lesson.json"))["panels"]["Compare"];
    EXPECT_EQ(panel["machine_section"], section) << lesson << "\n" << panel.dump(1);
    if (section == 1) {
      EXPECT_EQ(panel["step_paying_devices"], 8.0) << panel.dump(1);
    }
  }
#endif
}

// Gradient packs overlapping backward: the Timeline gives each device a communication lane under
// it; the Gradients and All-reduce panels say why the step has no 'before' and no steps to replay.
// Without overlap (or held at its phases) the packs go after backward, step by step.
TEST_F(GuiApp, PacksThatOverlapBackwardGetACommunicationLaneEach) {
  const auto panels = [&](const std::string& args) {
    const Result r =
        gui("--model mlp --train-examples 1024 --steps 4 --bytes-per-pack 4096 "
            "--frames 2 --report " +
            path("packs.json") + " " + args);
    EXPECT_EQ(r.status, 0) << args << "\n" << r.output;
    return read_json(path("packs.json"))["panels"];
  };
  const auto on = panels("");
  EXPECT_EQ(on["Timeline"]["lanes"], 4.0) << on.dump(1);
  EXPECT_EQ(on["Timeline"]["communication lanes"], 2.0);
  EXPECT_EQ(on["Gradients"]["packs_overlapped"], 1.0);
  EXPECT_EQ(on["Gradients"]["identical_after"], 1.0);
  EXPECT_EQ(on["Gradients"]["heatmaps"], 2.0);
  EXPECT_EQ(on["All-reduce"]["packs_overlapped"], 1.0);
  const auto off = panels("--no-overlap");
  EXPECT_EQ(off["Timeline"]["lanes"], 2.0) << off.dump(1);
  EXPECT_EQ(off["Timeline"]["communication lanes"], 0.0);
  EXPECT_EQ(off["Gradients"]["differ_before"], 1.0);
  EXPECT_EQ(off["Gradients"]["identical_after"], 1.0);
  EXPECT_EQ(off["All-reduce"]["buffers"], 2.0);
  EXPECT_EQ(off["All-reduce"]["step_shown"], 6.0) << "3 packs of the ring's 2 steps";
  // The Compare panel's training step prices the packs beside one buffer.
  const auto compare = panels("--panel Compare --speedup --topology dgx-h100");
  EXPECT_EQ(compare["Compare"]["step_rows"], 8.0) << compare.dump(1);
  EXPECT_EQ(compare["Compare"]["step_one_buffer"], 1.0);
  // Beside backward, its all-reduce column is what backward leaves of the packs' all-reduces
  // (the lesson's "six all-reduces take 62 us in all" beside a column of 31.7 had not said so).
  const auto overlapped = read_json(path("packs.json"));
  EXPECT_TRUE(panel_says(overlapped, "Compare", "| all-reduce left | step |"))
      << overlapped.dump(1);
  panels("--panel Compare --speedup --topology dgx-h100 --no-overlap");
  const auto apart = read_json(path("packs.json"));
  EXPECT_TRUE(panel_says(apart, "Compare", "| all-reduce | step |")) << apart.dump(1);
}

// No fit, or one that cannot be read: the Compare panel says what to run, and nothing crashes.
TEST_F(GuiApp, WithoutAUsableFitTheComparePanelSaysHowToMakeOne) {
  { std::ofstream(path("bad.toml")) << "id = 'this-machine'\nnodes = -3\n[[["; }
  for (const std::string& fit : {path("missing.toml"), path("bad.toml")}) {
    const Result r = gui_with_fit(fit,
                                  "--model mlp --train-examples 1024 --frames 2 --panel "
                                  "Compare --report " +
                                      path("fit.json"));
    ASSERT_EQ(r.status, 0) << fit << "\n" << r.output;
    const auto compare = read_json(path("fit.json"))["panels"]["Compare"];
    EXPECT_EQ(compare["fit_missing"], 1.0) << fit << "\n" << compare.dump(1);
  }
  // Asked for by name, a missing fit is a bad flag, said before the data set is read.
  const Result asked = gui_with_fit(path("missing.toml"), "--topology this-machine --frames 2");
  EXPECT_EQ(asked.status, 2) << asked.output;
  EXPECT_NE(asked.output.find("Run 'mirrorlab compare --fit'"), std::string::npos) << asked.output;
  EXPECT_EQ(asked.output.find("Loading Fashion-MNIST"), std::string::npos) << asked.output;
}

TEST_F(GuiApp, ManyDevicesOnAProjectorFontGetOneRowEach) {
  // 8 GPUs at font scale 1.5 in a small window: cards would be cut to a few letters, so the
  // panel lists one row per device instead, each with its replica's colour.
  const Result r =
      gui("--gpus 8 --memory-limit 256 --model mlp --train-examples 1024 --steps 1 "
          "--font-scale 1.5 --width 800 --height 500 --panel Devices --frames 2 "
          "--report " +
          path("rows.json") + " --screenshot " + path("rows.png"));
  ASSERT_EQ(r.status, 0) << r.output;
  const auto devices = read_json(path("rows.json"))["panels"]["Devices"];
  EXPECT_EQ(devices["rows"], 8.0) << devices.dump(1);
  EXPECT_FALSE(devices.contains("cards")) << devices.dump(1);
  const auto colors = load_png(path("rows.png")).colors();
  for (std::uint32_t c :
       {0xE69F00u, 0x56B4E9u, 0x009E73u, 0xF0E442u, 0x0072B2u, 0xD55E00u, 0xCC79A7u}) {
    EXPECT_TRUE(colors.count(c)) << std::hex << "replica colour " << c << " missing";
  }
}

// Before the first step, every device waits for it, whichever took part in copying replica 0's
// weights: /gpu:1 said "idle; last did broadcast-init (step 1)" beside /gpu:0's "waiting for the
// first step", two phrases cut at their column at font 1.5 (1600x1000 and 1920x1080). The
// Training chart's legend ("train, smo") was cut too: its lines after the first now start at the
// chart's left edge. The first screen a student opens cuts no text.
TEST_F(GuiApp, BeforeTheFirstStepEveryDeviceWaitsForIt) {
  const Result r =
      gui("--font-scale 1.5 --width 1600 --height 1000 --frames 3 --report " + path("start.json"));
  ASSERT_EQ(r.status, 0) << r.output;
  const auto report = read_json(path("start.json"));
  EXPECT_TRUE(panel_says(report, "Devices", "All waiting for the first step")) << report.dump(1);
  EXPECT_FALSE(panel_says(report, "Devices", "broadcast-init")) << report.dump(1);
  const std::string cut = report["words"].value("text cut", "");
  EXPECT_EQ(cut.find("waiting"), std::string::npos) << cut;
  EXPECT_EQ(cut.find("idle"), std::string::npos) << cut;
  EXPECT_EQ(report["notes"]["text_cut"], 0.0) << cut;
}

TEST_F(GuiApp, AnUnevenLastBatchIsShownUneven) {
  // 1001 examples, 2 x 64 per step: the 8th step is the epoch's last, 105 = 64 + 41 examples.
  const Result r =
      gui("--model mlp --train-examples 1001 --steps 8 --frames 2 --report " + path("uneven.json"));
  ASSERT_EQ(r.status, 0) << r.output;
  const auto panels = read_json(path("uneven.json"))["panels"];
  EXPECT_EQ(panels["Batch split"]["thumbnails"], 105.0) << panels.dump(1);
  EXPECT_EQ(panels["Batch split"]["uneven"], 1.0);
}

TEST_F(GuiApp, AStillPictureIsNotDrawnAgain) {
  // Two steps, then 40 frames with training paused and nothing moving: the window is updated
  // 40 times but the unchanged picture is drawn only once or twice more.
  const Result r = gui("--model mlp --train-examples 1024 --steps 2 --frames 40 --report " +
                       path("still.json") + " --screenshot " + path("still.png"));
  ASSERT_EQ(r.status, 0) << r.output;
  const auto notes = read_json(path("still.json"))["notes"];
  EXPECT_GE(notes["updates"].get<double>(), 40.0) << notes.dump(1);
  EXPECT_GE(notes["frames_drawn"].get<double>(), 1.0);
  EXPECT_LE(notes["frames_drawn"].get<double>(), notes["updates"].get<double>() - 30.0);
  // The screenshot is still the whole picture, drawn for it.
  EXPECT_GT(load_png(path("still.png")).colors().size(), 100u);
}

TEST_F(GuiApp, BadWindowFlagsAreRefusedBeforeTheDatasetIsRead) {
  for (const auto& [args, words] : std::vector<std::pair<std::string, std::string>>{
           {"--panel Nope", "the panels are Devices, Batch split"},
           {"--screenshot /no-such-folder/x.png", "/no-such-folder does not exist"},
           {"--report " + dir_.string(), "that is a folder"},
           {"--topology dgx-h900", "--topology dgx-h900: no such machine: choose dgx-h100-2-nodes"},
           {"--topology pcie-2 --model-allreduce nccl-nvls", "cannot be played on pcie-2"},
           {"--model-allreduce nccl-tree --model-step 15",
            "has 14 steps: give 0 (before it) to 14"},
           {"--model-allreduce nccl-spiral", "--model-allreduce"},
           {"--model-step 2", "--model-step needs --model-allreduce"},
           {"--model-size 1G", "--model-size needs --model-allreduce"}}) {
    const Result r = gui(args + " --frames 2");
    EXPECT_EQ(r.status, 2) << args << "\n" << r.output;
    EXPECT_NE(r.output.find(words), std::string::npos) << args << "\n" << r.output;
    EXPECT_EQ(r.output.find("Loading Fashion-MNIST"), std::string::npos) << r.output;
  }
}

TEST_F(GuiApp, AScriptedRunThatCannotTrainFailsSayingWhy) {
  // Interactive, the window shows the error and the settings to fix it (next test); asked to
  // train in a script, it cannot do what it was asked, so it exits 1 with the reason.
  const Result r = gui("--memory-limit 1 --steps 2 --frames 2");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("the scripted run could not train: /gpu:0: out of memory"),
            std::string::npos)
      << r.output;
}

// The faults flags reach the window's run: a straggler's timeline shows the others' wait (its
// dark grey), and a device that fails stops the scripted run saying where.
TEST_F(GuiApp, AStragglerShowsTheOthersWaitingAndAFailedDeviceIsSaid) {
  Result r =
      gui("--model mlp --gpus 3 --train-examples 2048 --slow-device /gpu:1=3 --steps 4 "
          "--frames 2 --panel Timeline --screenshot " +
          path("slow.png"));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(load_png(path("slow.png")).colors().count(0x4A4A55)) << "no wait span drawn";
  r =
      gui("--model mlp --gpus 2 --train-examples 2048 --fail-device /gpu:1@3 --steps 5 "
          "--frames 2");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("/gpu:1 failed in step 3, during the all-reduce"), std::string::npos)
      << r.output;
}

TEST_F(GuiApp, ASettingThatCannotWorkIsShownNotACrash) {
  const Result r = gui("--memory-limit 1 --frames 2 --report " + path("bad.json") +
                       " --screenshot " + path("bad.png"));
  ASSERT_EQ(r.status, 0) << r.output;
  const auto report = read_json(path("bad.json"));
  EXPECT_EQ(report["notes"]["setup_failed"], 1.0);
  EXPECT_TRUE(report["panels"].contains("Controls"));  // where the sentence is shown
}

TEST_F(GuiApp, ClosingTheWindowWhileTrainingRunsEndsCleanly) {
  const Result r = gui("--train-examples 4096 --run --quit-after 2");
  EXPECT_EQ(r.status, 0) << r.output;
}

#ifdef MIRRORLAB_HAVE_LESSONS
// Each step of lesson 1 in the Lesson panel, entered directly (the run replayed up to it): the
// panel shows the step, highlights its panel, and every check of the step passes.
TEST_F(GuiApp, TheLessonPanelPlaysEachStepOfLessonOneWithItsChecksPassing) {
  const std::vector<std::pair<const char*, double>> steps = {
      {"Batch split", 1}, {"Gradients", 1}, {"All-reduce", 1}, {"Devices", 2}};
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const std::string json = path(("step" + std::to_string(i + 1) + ".json").c_str());
    const Result r = gui("--lesson mirrored-strategy --lesson-step " + std::to_string(i + 1) +
                         " --frames 2 --report " + json);
    ASSERT_EQ(r.status, 0) << r.output;
    const auto report = read_json(json);
    const auto& lesson = report["panels"]["Lesson"];
    EXPECT_EQ(lesson["step"], i + 1.0) << report.dump(1);
    EXPECT_EQ(lesson["checks_passed"], steps[i].second) << report.dump(1);
    EXPECT_EQ(lesson["checks_failed"], 0.0) << report.dump(1);
    // The step's panel fills the room beside the lesson, alone.
    EXPECT_TRUE(report["panels"].contains(steps[i].first)) << report.dump(1);
    EXPECT_EQ(report["notes"]["session_failed"], 0.0);
  }
}

// --every-step from step 3 of lesson 1: steps 3 and 4 played in one window as Next plays them,
// each with a screenshot and a report of its own (the report's counts and words of that step
// alone), and nothing written for the steps before.
TEST_F(GuiApp, EveryStepWritesAScreenshotAndAReportOfEachStepPlayed) {
  const Result r = gui("--lesson mirrored-strategy --lesson-step 3 --every-step --frames 2" +
                       std::string(" --screenshot ") + path("shot-{step}.png") + " --report " +
                       path("report-{step}.json"));
  ASSERT_EQ(r.status, 0) << r.output;
  for (const char* absent : {"shot-1.png", "shot-2.png", "report-1.json", "report-2.json"}) {
    EXPECT_FALSE(fs::exists(path(absent))) << absent;
  }
  for (int step : {3, 4}) {
    const std::string number = std::to_string(step);
    EXPECT_GT(fs::file_size(path(("shot-" + number + ".png").c_str())), 1000u);
    const auto report = read_json(path(("report-" + number + ".json").c_str()));
    const auto& lesson = report["panels"]["Lesson"];
    EXPECT_EQ(lesson["step"], step) << report.dump(1);
    EXPECT_EQ(lesson["checks_failed"], 0.0) << report.dump(1);
    EXPECT_EQ(lesson["checks_passed"], step == 4 ? 2.0 : 1.0) << report.dump(1);
    // Played from step 3 on: step 4's score counts both steps, its report only its own frames.
    EXPECT_EQ(lesson["steps_played"], step - 2.0) << report.dump(1);
    // Step 3 asks a question and step 4 none: step 4's report has no answer of step 3's, nor
    // its panel (the All-reduce), which step 4 no longer shows.
    EXPECT_EQ(report["words"].contains("answer 1"), step == 3) << report.dump(1);
    EXPECT_EQ(report["panels"].contains("All-reduce"), step == 3) << report.dump(1);
    EXPECT_EQ(report["notes"]["session_failed"], 0.0);
  }
}

// --unanswered: lesson 1's first step as the class first sees it, on a 1280x720 projector with
// the font at 1.5: its question waiting, nothing run, no answer. The Batch split panel has nothing
// to show until the class has predicted, so it leaves its room to the caption strip, which then
// shows the step's text and question whole. Answered (the usual scripted picture), the panel keeps
// the room its picture needs and the strip its share, scrolling.
TEST_F(GuiApp, UnansweredShowsAStepBeforeItRunsItsTextAndQuestionWhole) {
  const auto asks = projected("--lesson mirrored-strategy --unanswered", "asks.json");
  const auto& lesson = asks["panels"]["Lesson"];
  EXPECT_EQ(lesson["questions"], 1.0) << asks.dump(1);
  EXPECT_FALSE(asks["words"].contains("answer 1")) << asks.dump(1);
  EXPECT_FALSE(lesson.contains("checks_passed")) << asks.dump(1);
  EXPECT_EQ(asks["notes"]["steps_done"], 0.0);
  EXPECT_EQ(asks["notes"]["held_within_step"], 0.0) << "nothing ran";
  EXPECT_EQ(asks["panels"]["Batch split"]["fills_room"], 0.0) << asks.dump(1);
  EXPECT_EQ(lesson["text_hidden_below_px"], 0.0) << asks.dump(1);
  EXPECT_EQ(lesson["asked_hidden_below_px"], 0.0) << asks.dump(1);
  EXPECT_GT(lesson["strip_height_share"].get<double>(), 0.3) << asks.dump(1);
  EXPECT_EQ(asks["notes"]["text_cut"], 0.0) << asks.dump(1);

  const auto answered = projected("--lesson mirrored-strategy", "answered.json");
  const auto& played = answered["panels"]["Lesson"];
  EXPECT_TRUE(answered["words"].contains("answer 1")) << answered.dump(1);
  EXPECT_EQ(played["checks_passed"], 1.0) << answered.dump(1);
  EXPECT_EQ(answered["panels"]["Batch split"]["fills_room"], 1.0) << answered.dump(1);
  EXPECT_GT(
      played["text_hidden_below_px"].get<double>() + played["asked_hidden_below_px"].get<double>(),
      0.0)
      << answered.dump(1);
  EXPECT_LT(played["strip_height_share"].get<double>(), 0.3) << answered.dump(1);
}

// The usual layout on a laptop's 1366x768: the Training panel's words (images/s, the step's time,
// the last step's and epoch's loss) filled it, and its charts were below its edge, seen only by
// scrolling. Where the words leave no room for a chart, the charts come first; where they do
// (1920x1080), the words stay first and the loss chart under them is whole.
TEST_F(GuiApp, OnALaptopScreenTheTrainingPanelShowsItsLossChart) {
  for (const char* screen : {"1366x768", "1920x1080"}) {
    const std::string size = screen;
    const Result r =
        shell(kHeadless + " " + size + " " + kMirrorlab +
              " gui --model mlp --train-examples 2048 --steps 20 --width " +
              size.substr(0, size.find('x')) + " --height " + size.substr(size.find('x') + 1) +
              " --frames 3 --report " + path("usual.json"));
    ASSERT_EQ(r.status, 0) << r.output;
    const auto training = read_json(path("usual.json"))["panels"]["Training"];
    EXPECT_EQ(training["loss_chart_whole"], 1.0) << screen << "\n" << training.dump(1);
    EXPECT_EQ(training["charts_first"], size == "1366x768" ? 1.0 : 0.0) << training.dump(1);
  }
}

// The Training panel's accuracy chart draws each step's own value (faint) under the smoothed
// curve: its line "step 10: ... accuracy 0.578" is the end of the faint one, where the smoothed
// curve of a 10-step run still lags far below (lesson 4 step 1 had shown only that, at 0.37).
TEST_F(GuiApp, TheTrainingChartsEndWhereTheStepLineSays) {
  const auto ran = projected("--lesson 4", "ran.json", 5, "1920x1080");
  const auto& training = ran["panels"]["Training"];
  ASSERT_TRUE(training.contains("last_step_accuracy_charted")) << ran.dump(1);
  char said[64];
  std::snprintf(said, sizeof said, "accuracy %.3f on its",
                training["last_step_accuracy_charted"].get<double>());
  EXPECT_TRUE(panel_says(ran, "Training", said)) << said << "\n" << ran.dump(1);
  EXPECT_LT(training["last_smoothed_accuracy"].get<double>(),
            training["last_step_accuracy_charted"].get<double>())
      << "a smoothed rising curve lags: the reason each step is drawn too";
}

// Lesson 9's fourth step: the epoch's last batch of 2 examples on 3 replicas leaves /gpu:2
// none. The Gradients panel names it ("each saw other examples" alone had hidden it).
TEST_F(GuiApp, TheGradientsPanelNamesAReplicaThatSawNoExamples) {
  const auto ran = projected("--lesson 9 --lesson-step 4", "ran.json", 5, "1920x1080");
  EXPECT_TRUE(
      panel_says(ran, "Gradients", "each saw other examples, /gpu:2 none (its gradient is 0)"))
      << ran.dump(1);
  const auto even = projected("--lesson 5", "even.json", 5, "1920x1080");
  EXPECT_TRUE(panel_says(even, "Gradients", "the replicas differ, each saw other examples ("))
      << even.dump(1);
}

// A run that cannot be made keeps the Devices panel's devices: lesson 2's last step gives /gpu:1
// 2 MiB, and the panel had said only "No devices: ..." in the step about memory. While a step
// asks what happens (lesson 7's first, NCCL on CPU-backed devices, every panel shown by key 0),
// the reason waits for the run, as the Controls' does.
TEST_F(GuiApp, ARunThatCannotBeMadeShowsWhyAndTheDevicesItWasGiven) {
  const auto ran = projected("--lesson 2 --lesson-step 3", "ran.json", 5, "1920x1080");
  EXPECT_TRUE(panel_says(ran, "Devices", "Cannot start this run: /gpu:1: out of memory"))
      << ran.dump(1);
  EXPECT_TRUE(panel_says(ran, "Devices", "/gpu:0 limit 1024 MiB /gpu:1 limit 2 MiB <- the one"))
      << ran.dump(1);
  const Result r =
      gui("--lesson 7 --unanswered --press 0 --frames 3 --report " + path("asks.json"));
  ASSERT_EQ(r.status, 0) << r.output;
  const auto asks = read_json(path("asks.json"));
  EXPECT_TRUE(panel_says(asks, "Devices", "The devices show here when the step runs"))
      << asks.dump(1);
  EXPECT_FALSE(panel_says(asks, "Devices", "NCCL")) << asks.dump(1);
}

// Lesson 6 step 3 asks how many steps the one-shot takes: the All-reduce panel had shown the
// ring of step 2 ("Step 6 of 6", a slider to 6) beside the question. While a step asks about the
// all-reduce, no all-reduce's steps already taken are shown: the panel says the all-reduce
// appears when the step runs; once run, the one-shot's. (The buffers before an all-reduce still
// show while lesson 5 asks the ring's steps: WhileAStepAsksNOrRightLeaveItsRunWhereItIs.)
TEST_F(GuiApp, WhileAStepAsksAboutTheAllReduceTheOneBeforeItIsNotShown) {
  const auto asks =
      projected("--lesson 6 --lesson-step 3 --unanswered", "asks.json", 5, "1920x1080");
  EXPECT_TRUE(panel_says(asks, "All-reduce", "The all-reduce appears here when the step runs"))
      << asks.dump(1);
  EXPECT_FALSE(panel_says(asks, "All-reduce", "ring of 4")) << asks.dump(1);
  EXPECT_FALSE(panel_says(asks, "All-reduce", "Step 6 of 6")) << asks.dump(1);
  const auto ran = projected("--lesson 6 --lesson-step 3", "ran.json", 5, "1920x1080");
  EXPECT_TRUE(panel_says(ran, "All-reduce", "one-shot of 4 x")) << ran.dump(1);
  EXPECT_TRUE(panel_says(ran, "All-reduce", "Step 1 of 1")) << ran.dump(1);
}

// Lesson 1's last step: the replicas' weights are the same. The Devices panel says so in a line
// of its own above the cards (each card's fingerprint is a dim line to compare by eye).
TEST_F(GuiApp, TheDevicesPanelSaysWhenEveryReplicasWeightsAreTheSame) {
  const auto ran = projected("--lesson 1 --lesson-step 4", "ran.json", 5, "1920x1080");
  EXPECT_EQ(ran["panels"]["Devices"]["weights_same"], 1.0) << ran.dump(1);
  EXPECT_TRUE(panel_says(ran, "Devices", "After step 6 every replica's weights are the same"))
      << ran.dump(1);
}

// Under thumbnails about as wide as "Ankle boot", the name keeps its last word ("Boot"): it had
// run into the next thumbnail's name (lesson 9 step 3 at 1920x1080, font 1.5).
TEST_F(GuiApp, AClassNameTooWideForItsThumbnailIsShortened) {
  const auto asks =
      projected("--lesson 9 --lesson-step 3 --unanswered", "asks.json", 5, "1920x1080");
  EXPECT_EQ(asks["panels"]["Batch split"]["thumbnails"], 48.0) << asks.dump(1);
  EXPECT_EQ(asks["panels"]["Batch split"]["names_shortened"], 5.0) << asks.dump(1);
}

// --press goes through the window's own key handling. In a lesson, Space goes on as Page Down
// does (as in a slide show): a page more of the step while it hides some, then the step's run
// (held after the split, as the step plans), then the next step; it must not start the lesson's
// run training freely past its plan.
TEST_F(GuiApp, InALessonSpaceGoesOnAsPageDownDoes) {
  const std::string args = "--lesson mirrored-strategy --unanswered --press ";
  const auto spaces = projected(args + "space,space,space", "spaces.json");
  const auto pages = projected(args + "pgdn,pgdn,pgdn", "pages.json");
  const auto& lesson = spaces["panels"]["Lesson"];
  EXPECT_EQ(lesson["step"], 1.0) << spaces.dump(1);
  EXPECT_EQ(lesson["checks_passed"], 1.0) << "the step ran: " << spaces.dump(1);
  EXPECT_EQ(spaces["notes"]["held_within_step"], 1.0) << "held after the split, as planned";
  EXPECT_EQ(spaces["notes"]["steps_done"], 0.0) << spaces.dump(1);
  EXPECT_GT(lesson["text_scrolled_px"].get<double>(), 0.0) << "paged on: " << spaces.dump(1);
  for (const char* what : {"step", "checks_passed", "text_scrolled_px", "asked_scrolled_px"}) {
    EXPECT_EQ(lesson[what], pages["panels"]["Lesson"][what]) << what << "\n" << pages.dump(1);
  }
  EXPECT_EQ(spaces["notes"]["steps_done"], pages["notes"]["steps_done"]);
  // Read to its end (9 presses at this size), a press goes on to the next step.
  std::string fourteen = "pgdn";
  for (int i = 1; i < 14; ++i) fourteen += ",pgdn";
  const auto on = projected(args + fourteen, "on.json");
  EXPECT_GE(on["panels"]["Lesson"]["step"].get<double>(), 2.0) << on.dump(1);
}

// F5 leaves the presenter layout for the usual one (the Lesson panel a column, no strip) and
// comes back; Page Up after Page Down reads the step from its top again.
TEST_F(GuiApp, PressedKeysSwitchTheLayoutAndPageBack) {
  const std::string args = "--lesson mirrored-strategy --press ";
  const auto usual = projected(args + "f5", "usual.json");
  EXPECT_EQ(usual["notes"]["presenter_layout"], 0.0) << usual.dump(1);
  const auto back = projected(args + "f5,f5", "back.json");
  EXPECT_EQ(back["notes"]["presenter_layout"], 1.0) << back.dump(1);
  const auto paged = projected(args + "pgdn", "paged.json");
  ASSERT_GT(paged["panels"]["Lesson"]["text_scrolled_px"].get<double>(), 0.0) << paged.dump(1);
  const auto top = projected(args + "pgdn,pgup", "top.json");
  EXPECT_EQ(top["panels"]["Lesson"]["text_scrolled_px"], 0.0) << top.dump(1);
  EXPECT_EQ(top["panels"]["Lesson"]["step"], 1.0) << top.dump(1);
}

// Once a step has run, its first answer comes into the strip's view: lesson 4's first step at
// 1280x720 shows two lines of each column beside the Training charts, and its two-line question
// had left "Answer: 1" below them (half of it drawn). Page Up (a line a press there) reads the
// question again, and the column stays there.
TEST_F(GuiApp, OnceAStepRunsItsFirstAnswerComesIntoTheStripsView) {
  const auto ran = projected("--lesson 4", "ran.json", 5);
  const auto& lesson = ran["panels"]["Lesson"];
  EXPECT_GT(lesson["asked_scrolled_px"].get<double>(), 0.0) << ran.dump(1);
  EXPECT_TRUE(panel_says(ran, "Lesson", "Answer: 1")) << ran["words"].dump(1);
  EXPECT_TRUE(panel_says(ran, "Lesson", "Each replica's mean")) << ran["words"].dump(1);
  EXPECT_EQ(ran["notes"]["text_in_part"], 0.0) << ran["words"]["text in part"];
  const auto back = projected("--lesson 4 --press pgup,pgup", "back.json", 5);
  EXPECT_EQ(back["panels"]["Lesson"]["asked_scrolled_px"], 0.0) << back.dump(1);
  EXPECT_TRUE(panel_says(back, "Lesson", "How much does the summed gradient")) << back.dump(1);
  // Where the strip shows the question and its answer together, nothing scrolls.
  const auto large = projected("--lesson 4", "large.json", 5, "1920x1080");
  EXPECT_EQ(large["panels"]["Lesson"]["asked_scrolled_px"], 0.0) << large.dump(1);
}

// A table whose rows scroll under its header shows them whole: lesson 7's third step at 1366x768
// predicts eleven sizes on a DGX H100, and its table had shown six and a half of them, the model's
// own row scrolled to the middle and a half row at the top and the foot (12 lines in part). Now
// the rows that fit, whole, the model's in the middle; the speed-up table likewise (lesson 8).
TEST_F(GuiApp, AScrollingTableShowsItsRowsWhole) {
  const auto sizes = projected("--lesson 7 --lesson-step 3", "sizes.json", 5, "1366x768");
  EXPECT_EQ(sizes["notes"]["text_in_part"], 0.0) << sizes["words"]["text in part"];
  const auto& compare = sizes["panels"]["Compare"];
  EXPECT_EQ(compare["machine_rows"], 11.0) << compare.dump(1);
  EXPECT_GE(compare["machine_rows_shown"].get<double>(), 7.0) << compare.dump(1);
  EXPECT_LT(compare["machine_rows_shown"].get<double>(), 11.0) << "the rows scroll here";
  EXPECT_EQ(compare["own_row_shown"], 1.0) << "the model's own size in view: " << compare.dump(1);
  // At 1280x720, five rows of eleven: the model's (the sixth) is one unscrolled rows leave out.
  const auto laptop = projected("--lesson 7 --lesson-step 5", "laptop.json", 5);
  EXPECT_EQ(laptop["panels"]["Compare"]["machine_rows_shown"], 5.0) << laptop.dump(1);
  EXPECT_EQ(laptop["panels"]["Compare"]["own_row_shown"], 1.0) << laptop.dump(1);
  EXPECT_EQ(laptop["notes"]["text_in_part"], 0.0) << laptop["words"]["text in part"];
  // At 1280x800 the speed-up table had shown three and a half of its eight rows (8 in part).
  const auto step = projected("--lesson 8 --lesson-step 3", "step.json", 5, "1280x800");
  EXPECT_EQ(step["notes"]["text_in_part"], 0.0) << step["words"]["text in part"];
  EXPECT_EQ(step["panels"]["Compare"]["step_rows"], 8.0) << step["panels"]["Compare"].dump(1);
  EXPECT_GE(step["panels"]["Compare"]["step_rows_shown"].get<double>(), 2.0);
  EXPECT_LT(step["panels"]["Compare"]["step_rows_shown"].get<double>(), 8.0) << "they scroll";
  // Where even three rows leave the lines under the table short of room (lesson 11 step 3 at
  // 1440x900: the sources' header half below the panel's foot), it shows two.
  const auto packs = projected("--lesson 11 --lesson-step 3", "packs.json", 5, "1440x900");
  EXPECT_EQ(packs["notes"]["text_in_part"], 0.0) << packs["words"]["text in part"];
  EXPECT_EQ(packs["panels"]["Compare"]["hidden_below_px"], 0.0) << packs.dump(1);
}

// While a step waits for the class's predictions, N and the Right arrow leave the lesson's run
// where the steps before left it: lesson 5's second step asks how many steps the ring takes, and
// Right had walked the live run into the all-reduce ("Step 3 of 6"). Once the step has run, the
// same key goes on to the run's next phase. Key 0 shows every panel (the All-reduce one too).
TEST_F(GuiApp, WhileAStepAsksNOrRightLeaveItsRunWhereItIs) {
  const auto pressed = [&](const std::string& args, const char* json) {
    const Result r =
        gui("--lesson 5 --lesson-step 2 " + args + " --frames 3 --report " + path(json));
    EXPECT_EQ(r.status, 0) << r.output;
    return read_json(path(json));
  };
  const auto asks = pressed("--unanswered --press 0,right,right,n,right", "asks.json");
  EXPECT_TRUE(panel_says(asks, "All-reduce", "Before the all-reduce")) << asks.dump(1);
  EXPECT_FALSE(panel_says(asks, "All-reduce", " of 6")) << asks.dump(1);
  EXPECT_TRUE(panel_says(asks, "Devices", "held after backward (step 1)")) << asks.dump(1);
  EXPECT_EQ(asks["notes"]["steps_done"], 0.0) << asks.dump(1);
  const auto ran = pressed("--press 0,right", "ran.json");
  EXPECT_TRUE(panel_says(ran, "Devices", "held after update (step 1)")) << ran.dump(1);
}

// The Controls' run buttons too (lesson 7's first step shows the Controls while it asks): Run,
// One step and Next phase are off, and the hint does not offer a key that would not act.
TEST_F(GuiApp, WhileAStepAsksTheControlsDoNotOfferToRunIt) {
  const auto asks = projected("--lesson 7 --unanswered", "asks.json", 5);
  EXPECT_TRUE(panel_says(asks, "Controls", "The step's phases show here once it runs"))
      << asks.dump(1);
  EXPECT_FALSE(panel_says(asks, "Controls", "Next phase (Right arrow)")) << asks.dump(1);
}

TEST_F(GuiApp, PressIsRefusedForAKeyItDoesNotKnowOrWithNothingToWrite) {
  const std::string report = path("report.json"), each = path("report-{step}.json");
  for (const auto& [args, words] : std::vector<std::pair<std::string, std::string>>{
           {"--press space,fire --report " + report, "no key named 'fire'"},
           {"--press space,,pgdn --report " + report, "an empty key name between commas"},
           {"--lesson 1 --press space", "give --screenshot (or --report)"},
           {"--lesson 1 --every-step --press space --report " + each, "give one of them"}}) {
    const Result r = gui(args + " --frames 2");
    EXPECT_EQ(r.status, 2) << args << "\n" << r.output;
    EXPECT_NE(r.output.find(words), std::string::npos) << args << "\n" << r.output;
  }
  EXPECT_TRUE(fs::is_empty(dir_)) << "a refused run writes nothing";
}

// Lesson 1's third step entered directly, as the class first sees it: steps 1 and 2 replayed (the
// run held after backward), the All-reduce panel showing the gradients before the all-reduce and
// filling its room. While the step asks, that panel keeps half the window, not three quarters,
// and the strip takes the rest for the step's text and question.
TEST_F(GuiApp, AStepThatAsksGetsHalfTheWindowFromAPanelThatFillsItsRoom) {
  const auto asks =
      projected("--lesson mirrored-strategy --lesson-step 3 --unanswered", "asks.json", 5);
  const auto& lesson = asks["panels"]["Lesson"];
  EXPECT_EQ(lesson["step"], 3.0) << asks.dump(1);
  EXPECT_EQ(asks["notes"]["held_within_step"], 1.0) << "steps 1 and 2 replayed";
  EXPECT_EQ(asks["panels"]["All-reduce"]["fills_room"], 1.0) << asks.dump(1);
  EXPECT_GT(lesson["strip_height_share"].get<double>(), 0.4) << asks.dump(1);
  EXPECT_LE(lesson["strip_height_share"].get<double>(), 0.5) << asks.dump(1);
  EXPECT_EQ(lesson["asked_hidden_below_px"], 0.0) << asks.dump(1);
}

// The All-reduce panel's picture leaves no room empty that the strip could use. While lesson 1's
// third step asks at 1280x720, its rows take the room down to the panel's foot (nothing is
// drawn yet below them but the key's header). Run, on a 1920x1080 projector its rows stop
// growing at their largest and the panel uses no more than they need (fills_room_up_to): the
// step's text and answers read whole.
TEST_F(GuiApp, TheAllReducePictureLeavesNoRoomEmptyThatTheStripCouldUse) {
  const auto asks =
      projected("--lesson mirrored-strategy --lesson-step 3 --unanswered", "asks.json", 5);
  const double line = 30;  // at font scale 1.5
  EXPECT_EQ(asks["panels"]["All-reduce"]["fills_room"], 1.0) << asks.dump(1);
  EXPECT_LT(asks["panels"]["All-reduce"]["empty_below_px"].get<double>(), line) << asks.dump(1);
  const auto large =
      projected("--lesson mirrored-strategy --lesson-step 3", "large.json", 6, "1920x1080");
  EXPECT_EQ(large["panels"]["All-reduce"]["hidden_below_px"], 0.0) << large.dump(1);
  EXPECT_EQ(large["panels"]["Lesson"]["text_hidden_below_px"], 0.0) << large.dump(1);
  EXPECT_EQ(large["panels"]["Lesson"]["asked_hidden_below_px"], 0.0) << large.dump(1);
}

// Once a step has run, a picture that fills its room keeps six tenths of a 1920x1080 projector
// (at least 18 lines of text: all of 1280x720's three quarters), and the strip the rest when it
// needs it: lesson 1's first step shows its text, answer and check whole beside the batch.
TEST_F(GuiApp, OnceAStepRunsALargeScreenShowsItsAnswersBesideThePicture) {
  const auto large = projected("--lesson mirrored-strategy", "large.json", 6, "1920x1080");
  const auto& lesson = large["panels"]["Lesson"];
  EXPECT_EQ(lesson["checks_passed"], 1.0) << large.dump(1);
  EXPECT_EQ(large["panels"]["Batch split"]["fills_room"], 1.0) << large.dump(1);
  EXPECT_EQ(lesson["text_hidden_below_px"], 0.0) << large.dump(1);
  EXPECT_EQ(lesson["asked_hidden_below_px"], 0.0) << large.dump(1);
  EXPECT_GT(lesson["strip_height_share"].get<double>(), 0.25) << large.dump(1);
  EXPECT_LE(lesson["strip_height_share"].get<double>(), 0.4) << large.dump(1);
}

// Lesson 11's first step on a 1280x720 projector: two devices' lanes at their tallest fill less
// than the picture's answered share, which left 140 px empty under them while the step's answer
// and checks scrolled (184 + 218 px). The Timeline takes what its lanes use; the strip the rest.
TEST_F(GuiApp, TheTimelineLendsTheStripWhatItsLanesLeaveEmpty) {
  const auto ran = projected("--lesson 11", "ran.json", 5);
  const auto& timeline = ran["panels"]["Timeline"];
  EXPECT_EQ(timeline["lanes"], 2.0) << ran.dump(1);
  EXPECT_LT(timeline["empty_below_px"].get<double>(), 10.0) << ran.dump(1);
  EXPECT_GT(ran["panels"]["Lesson"]["strip_height_share"].get<double>(), 0.4) << ran.dump(1);
}

// Lesson 7's first step asks what happens when a run on CPU-backed virtual GPUs asks for NCCL:
// its run cannot even be set up, and the Controls panel and the Lesson panel would say why right
// beside the question. While the class predicts, neither does; the Controls, taller than any
// room, leave the strip the half window a question gets. Once the step runs, both say it.
TEST_F(GuiApp, ARunThatCannotStartKeepsItsReasonUntilTheStepRuns) {
  const auto asks = projected("--lesson 7 --unanswered", "asks.json", 5);
  EXPECT_TRUE(panel_says(asks, "Controls", "Run")) << asks.dump(1);
  EXPECT_FALSE(panel_says(asks, "Controls", "Cannot start")) << asks.dump(1);
  EXPECT_FALSE(panel_says(asks, "Lesson", "The run stopped")) << asks.dump(1);
  EXPECT_GT(asks["panels"]["Lesson"]["strip_height_share"].get<double>(), 0.4) << asks.dump(1);
  EXPECT_EQ(asks["panels"]["Lesson"]["text_hidden_below_px"], 0.0) << asks.dump(1);
  // What the class reads in the Controls meanwhile is the run's settings (NCCL on 2 virtual
  // GPUs), above the step's phases, which come once it runs; then they go back below them.
  const auto settings_first = [](const nlohmann::json& report) {
    const std::string words = report["words"]["Controls"].get<std::string>();
    const auto nccl = words.find("{ nccl } all-reduce");
    const auto phases = words.find("Inside a step");
    EXPECT_NE(nccl, std::string::npos) << words;
    EXPECT_NE(phases, std::string::npos) << words;
    return nccl < phases;
  };
  EXPECT_TRUE(settings_first(asks)) << asks.dump(1);
  const auto ran = projected("--lesson 7", "ran.json", 5);
  EXPECT_FALSE(settings_first(ran)) << ran.dump(1);
  // Once it has run, on a 1920x1080 projector, the Controls (taller than any room) leave the
  // strip what its answer and check need, up to what a picture would leave it: they scrolled
  // 158 px below the strip's quarter before. (0 px here; a build without NCCL says why in a
  // longer sentence, 39 px past that most.)
  const auto large = projected("--lesson 7", "large.json", 5, "1920x1080");
  EXPECT_GT(large["panels"]["Lesson"]["strip_height_share"].get<double>(), 0.3) << large.dump(1);
  EXPECT_LT(large["panels"]["Lesson"]["asked_hidden_below_px"].get<double>(), 79) << large.dump(1);
  EXPECT_EQ(large["panels"]["Lesson"]["text_hidden_below_px"], 0.0) << large.dump(1);
  EXPECT_EQ(ran["panels"]["Lesson"]["checks_passed"], 1.0) << ran.dump(1);
  EXPECT_TRUE(panel_says(ran, "Controls", "Cannot start this run")) << ran.dump(1);
  EXPECT_TRUE(panel_says(ran, "Lesson", "The run stopped")) << ran.dump(1);
}

// A panel leaves a blank where it would show the number a step asks the class to predict, as a
// worksheet does: lesson 10's first step asks how many replicas 2 workers of 2 GPUs have in sync
// and how large their global batch is, which the Devices panel says; lesson 9's fourth asks how
// much the summed gradient weighs, which the Gradients panel says. Once the step runs, they show.
TEST_F(GuiApp, APanelLeavesABlankWhereItWouldShowWhatTheStepAsks) {
  const auto asks = projected("--lesson 10 --unanswered", "asks.json", 5);
  EXPECT_TRUE(panel_says(asks, "Devices", "Global batch ? = 16 x ? replicas in sync"))
      << asks.dump(1);
  EXPECT_TRUE(panel_says(asks, "Devices", "2 workers x 2 devices = ? replicas")) << asks.dump(1);
  for (const char* panel : {"Devices", "Lesson"}) {
    EXPECT_FALSE(panel_says(asks, panel, "= 4 replicas")) << panel << "\n" << asks.dump(1);
    EXPECT_FALSE(panel_says(asks, panel, "count is 4")) << panel << "\n" << asks.dump(1);
  }
  // Nor do the rows number the replicas: "replica 3" would say there are 4.
  EXPECT_FALSE(panel_says(asks, "Devices", "replica 3")) << asks.dump(1);
  const auto ran = projected("--lesson 10", "ran.json", 5);
  EXPECT_TRUE(panel_says(ran, "Devices", "Global batch 64 = 16 x 4 replicas in sync"))
      << ran.dump(1);
  EXPECT_TRUE(panel_says(ran, "Devices", "/gpu:1 replica 3")) << ran.dump(1);
  const auto weighs = projected("--lesson 9 --lesson-step 4 --unanswered", "weighs.json", 5);
  EXPECT_TRUE(panel_says(weighs, "Gradients", "weighs ? x")) << weighs.dump(1);
  EXPECT_FALSE(panel_says(weighs, "Lesson", "2/3")) << weighs.dump(1);
  // Lesson 5's second step: how many steps the ring takes on 4 replicas.
  const auto ring = projected("--lesson 5 --lesson-step 2 --unanswered", "ring.json", 5);
  EXPECT_TRUE(panel_says(ring, "Gradients", "sums them in ? steps")) << ring.dump(1);
  EXPECT_FALSE(panel_says(ring, "Lesson", "6 steps")) << ring.dump(1);
  // Lesson 3's first step asks for the steps of an epoch: the Controls (the usual layout) say
  // "epoch 1/1, 0/?".
  const std::string json = path("epoch.json");
  const Result r = gui("--lesson 3 --unanswered --frames 3 --report " + json);
  ASSERT_EQ(r.status, 0) << r.output;
  const auto epoch = read_json(json);
  EXPECT_TRUE(panel_says(epoch, "Controls", "0/?)")) << epoch.dump(1);
}

// Lesson 8's third step asks what the timing model gives a replica's step on an H100 and how many
// of 8 GPUs pay: the numbers the Compare panel's training step shows. While the class predicts,
// the panel says they appear when the step runs, and the strip takes the room they would fill.
TEST_F(GuiApp, TheComparePanelKeepsTheModelsAnswersUntilTheStepRuns) {
  const auto compare_says = [](const nlohmann::json& report, const char* words) {
    return panel_says(report, "Compare", words);
  };
  const auto asks = projected("--lesson 8 --lesson-step 3 --unanswered", "asks.json");
  EXPECT_EQ(asks["panels"]["Compare"]["step_rows"], 0.0) << asks.dump(1);
  EXPECT_TRUE(compare_says(asks, "appears here when the step runs")) << asks.dump(1);
  EXPECT_FALSE(compare_says(asks, "images/s")) << asks.dump(1);
  EXPECT_GT(asks["panels"]["Lesson"]["strip_height_share"].get<double>(), 0.5) << asks.dump(1);

  const auto answered = projected("--lesson 8 --lesson-step 3", "answered.json");
  EXPECT_EQ(answered["panels"]["Compare"]["step_rows"], 8.0) << answered.dump(1);
  EXPECT_TRUE(compare_says(answered, "images/s")) << answered.dump(1);
  EXPECT_FALSE(compare_says(answered, "appears here")) << answered.dump(1);
}

// Lesson 9's second step while the class predicts: its code takes most of the strip's width, and
// the prediction's field narrows so that its label shows whole beside it (it had been cut).
TEST_F(GuiApp, APredictionsFieldLeavesItsLabelWholeInANarrowColumn) {
  const auto asks = projected("--lesson 9 --lesson-step 2 --unanswered", "asks.json", 5);
  EXPECT_GT(asks["panels"]["Lesson"]["text_width_share"].get<double>(), 0.65) << asks.dump(1);
  EXPECT_EQ(asks["notes"]["text_cut"], 0.0) << asks["words"]["text cut"];
}

// Lesson 3's second step asks a number and one of three replicas: its three short choices stand
// side by side, so at 1280x720 the questions and the run button read whole while the class
// predicts (a line each, 100 px of them had been hidden below the strip).
TEST_F(GuiApp, ShortChoicesStandSideBySideSoTheQuestionsReadWhole) {
  const auto asks = projected("--lesson 3 --lesson-step 2 --unanswered", "asks.json", 5);
  const auto& lesson = asks["panels"]["Lesson"];
  EXPECT_EQ(lesson["asked_hidden_below_px"], 0.0) << asks.dump(1);
  EXPECT_EQ(lesson["text_hidden_below_px"], 0.0) << asks.dump(1);
  EXPECT_TRUE(panel_says(asks, "Lesson", "/gpu:0 ( ) /gpu:1 ( ) /gpu:2")) << asks.dump(1);
}

// --unanswered with --every-step: each step of lesson 1 before it runs, a worksheet's pictures.
// Steps 1 to 3 ask and show no answer; step 4 asks nothing, so it runs as it would. Each step is
// pictured where the steps before it leave the run: step 1's pause after the split before step
// 2, step 2's after backward before step 3, though neither step's own run was shown.
TEST_F(GuiApp, UnansweredEveryStepPicturesEachStepsQuestionsWithoutAnswers) {
  const Result r = gui("--lesson mirrored-strategy --every-step --unanswered --frames 2" +
                       std::string(" --screenshot ") + path("sheet-{step}.png") + " --report " +
                       path("sheet-{step}.json"));
  ASSERT_EQ(r.status, 0) << r.output;
  for (int step = 1; step <= 4; ++step) {
    const std::string number = std::to_string(step);
    EXPECT_GT(fs::file_size(path(("sheet-" + number + ".png").c_str())), 1000u);
    const auto report = read_json(path(("sheet-" + number + ".json").c_str()));
    const auto& lesson = report["panels"]["Lesson"];
    EXPECT_EQ(lesson["step"], step) << report.dump(1);
    const bool asks = lesson.value("questions", 0.0) > 0;
    EXPECT_EQ(asks, step < 4) << report.dump(1);
    EXPECT_EQ(report["words"].contains("answer 1"), false) << report.dump(1);
    EXPECT_EQ(lesson.contains("checks_passed"), !asks) << report.dump(1);
    EXPECT_EQ(report["notes"]["held_within_step"], step == 2 || step == 3 ? 1.0 : 0.0)
        << report.dump(1);
    EXPECT_EQ(report["notes"]["steps_done"], step == 4 ? 6.0 : 0.0) << report.dump(1);
  }
}

TEST_F(GuiApp, EveryStepIsRefusedWithoutALessonOrWithAFileOfOneNameForEveryStep) {
  const std::string report = path("report.json"), each = path("report-{step}.json");
  const std::string picture = path("step-{step}.png");  // a picture's name: only the path clashes
  for (const auto& [args, words] : std::vector<std::pair<std::string, std::string>>{
           {"--every-step --report " + each, "give --lesson too"},
           {"--lesson 1 --every-step", "give --screenshot or --report"},
           {"--lesson 1 --every-step --report " + report, "put {step} in its path"},
           {"--lesson 1 --report " + each, "filled in by --every-step only"},
           {"--lesson 1 --every-step --report " + picture + " --screenshot " + picture,
            "writes the same file"},
           {"--lesson 1 --every-step --report " + each + " --steps 3", "leave them out"},
           {"--unanswered --report " + report, "give --lesson too"},
           {"--lesson 1 --unanswered", "give --screenshot (or --report)"},
           {"--lesson 1 --unanswered --report " + report + " --steps 3", "would run it"},
           {"--lesson 1 --unanswered --report " + report + " --run", "would run it"},
           {"--lesson 1 --every-step --report " + each + " --run", "leave them out"}}) {
    const Result r = gui(args + " --frames 2");
    EXPECT_EQ(r.status, 2) << args << "\n" << r.output;
    EXPECT_NE(r.output.find(words), std::string::npos) << args << "\n" << r.output;
    EXPECT_EQ(r.output.find("Loading Fashion-MNIST"), std::string::npos) << r.output;
  }
  EXPECT_TRUE(fs::is_empty(dir_)) << "a refused run writes nothing";
}

// Lesson 10's first step: 2 workers x 2 devices, the Devices panel grouping them by worker.
TEST_F(GuiApp, TheDevicesPanelGroupsTheDevicesOfSeveralWorkers) {
  const std::string json = path("workers.json");
  const Result r = gui("--lesson several-machines --lesson-step 1 --frames 2 --report " + json);
  ASSERT_EQ(r.status, 0) << r.output;
  const auto report = read_json(json);
  EXPECT_EQ(report["panels"]["Devices"]["workers"], 2.0) << report.dump(1);
  EXPECT_EQ(report["panels"]["Controls"]["faults_enabled"], 0.0) << report.dump(1);
  EXPECT_EQ(report["panels"]["Lesson"]["checks_passed"], 3.0) << report.dump(1);
  EXPECT_EQ(report["panels"]["Lesson"]["checks_failed"], 0.0) << report.dump(1);
  EXPECT_EQ(report["panels"]["Devices"]["worker_columns"], 1.0)
      << "the usual layout's narrow panel";
}

// On a projector the lesson's Devices panel spans the window: the workers' devices side by side,
// not one worker under the other, so that the step's questions show whole below them (at
// 1280x720 font 1.5 they scrolled 84 px, and its text 146 px, under 4 rows of memory bars).
TEST_F(GuiApp, OnAProjectorTheWorkersDevicesStandSideBySide) {
  const auto asks =
      projected("--lesson several-machines --lesson-step 1 --unanswered", "asks.json");
  EXPECT_EQ(asks["panels"]["Devices"]["worker_columns"], 2.0) << asks.dump(1);
  EXPECT_EQ(asks["panels"]["Devices"]["worker_devices"], 4.0) << asks.dump(1);
  EXPECT_EQ(asks["panels"]["Lesson"]["asked_hidden_below_px"], 0.0) << asks.dump(1);
  EXPECT_EQ(asks["notes"]["text_cut"], 0.0) << asks["words"].dump(1);
}

#ifdef MIRRORLAB_MPIEXEC
// `mpirun -np 2 mirrorlab gui`: the window on worker 0, worker 1 following its run.
const std::string kMpirun =
    "env OMPI_MCA_btl=self,vader " + mirrorlab::testing::mpirun_test_environment() +
    std::string(MIRRORLAB_MPIEXEC) + " --oversubscribe -np 2 " + kMirrorlab + " gui ";

// Worker 0's Devices panel groups both workers' devices (worker 1's gathered over MPI), the
// strategy found both workers' weights bit-identical after every step, and both ranks end 0.
TEST_F(GuiApp, UnderMpirunWorker0ShowsEveryWorkersDevicesAndBothStayInSync) {
  const std::string json = path("mpi.json"), png = path("mpi.png");
  const Result r = shell(kHeadless + " 1280x800 " + kMpirun +
                         "--model mlp --gpus 2 --train-examples 1024 --steps 3 --frames 2 "
                         "--panel Devices --screenshot " +
                         png + " --report " + json);
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("Worker 1 of 2"), std::string::npos) << r.output;
  const auto report = read_json(json);
  EXPECT_EQ(report["panels"]["Devices"]["workers"], 2.0) << report.dump(1);
  EXPECT_EQ(report["panels"]["Controls"]["faults_enabled"], 0.0) << report.dump(1);
  EXPECT_EQ(report["panels"]["Devices"]["worker_devices"], 4.0) << report.dump(1);
  EXPECT_EQ(report["notes"]["steps_done"], 3.0) << report.dump(1);
  EXPECT_EQ(report["notes"]["workers_found_in_sync"], 3.0) << report.dump(1);
  // Worker 1's own fingerprint, sent after its last step, is worker 0's.
  EXPECT_EQ(report["panels"]["Devices"]["workers_same_weights"], 2.0) << report.dump(1);
  EXPECT_EQ(report["notes"]["session_failed"], 0.0);
  // Worker 1's replicas (2 and 3: Okabe-Ito green and yellow) are drawn, in use.
  const Image image = load_png(png);
  ASSERT_TRUE(image.pixels) << "no PNG written";
  const auto colors = image.colors();
  EXPECT_TRUE(colors.count(0x009E73)) << "replica 2 (worker 1's /gpu:0) is missing";
  EXPECT_TRUE(colors.count(0xF0E442)) << "replica 3 (worker 1's /gpu:1) is missing";
}

// Closing worker 0's window in the middle of training ends every worker cleanly.
TEST_F(GuiApp, UnderMpirunClosingTheWindowMidRunEndsEveryWorker) {
  const Result r = shell("timeout 120 " + kHeadless + " 1280x800 " + kMpirun +
                         "--model mlp --gpus 1 --train-examples 4096 --run --quit-after 4");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("Worker 1 of 2"), std::string::npos) << r.output;
}

// A worker killed while the window trains: worker 0 stops within seconds, naming it.
TEST_F(GuiApp, UnderMpirunAWorkerKilledEndsTheWindowNamingIt) {
  const fs::path log = dir_ / "log";
  const pid_t run = mirrorlab::testing::start_command(
      kHeadless + " 1280x800 " + kMpirun, "--model mlp --gpus 1 --epochs 50 --run", log);
  ASSERT_TRUE(mirrorlab::testing::wait_for_text(log, "Worker 1 of 2", 120))
      << mirrorlab::testing::read_file(log);
  std::this_thread::sleep_for(std::chrono::seconds(3));  // training, in the window
  mirrorlab::testing::expect_worker_1_killed_said(run, log);
}
#endif

TEST_F(GuiApp, ABadLessonIsRefusedBeforeTheDatasetIsRead) {
  for (const auto& [args, words] : std::vector<std::pair<std::string, std::string>>{
           {"--lesson nope", "no lesson \"nope\": the lessons are mirrored-strategy"},
           {"--lesson mirrored-strategy --lesson-step 9", "has steps 1 to 4"},
           {"--lesson /no/such/lesson.md", "/no/such/lesson.md"}}) {
    const Result r = gui(args + " --frames 2");
    EXPECT_EQ(r.status, 2) << args << "\n" << r.output;
    EXPECT_NE(r.output.find(words), std::string::npos) << args << "\n" << r.output;
    EXPECT_EQ(r.output.find("Loading Fashion-MNIST"), std::string::npos) << r.output;
  }
}
#endif

TEST(GuiAppWithoutDisplay, SaysHowToGetOneAndExits2) {
  const Result r =
      shell("env -u DISPLAY -u WAYLAND_DISPLAY " + kMirrorlab + " gui --train-examples 128");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("xvfb-run"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("mirrorlab train"), std::string::npos) << r.output;
  // Said before the dataset's second of loading, not after it.
  EXPECT_EQ(r.output.find("Loading Fashion-MNIST"), std::string::npos) << r.output;
}

TEST(GuiAppWithoutDisplay, UnknownPanelIsABadFlag) {
  const Result r = shell("env -u DISPLAY " + kMirrorlab + " gui --panel Nonsense");
  EXPECT_EQ(r.status, 2) << r.output;
}

}  // namespace
