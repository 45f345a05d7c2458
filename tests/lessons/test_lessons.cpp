// Lessons: the reader refuses malformed files with their file and line; the player runs a
// lesson's steps on a live session, threads included (ThreadSanitizer runs these). The course
// itself, every lesson played and broken, is in test_course.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>

#include "core/io/synthetic_dataset.h"
#include "core/strategy/mirrored_strategy.h"
#include "lessons/player/lesson.h"
#include "lessons/player/player.h"
#include "nlohmann/json.hpp"
#include "tests/support/lesson_play.h"
#include "tests/support/settings_variations.h"
#include "tests/support/temp_folder.h"

namespace mirrorlab::lessons {
namespace {

const std::string kHead = "# A lesson\n\n```toml\nid = \"a\"\nminutes = 5\n```\n\n";  // lines 1-6

std::string with_step(const std::string& block) {
  return kHead + "## Step one\n\nSome text.\n\n```toml\n" + block + "```\n";  // block: line 13
}

TEST(LessonReader, ReadsTitleMetadataStepsAndTheirBlocks) {
  const Lesson l = parse_lesson(with_step("look_at = \"Gradients\"\ndo = [{ run_steps = 2 }]\n"
                                          "[setup]\ngpus = 3\nmemory_mib = [512, 256, 256]\n"
                                          "[[check]]\nthat = \"replicas\"\nequals = 3\n"
                                          "says = \"three\"\n"),
                                "x.md");
  EXPECT_EQ(l.title, "A lesson");
  EXPECT_EQ(l.id, "a");
  EXPECT_EQ(l.minutes, 5);
  ASSERT_EQ(l.steps.size(), 1u);
  const LessonStep& s = l.steps[0];
  EXPECT_EQ(s.title, "Step one");
  EXPECT_EQ(s.line, 8);
  ASSERT_EQ(s.text.size(), 1u);
  EXPECT_EQ(s.text[0].plain(), "Some text.");
  EXPECT_EQ(s.look_at, "Gradients");
  ASSERT_TRUE(s.setup);
  EXPECT_EQ(s.setup->devices.gpus, 3);
  EXPECT_EQ(s.setup->devices.memory_limits_mib, (std::vector<std::int64_t>{512, 256, 256}));
  EXPECT_EQ(s.setup_line, 15);
  ASSERT_EQ(s.actions.size(), 1u);
  EXPECT_EQ(s.actions[0].kind, ActionKind::kRunSteps);
  EXPECT_EQ(s.actions[0].count, 2);
  ASSERT_EQ(s.checks.size(), 1u);
  EXPECT_EQ(s.checks[0].line, 18);
}

// A [setup] block takes every run setting but where the devices are (the command line's), by
// its key, read as checkpoints read it: a setting added to core/settings reaches lessons.
TEST(LessonReader, SetupTakesEveryRunSettingByItsKey) {
  const core::RunSettings defaults = lesson_settings_defaults();
  int read = 0;
  for (const mirrorlab::settings_test::Variation& v :
       mirrorlab::settings_test::every_setting_varied(defaults)) {
    SCOPED_TRACE(v.key);
    const std::string value = core::settings_json(v.settings)[v.key].dump();
    const std::string block = "[setup]\n" + v.key + " = " + value + "\n";
    if (v.role == core::SettingRole::kMachine) {
      EXPECT_THROW(parse_lesson(with_step(block), "x.md"), LessonError);
      continue;
    }
    const Lesson l = parse_lesson(with_step(block), "x.md");
    ASSERT_TRUE(l.steps[0].setup);
    EXPECT_TRUE(*l.steps[0].setup == v.settings) << block;
    ++read;
  }
  EXPECT_GE(read, 15);
}

TEST(LessonReader, KeepsStrongCodeAndListsAsStyledParagraphs) {
  const Lesson l = parse_lesson(
      kHead + "Intro with **bold** and `code`.\n\n- one\n- two\n\n## S\n\n```toml\n[setup]\n```\n",
      "x.md");
  ASSERT_EQ(l.introduction.size(), 3u);
  EXPECT_EQ(l.introduction[0].runs.size(), 5u);
  EXPECT_EQ(l.introduction[0].runs[1].style, RunStyle::kStrong);
  EXPECT_EQ(l.introduction[0].runs[3].style, RunStyle::kCode);
  EXPECT_EQ(l.introduction[1].kind, ParagraphKind::kBullet);
  EXPECT_EQ(l.introduction[2].plain(), "two");
}

// Found by fuzz_lesson (fuzz/crashes/lesson/heading-in-a-list-item, "-  #"): a heading inside a
// list item left the item's paragraph open, so the text after the heading went into the step
// before, and closing an empty item popped a paragraph off the new step's empty list.
// A code span that runs over a line starting with "* " is two half spans and a bullet (lesson 8's
// introduction was drawn so): the reader refuses it, saying where and why.
TEST(LessonReader, ACodeSpanLeftOpenBeforeALineThatStartsAListIsRefused) {
  const std::string text = kHead +
                           "The global batch (`BATCH\n* replicas`) grows.\n\n## S\n\n```toml\n"
                           "[setup]\n```\n";
  try {
    parse_lesson(text, "open.md");
    FAIL() << "read";
  } catch (const LessonError& e) {
    EXPECT_NE(std::string(e.what()).find("open.md:1: a ` left open"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("list item"), std::string::npos) << e.what();
  }
  // Closed on its line, it reads.
  EXPECT_NO_THROW(parse_lesson(kHead + "The global batch (`BATCH * replicas`) grows.\n\n## S\n\n"
                                       "```toml\n[setup]\n```\n",
                               "closed.md"));
}

TEST(LessonReader, AHeadingInAListItemStartsAStepThatHoldsTheTextAfterIt) {
  const Lesson l = parse_lesson(
      kHead + "## S\n\n```toml\n[setup]\n```\n\nBefore.\n\n- ## Listed\n  after\n- ## Empty\n",
      "x.md");
  ASSERT_EQ(l.steps.size(), 3u);
  ASSERT_EQ(l.steps[0].text.size(), 1u);
  EXPECT_EQ(l.steps[0].text[0].plain(), "Before.");
  EXPECT_EQ(l.steps[1].title, "Listed");
  ASSERT_EQ(l.steps[1].text.size(), 1u);
  EXPECT_EQ(l.steps[1].text[0].plain(), "after");
  EXPECT_EQ(l.steps[2].title, "Empty");
  EXPECT_TRUE(l.steps[2].text.empty());
  EXPECT_THROW(parse_lesson("-  #", "x.md"), LessonError);  // the fuzzer's input: no title
}

struct Malformed {
  std::string name, text;
  int line;
  std::string says;
};

class MalformedLesson : public ::testing::TestWithParam<Malformed> {};

TEST_P(MalformedLesson, IsRefusedWithItsLineAndWhatWasExpected) {
  const Malformed& m = GetParam();
  try {
    parse_lesson(m.text, "lessons/bad.md");
    FAIL() << "accepted";
  } catch (const LessonError& e) {
    EXPECT_EQ(e.line(), m.line) << e.what();
    EXPECT_EQ(e.file(), "lessons/bad.md");
    EXPECT_NE(std::string(e.what()).find(m.says), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).rfind("lessons/bad.md", 0), 0u) << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(
    Cases, MalformedLesson,
    ::testing::Values(
        Malformed{"NoTitle", "Just text.\n", 0, "no `# Title`"},
        Malformed{"NoMetadata", "# T\n\n## S\n", 1, "one ```toml block with id and minutes"},
        Malformed{"NoId", "# T\n```toml\nminutes = 3\n```\n## S\n", 3, "`id` is missing"},
        Malformed{"MinutesAString", "# T\n```toml\nid = \"t\"\nminutes = \"five\"\n```\n", 4,
                  "`minutes` is not a whole number"},
        Malformed{"MinutesHuge", "# T\n```toml\nid = \"t\"\nminutes = 99999999999\n```\n", 4,
                  "`minutes` is 99999999999, outside ["},
        Malformed{"BadId", "# T\n```toml\nid = \"My Lesson\"\nminutes = 3\n```\n", 3,
                  "lowercase letters"},
        Malformed{"NoSteps", "# T\n```toml\nid = \"t\"\nminutes = 3\n```\n", 0, "no steps"},
        Malformed{"NotToml", with_step("gpus = = 2\n"), 13, "not valid TOML"},
        Malformed{"UnknownKey", with_step("look_at = \"Devices\"\nlok = 1\n"), 14,
                  "unknown key `lok`"},
        Malformed{"MistypedKey", with_step("lok_at = \"Devices\"\n"), 13,
                  "unknown key `lok_at` in a step's block: did you mean `look_at`? (expected one "
                  "of: setup, do, look_at"},
        Malformed{"DeviceNotAGpu", with_step("device = \"gpu1\"\n"), 13,
                  "give a device as \"/gpu:0\" to \"/gpu:7\""},
        Malformed{"DevicePastTheLast", with_step("device = \"/gpu:12\"\n"), 13,
                  "`device = \"/gpu:12\"`"},
        Malformed{"UnknownSetupKey", with_step("[setup]\ngpu = 2\n"), 14,
                  "unknown key `gpu` in [setup]"},
        Malformed{"GpusWrongType", with_step("[setup]\ngpus = \"two\"\n"), 14,
                  "`gpus`: is not a whole number: give a whole number from 1 to 8"},
        Malformed{"GpusHalf", with_step("[setup]\ngpus = 2.5\n"), 14,
                  "`gpus`: is 2.5, not a whole number: give a whole number from 1 to 8"},
        Malformed{"GpusZero", with_step("[setup]\ngpus = 0\n"), 14,
                  "`gpus`: is 0, out of range for a lesson: give a whole number from 1 to 8"},
        Malformed{"SetupChoosesTheBackend", with_step("[setup]\nbackend = \"cuda\"\n"), 14,
                  "unknown key `backend` in [setup]"},
        Malformed{"MomentumAboveOne", with_step("[setup]\nmomentum = 1.5\n"), 14,
                  "`momentum`: is 1.5, out of range: give a number from 0 to 1"},
        Malformed{"WorkersFive", with_step("[setup]\nworkers = 5\n"), 14,
                  "`workers`: is 5, out of range for a lesson: give a whole number from 1 to 4"},
        Malformed{"TooManyGpusInAll", with_step("[setup]\ngpus = 4\nworkers = 3\n"), 13,
                  "12 virtual GPUs: give at most 8 in all"},
        Malformed{"MemoryNegative", with_step("[setup]\nmemory_mib = [-5]\n"), 14,
                  "`memory_mib`: is -5, out of range: give a whole number from 1"},
        Malformed{"MemoryCountWrong", with_step("[setup]\ngpus = 3\nmemory_mib = [1, 2]\n"), 15,
                  "2 limits for 3 GPUs"},
        Malformed{"UnknownModel", with_step("[setup]\nmodel = \"resnet\"\n"), 14,
                  "`model`: is 'resnet', not one of cnn or mlp"},
        Malformed{"UnknownAllReduce", with_step("[setup]\nallreduce = \"tree\"\n"), 14,
                  "`allreduce`: is 'tree', not one of auto,"},
        Malformed{"UnknownLossScaling", with_step("[setup]\nloss_scaling = \"sum\"\n"), 14,
                  "`loss_scaling`: is 'sum', not one of replica-mean"},
        Malformed{"UnknownAction", with_step("do = [{ jump = 3 }]\n[setup]\n"), 13,
                  "unknown key `jump` in an action"},
        Malformed{"TwoActionsInOne",
                  with_step("do = [{ run_steps = 1, finish_step = true }]\n"
                            "[setup]\n"),
                  13, "an action is one of"},
        Malformed{"BadMoment", with_step("do = [{ pause_at = \"after-lunch\" }]\n[setup]\n"), 13,
                  "give one of after-split"},
        Malformed{"RunStepsNegative", with_step("do = [{ run_steps = -1 }]\n[setup]\n"), 13,
                  "`run_steps` is -1, outside ["},
        Malformed{"UnknownPanel", with_step("look_at = \"Gradient\"\n[setup]\n"), 13,
                  "`look_at = \"Gradient\"` (did you mean Gradients?): give a panel"},
        Malformed{"UnknownLiveValue",
                  with_step("[setup]\n[[check]]\nthat = \"lossy\"\nequals = 1\nsays = \"x\"\n"), 14,
                  "unknown live value \"lossy\""},
        Malformed{"ReplicaMissing",
                  with_step("[setup]\n[[check]]\nthat = \"shard_examples\"\n"
                            "equals = 1\nsays = \"x\"\n"),
                  14, "give `replica = N`"},
        Malformed{"TwoComparisons",
                  with_step("[setup]\n[[check]]\nthat = \"replicas\"\n"
                            "equals = 1\nat_most = 2\nsays = \"x\"\n"),
                  14, "compares with one of"},
        Malformed{"NaNTarget",
                  with_step("[setup]\n[[check]]\nthat = \"replicas\"\n"
                            "equals = nan\nsays = \"x\"\n"),
                  16, "finite number"},
        Malformed{"InfiniteTolerance",
                  with_step("[setup]\n[[question]]\nask = \"?\"\n"
                            "answer = \"replicas\"\ntolerance = inf\n"),
                  17, "finite number"},
        Malformed{"ToleranceNeitherANumberNorAPercentage",
                  with_step("[setup]\n[[question]]\nask = \"?\"\n"
                            "answer = \"replicas\"\ntolerance = \"ten\"\n"),
                  17, "or a percentage of the answer over 0 and up to 1000, e.g. \"25%\""},
        Malformed{"CheckWithoutSays",
                  with_step("[setup]\n[[check]]\nthat = \"replicas\"\n"
                            "equals = 1\n"),
                  14, "`says` is missing"},
        Malformed{"OneChoice",
                  with_step("[setup]\n[[question]]\nask = \"?\"\n"
                            "answer = \"replicas\"\nchoices = [\"a\"]\n"),
                  14, "2 or more"},
        Malformed{"TwoBlocks", with_step("[setup]\n") + "\n```toml\n[setup]\n```\n", 17,
                  "one ```toml block per step"},
        Malformed{"FirstStepWithoutSetup", with_step("look_at = \"Devices\"\n"), 8,
                  "needs a [setup]"},
        Malformed{"SecondTitle", with_step("[setup]\n") + "# Another\n", 15, "a second `# Title`"},
        Malformed{"UnknownMachine", with_step("topology = \"dgx-a100\"\n[setup]\n"), 13,
                  "`topology = \"dgx-a100\"`"},
        Malformed{"FinishStepFalse", with_step("do = [{ finish_step = false }]\n[setup]\n"), 13,
                  "`finish_step = false` does nothing"},
        Malformed{"MachineNotAString", with_step("topology = 8\n[setup]\n"), 13,
                  "`topology` is not text"},
        Malformed{"ModelValueWithoutMachine",
                  with_step("[setup]\n[[check]]\nthat = \"model_nccl_us\"\nat_most = 1\n"
                            "says = \"x\"\n"),
                  14, "give the machine first"},
        Malformed{"DevicesOnALiveValue",
                  with_step("[setup]\n[[check]]\nthat = \"replicas\"\ndevices = 2\n"
                            "equals = 1\nsays = \"x\"\n"),
                  14, "`devices` goes with the timing model's values"},
        // A lesson the run cannot follow: `lesson check` passed these, and the run failed (or
        // dropped a limit) in class.
        Malformed{"PauseAtAStepTheRingHasNot",
                  with_step("do = [{ pause_at = \"allreduce-step-99\" }]\n[setup]\ngpus = 2\n"
                            "allreduce = \"ring\"\n"),
                  13,
                  "`pause_at = \"allreduce-step-99\"`: the run's ring all-reduce on 2 GPUs takes "
                  "2 steps: give allreduce-step-1 to allreduce-step-2"},
        Malformed{"PauseAtAStepOfTheAlgorithmSwitchedFrom",
                  with_step("do = [{ allreduce = \"one-shot\" }, "
                            "{ pause_at = \"allreduce-step-2\" }]\n[setup]\ngpus = 4\n"),
                  13,
                  "the run's one-shot all-reduce on 4 GPUs takes 1 step: give allreduce-step-1"},
        Malformed{"PauseInTheAllReduceOfOneGpu",
                  with_step("do = [{ pause_at = \"allreduce-step-1\" }]\n[setup]\ngpus = 1\n"), 13,
                  "on 1 GPU takes no steps (one replica has no other to sum with)"},
        Malformed{"PauseAtAStepPastTheWorkers",
                  with_step("do = [{ pause_at = \"allreduce-step-5\" }]\n[setup]\ngpus = 2\n"
                            "workers = 2\n"),
                  13,
                  "all-reduce on 2 workers x 2 GPUs takes 4 steps (those within a worker, then "
                  "one across the workers and one back to every device): give allreduce-step-1 "
                  "to allreduce-step-4"},
        Malformed{"MemoryForMoreGpusInAnAction",
                  with_step("do = [{ memory_mib = [512, 256, 128] }]\n[setup]\ngpus = 2\n"), 13,
                  "`memory_mib` gives 3 limits for 2 GPUs: give one, or one each"},
        // fuzz/crashes/lesson/float-beyond-an-integer-in-a-list
        Malformed{"MemoryAFloatBeyondAnyInteger",
                  with_step("do = [{ memory_mib = [2e49] }]\n[setup]\ngpus = 2\n"), 13,
                  "`memory_mib` must hold integers from 1 to "},
        Malformed{"ReplicaPastTheLast",
                  with_step("[setup]\ngpus = 2\n[[check]]\nthat = \"shard_examples\"\n"
                            "replica = 2\nequals = 1\nsays = \"x\"\n"),
                  15, "`replica = 2`: the run has replicas 0 to 1 (one on each of its 2 GPUs)"},
        Malformed{"ReplicaOfAnotherWorker",
                  with_step("[setup]\ngpus = 2\nworkers = 2\n[[question]]\nask = \"?\"\n"
                            "answer = \"shard_examples\"\nreplica = 3\n"),
                  16, "`replica = 3`: the run has replicas 0 to 1 (worker 0's 2 GPUs)"},
        Malformed{"DevicesZero",
                  with_step("topology = \"pcie-2\"\n[setup]\n[[check]]\n"
                            "that = \"model_ring_us\"\ndevices = 0\nat_most = 1\nsays = \"x\"\n"),
                  17, "`devices` is 0, outside ["}),
    [](const ::testing::TestParamInfo<Malformed>& info) { return info.param.name; });

// A step without a [setup] plays the run of the step before, as its actions left it: what it
// pauses at and which replicas it reads are that run's.
TEST(LessonReader, AStepIsCheckedAgainstTheRunTheStepsBeforeLeft) {
  const std::string two_steps = with_step(
      "do = [{ allreduce = \"reduce-to-one\" }]\n[setup]\ngpus = 4\nallreduce = \"ring\"\n");
  // Lines 13-16 are the first step's block, 17 closes it.
  const std::string then = "\n## Step two\n\n```toml\n";  // its block from line 22
  EXPECT_NO_THROW(parse_lesson(two_steps + then +
                                   "do = [{ pause_at = \"allreduce-step-2\" }]\n"
                                   "```\n",
                               "x.md"));
  try {
    parse_lesson(two_steps + then + "do = [{ pause_at = \"allreduce-step-6\" }]\n```\n", "x.md");
    FAIL() << "the ring's 6th step, after the switch to reduce-to-one, was taken";
  } catch (const LessonError& e) {
    EXPECT_EQ(e.line(), 22) << e.what();
    EXPECT_NE(std::string(e.what()).find("reduce-to-one all-reduce on 4 GPUs takes 2 steps"),
              std::string::npos)
        << e.what();
  }
  // The memory limits a step sets up are the run's until one changes them: one for all is fine.
  EXPECT_NO_THROW(parse_lesson(two_steps + then + "do = [{ memory_mib = [512] }]\n```\n", "x.md"));
}

// Some editors write a UTF-8 byte-order mark first: it was read as text before the title, and the
// lesson refused as having none.
TEST(LessonReader, AByteOrderMarkBeforeTheTitleIsSkipped) {
  const Lesson l = parse_lesson("\xEF\xBB\xBF" + with_step("[setup]\n"), "bom.md");
  EXPECT_EQ(l.title, "A lesson");
  EXPECT_EQ(l.id, "a");
  ASSERT_EQ(l.steps.size(), 1u);
  EXPECT_EQ(l.steps[0].line, 8);  // the mark takes no line
}

TEST(LessonReader, ADeviceOrAFolderIsRefusedNotReadForever) {
  for (const char* path : {"/dev/zero", "/tmp"}) {
    try {
      load_lesson(path);
      ADD_FAILURE() << path << " was read";
    } catch (const LessonError& e) {
      EXPECT_NE(std::string(e.what()).find("not a regular file"), std::string::npos) << e.what();
    }
  }
}

TEST(LessonReader, AMissingFileSaysItCannotBeRead) {
  try {
    load_lesson("/nonexistent/lesson.md");
    FAIL();
  } catch (const LessonError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot be read"), std::string::npos);
  }
}

TEST(LessonReader, EveryLessonOfTheCourseIsWellFormedWithUniqueIds) {
  const std::vector<Lesson> course = load_course(MIRRORLAB_SOURCE_DIR "/lessons");
  ASSERT_GE(course.size(), 1u);
  for (const Lesson& l : course) {
    EXPECT_FALSE(l.title.empty());
    bool asks = false;
    for (const LessonStep& s : l.steps) asks = asks || !s.questions.empty();
    EXPECT_TRUE(asks || l.coming) << l.path << " asks nothing before it shows the answer";
  }
}

// A lesson is found by its place in the course too, as 'lesson list' numbers them (1, or 01);
// a number past the last says how many there are.
TEST(LessonReader, ALessonIsFoundByItsNumberInTheCourse) {
  const std::string folder = MIRRORLAB_SOURCE_DIR "/lessons";
  const std::vector<Lesson> course = load_course(folder);
  ASSERT_GE(course.size(), 2u);
  EXPECT_EQ(find_lesson("1", folder).id, course[0].id);
  EXPECT_EQ(find_lesson("01", folder).id, course[0].id);
  EXPECT_EQ(find_lesson("2", folder).id, course[1].id);
  EXPECT_EQ(find_lesson(course[1].id, folder).id, course[1].id);
  for (const std::string& bad : {std::string("0"), std::to_string(course.size() + 1)}) {
    try {
      find_lesson(bad, folder);
      ADD_FAILURE() << bad << " was found";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("numbered 1 to " + std::to_string(course.size())),
                std::string::npos)
          << e.what();
    }
  }
  // A mistyped id: the one meant, then every id.
  try {
    find_lesson("mirrored-strategi", folder);
    ADD_FAILURE() << "a mistyped id was found";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "no lesson \"mirrored-strategi\" (did you mean mirrored-strategy?): the lessons "
                  "are mirrored-strategy, devices"),
              std::string::npos)
        << e.what();
  }
}

// A lecturer's draft in the course's folder (malformed, or a copy whose id is taken) is no
// lesson yet: it keeps its number and stops no other lesson, and asked for, says what is wrong.
TEST(LessonReader, ADraftInTheFolderKeepsItsNumberAndStopsNoOtherLesson) {
  namespace fs = std::filesystem;
  mirrorlab::testing::TempFolder folder("course");
  const fs::path lessons = MIRRORLAB_SOURCE_DIR "/lessons";
  const std::vector<Lesson> real = load_course(lessons);
  ASSERT_GE(real.size(), 2u);
  fs::copy_file(real[0].path, folder.path() / "01-first.md");
  { std::ofstream(folder.path() / "02-draft.md") << "# Draft\n\nnot done\n"; }
  fs::copy_file(real[0].path, folder.path() / "03-copy.md");
  fs::copy_file(real[1].path, folder.path() / "04-second.md");
  const std::vector<CourseFile> course = read_course(folder.path());
  ASSERT_EQ(course.size(), 4u);
  EXPECT_TRUE(course[0].lesson && course[3].lesson);
  ASSERT_TRUE(course[1].problem && course[2].problem);
  EXPECT_NE(std::string(course[1].problem->what()).find("02-draft.md:1:"), std::string::npos);
  EXPECT_NE(std::string(course[2].problem->what()).find("id \"" + real[0].id + "\" is "),
            std::string::npos)
      << course[2].problem->what();
  EXPECT_EQ(find_lesson("1", folder.path()).id, real[0].id);
  EXPECT_EQ(find_lesson("4", folder.path()).id, real[1].id);
  EXPECT_EQ(find_lesson(real[1].id, folder.path()).id, real[1].id);
  EXPECT_THROW(find_lesson("2", folder.path()), LessonError);
  EXPECT_THROW(load_course(folder.path()), LessonError);  // every file a lesson, or none
  try {
    find_lesson("nope", folder.path());
    ADD_FAILURE() << "found";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("shows them, and 2 files that are no lesson yet)"),
              std::string::npos)
        << e.what();
  }
  // A lesson file by any name, and a folder given for one.
  fs::copy_file(real[1].path, folder.path() / "mine.txt");
  EXPECT_EQ(find_lesson((folder.path() / "mine.txt").string()).id, real[1].id);
  EXPECT_THROW(find_lesson(folder.path().string()), std::invalid_argument);
}

// A prediction is echoed as the class gave it: a choice by its text, a number as typed.
TEST(LessonReader, APredictionIsEchoedByItsChoicesTextOrAsTyped) {
  Question q;
  q.choices = {"it is refused", "it runs"};
  EXPECT_EQ(prediction_text(q, "2"), "\"it runs\"");
  EXPECT_EQ(prediction_text(q, "3"), "3");    // no such choice: as typed
  EXPECT_EQ(prediction_text(q, "1x"), "1x");  // not a number
  EXPECT_EQ(prediction_text(Question{}, "0.5"), "0.5");
}

// ---- the player --------------------------------------------------------------------------

PlayerOptions small_data() {
  auto data = std::make_shared<core::FashionMnist>();
  data->train = core::synthetic_dataset(640, 3);
  data->test = core::synthetic_dataset(64, 9);
  PlayerOptions options;
  options.data = data;
  return options;
}

Lesson lesson_one() { return load_lesson(MIRRORLAB_SOURCE_DIR "/lessons/01-mirrored-strategy.md"); }

TEST(LessonPlayer, PlaysLessonOneWithEveryCheckPassing) {
  LessonPlayer player(lesson_one(), small_data());
  EXPECT_EQ(failed_checks(player), std::vector<std::string>{});
  EXPECT_EQ(player.run_error(), "");
}

TEST(LessonPlayer, AnswersQuestionsFromTheLiveRunAndMarksTheGivenAnswer) {
  LessonPlayer player(lesson_one(), small_data());
  player.enter(0);
  ASSERT_TRUE(player.run_actions(60));
  const Question& q = player.step().questions.at(0);  // examples /gpu:1 gets
  EXPECT_EQ(player.answer(q).text, "32");
  EXPECT_TRUE(player.answer(q, "32").correct);
  EXPECT_FALSE(player.answer(q, "31").correct);
  EXPECT_FALSE(player.answer(q, "nan").correct);
  EXPECT_FALSE(player.answer(q, "32 examples").correct);
  ASSERT_TRUE(player.snapshot().held_at);  // paused after the split, as the step says
}

// A tolerance may be a share of the answer: "25%" of 32 takes 24 to 40, not 41 or 23.
TEST(LessonPlayer, APercentageToleranceIsAShareOfTheAnswer) {
  Lesson lesson = lesson_one();
  PlayerOptions options = small_data();
  LessonPlayer player(lesson, options);
  player.enter(0);
  ASSERT_TRUE(player.run_actions(60));
  Question q = player.step().questions.at(0);  // 32 examples
  const std::string text = kHead +
                           "## S\n\n```toml\n[setup]\n[[question]]\nask = \"?\"\nanswer = "
                           "\"replicas\"\ntolerance = \"25%\"\n```\n";
  const Question read = parse_lesson(text, "percent.md").steps.at(0).questions.at(0);
  EXPECT_TRUE(read.tolerance_relative);
  EXPECT_DOUBLE_EQ(read.tolerance, 0.25);
  q.tolerance = read.tolerance;
  q.tolerance_relative = true;
  for (const char* right : {"32", "24", "40", "39.9"}) {
    EXPECT_TRUE(player.answer(q, right).correct) << right;
  }
  for (const char* wrong : {"41", "23", "0", "-32"}) EXPECT_FALSE(player.answer(q, wrong).correct);
}

// An answer reads as a class reads it: a time to 3 figures with its unit, bytes in full with
// theirs, a count bare.
TEST(LessonPlayer, AnswersAreRoundedAndCarryTheirUnit) {
  const Lesson lesson =
      parse_lesson(kHead +
                       "## S\n\n```toml\ndo = [{ run_steps = 3 }]\n[setup]\ngpus = 2\n"
                       "batch_per_replica = 16\ntrain_examples = 320\n"
                       "[[question]]\nask = \"?\"\nanswer = \"step_ms\"\ntolerance = \"50%\"\n"
                       "[[question]]\nask = \"?\"\nanswer = \"gradient_bytes\"\n"
                       "[[question]]\nask = \"?\"\nanswer = \"replicas\"\n```\n",
                   "units.md");
  LessonPlayer player(lesson, small_data());
  player.enter(0);
  ASSERT_TRUE(player.run_actions(60));
  const std::vector<Question>& q = player.step().questions;
  const std::string ms = player.answer(q.at(0)).text;
  EXPECT_TRUE(ms.ends_with(" ms")) << ms;
  const std::string digits = ms.substr(0, ms.size() - 3);
  EXPECT_LE(std::count_if(digits.begin(), digits.end(),
                          [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }),
            4)
      << ms;  // 3 significant figures (and a leading 0 below 1 ms)
  const std::string bytes = player.answer(q.at(1)).text;
  EXPECT_TRUE(bytes.ends_with(" bytes")) << bytes;
  EXPECT_EQ(player.answer(q.at(2)).text, "2");
}

// A slow machine's step (a sanitizer build, a busy laptop) takes over a second: still three
// significant digits, never "1.16e+03 ms".
TEST(LessonPlayer, AnswersOfAThousandOrMoreHaveNoExponent) {
  EXPECT_EQ(answer_text("step_ms", 1163.4), "1,160 ms");
  EXPECT_EQ(answer_text("step_ms", 11634.2), "11,600 ms");
  EXPECT_EQ(answer_text("model_step_us", 999.7), "1,000 \u00b5s");  // %.3g: "1e+03"
  EXPECT_EQ(answer_text("step_ms", 65.27), "65.3 ms");
  EXPECT_EQ(answer_text("step_ms", -1234.5), "-1,230 ms");
  EXPECT_EQ(answer_text("gradient_bytes", 2821752), "2,821,752 bytes");  // groups of three
  EXPECT_EQ(answer_text("replicas", 16), "16");
}

// A prediction is read as a student types it in a terminal: with spaces, its digits grouped as
// the answers show them, a decimal comma, a "%" for a percent; not a number with a word after it.
// (Before: "2,821,752" and " 16" were marked wrong whatever their value.)
TEST(LessonPlayer, APredictionIsReadAsAStudentTypesIt) {
  Question bytes;
  bytes.value = "gradient_bytes";
  EXPECT_EQ(read_prediction(bytes, "2,821,752"), 2821752.0);
  EXPECT_EQ(read_prediction(bytes, " 2821752 "), 2821752.0);
  EXPECT_EQ(read_prediction(bytes, "-1,230.5"), -1230.5);
  EXPECT_EQ(read_prediction(bytes, "0,5"), 0.5);
  EXPECT_EQ(read_prediction(bytes, "0,500"), 0.5);  // a decimal comma, not 500
  EXPECT_EQ(read_prediction(bytes, "+1,234"), 1234.0);
  // A pasted line of any length is no number, and no crash (a regex recursed per group).
  std::string pasted = "1";
  for (int i = 0; i < 50000; ++i) pasted += ",000";
  EXPECT_EQ(read_prediction(bytes, pasted), std::nullopt);  // 1e150000: not finite
  EXPECT_EQ(read_prediction(bytes, "1,000." + std::string(50000, '0')), 1000.0);
  EXPECT_EQ(read_prediction(bytes, "1e3"), 1000.0);
  for (const char* not_one :
       {"", "  ", "nan", "inf", "32 examples", "1,2,3", "12,34,567", "1.5,0", "50%"}) {
    EXPECT_EQ(read_prediction(bytes, not_one), std::nullopt) << "'" << not_one << "'";
  }
  Question percent;
  percent.value = "allreduce_hidden_percent";
  EXPECT_EQ(read_prediction(percent, "47%"), 47.0);
  EXPECT_EQ(read_prediction(percent, "47.2 %"), 47.2);
}

TEST(LessonPlayer, GoingBackReplaysTheRunUpToThatStep) {
  LessonPlayer player(lesson_one(), small_data());
  for (int i = 0; i < 4; ++i) {
    player.enter(i);
    ASSERT_TRUE(player.run_actions(60));
  }
  EXPECT_EQ(*player.read("steps_done", -1), 6);
  player.enter(1);
  ASSERT_TRUE(player.run_actions(60));
  EXPECT_EQ(*player.read("steps_done", -1), 0);  // held inside the first step again
  EXPECT_GT(*player.read("gradient_spread_before", -1), 0);
}

// Drives only what is replayed before the step's own actions: true once done.
bool replay(LessonPlayer& player) {
  for (int k = 0; k < 30000 && !player.advance_replay(); ++k) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return player.replayed();
}

core::StepBoundary held_boundary(const LessonPlayer& player) {
  const auto& held = player.snapshot().held_at;
  return held ? held->boundary : core::StepBoundary::kSplit;
}

// The GUI asks a step's questions once the steps before it are replayed: entered directly, the
// run stands where they leave it, and the step's own pause has not begun.
TEST(LessonPlayer, AStepEnteredDirectlyIsReplayedUpToItsOwnActions) {
  LessonPlayer player(lesson_one(), small_data());
  player.enter(2);  // the all-reduce: steps 1 and 2 pause after the split, then after backward
  EXPECT_FALSE(player.replayed());
  ASSERT_TRUE(replay(player));
  ASSERT_TRUE(player.snapshot().held_at.has_value());
  EXPECT_EQ(held_boundary(player), core::StepBoundary::kBackward);
  EXPECT_FALSE(player.actions_done()) << "its own pause is left for its run";
  ASSERT_TRUE(player.run_actions(60));
  EXPECT_EQ(held_boundary(player), core::StepBoundary::kAllReduceStep);
}

// Next before a step ran (a class that skipped a step's run, or a worksheet's pictures): what it
// would have done is done before the next step's own, so the next step starts where it expects
// and a lesson walked through unrun ends where a played one does.
TEST(LessonPlayer, AStepLeftBeforeItRanLeavesItsActionsToTheNext) {
  LessonPlayer player(lesson_one(), small_data());
  player.enter(0);
  player.enter(1);
  EXPECT_FALSE(player.replayed());
  ASSERT_TRUE(replay(player));
  ASSERT_TRUE(player.snapshot().held_at.has_value());
  EXPECT_EQ(held_boundary(player), core::StepBoundary::kSplit) << "step 1's pause, not step 2's";
  player.enter(2);
  player.enter(3);
  ASSERT_TRUE(player.run_actions(60));
  EXPECT_EQ(*player.read("steps_done", -1), 6);
  EXPECT_EQ(*player.read("replicas_in_sync", -1), 1);
}

// Breaks the sync: after the all-reduce, replica 1's gradients are changed before the update.
class Desync : public core::StepListener {
 public:
  core::StepNeeds begin_step(const core::StepStart& start) override {
    replicas_ = start.replicas;
    return {true, false, false};
  }
  void on_all_reached(const core::PausePoint& p) override {
    if (p.boundary == core::StepBoundary::kAllReduceStep &&
        p.all_reduce_step + 1 == p.all_reduce_steps && replicas_.size() > 1) {
      replicas_[1]->model().grads()[0] += 1.0f;
    }
  }

 private:
  std::vector<core::Replica*> replicas_;
};

TEST(LessonPlayer, TheSyncCheckFailsWhenTheReplicasUpdateDifferently) {
  PlayerOptions options = small_data();
  auto desync = std::make_shared<Desync>();
  options.on_new_session = [desync](core::TrainingSession& s) {
    s.post([&s, desync] { s.strategy().add_listener(desync.get()); });
  };
  LessonPlayer player(lesson_one(), options);
  // The strategy's own check sees it too and stops the run, so the six steps never all run.
  EXPECT_EQ(failed_checks(player),
            (std::vector<std::string>{"4: after 6 steps both replicas' weights have the same "
                                      "fingerprint",
                                      "4: six global steps ran"}));
  EXPECT_NE(player.run_error(), "");
}

TEST(LessonPlayer, TheChecksOnTheSplitAndTheGradientsFailOnOneDevice) {
  Lesson l = lesson_one();
  l.steps[0].setup->devices.gpus = 1;  // one replica: a global batch of 32, nothing to differ
  LessonPlayer player(std::move(l), small_data());
  const std::vector<std::string> failed = failed_checks(player);
  // One replica has no all-reduce (step 3 cannot pause in one, and says so); its gradients
  // trivially equal themselves after it.
  EXPECT_EQ(failed,
            (std::vector<std::string>{"1: the global batch is 32 per replica x 2 replicas",
                                      "2: the replicas' gradients differ before the all-reduce",
                                      "4: six global steps ran"}));
  EXPECT_EQ(player.run_error(), "pause_at \"allreduce-step-2\": this all-reduce has only 0 steps");
}

// 100 examples on 3 replicas of 32: the second batch has 4, split 2, 2, 0. batch-mean weighs
// each example as one device does; replica-mean (model.fit's) weighs the two shards' means.
Lesson distance_lesson(const std::string& loss_scaling) {
  return parse_lesson(kHead +
                          "## S\n\n```toml\ndo = [{ run_steps = 2 }]\n[setup]\ngpus = 3\n"
                          "batch_per_replica = 32\ntrain_examples = 100\nloss_scaling = \"" +
                          loss_scaling +
                          "\"\n[[check]]\nthat = \"distance_to_one_device\"\nat_most = 1e-5\n"
                          "says = \"as on one device\"\n```\n",
                      "distance.md");
}

TEST(LessonPlayer, TheDistanceToOneDeviceIsSmallOnlyWhenEveryExampleWeighsTheSame) {
  PlayerOptions options = small_data();
  options.data = std::make_shared<core::FashionMnist>(
      core::FashionMnist{core::synthetic_dataset(100, 3), core::synthetic_dataset(64, 9)});
  LessonPlayer exact(distance_lesson("batch-mean"), options);
  EXPECT_EQ(failed_checks(exact), std::vector<std::string>{});
  LessonPlayer model_fit(distance_lesson("replica-mean"), options);
  EXPECT_EQ(failed_checks(model_fit), std::vector<std::string>{"1: as on one device"});
  EXPECT_GT(*model_fit.read("distance_to_one_device", -1), 1e-4);
}

TEST(LessonPlayer, NoOneDeviceReferenceIsTrainedForALessonThatDoesNotLookAtIt) {
  LessonPlayer player(lesson_one(), small_data());
  player.enter(0);
  ASSERT_TRUE(player.run_actions(60));
  EXPECT_EQ(player.read("distance_to_one_device", -1), std::nullopt);
}

// The timing model's values price the run's model on the step's machine: worked out, not
// measured, they are the same on any machine that plays the lesson.
TEST(LessonPlayer, ModelValuesPriceTheRunsModelOnTheStepsMachine) {
  const Lesson l =
      parse_lesson(kHead +
                       "## S\n\n```toml\ntopology = \"dgx-h100\"\n[setup]\nmodel = \"cnn\"\n```\n"
                       "## T\n\n```toml\ntopology = \"laptop-4-logical\"\n```\n"
                       "## U\n\n```toml\ntopology = \"this-machine\"\n```\n",
                   "model.md");
  LessonPlayer player(l, small_data());
  player.enter(0);
  ASSERT_NE(player.machine(), nullptr);
  EXPECT_EQ(player.read("model_gpus", -1), 8.0);
  EXPECT_EQ(player.read("model_nccl_runs", -1), 1.0);
  const double nccl = player.read("model_nccl_us", -1).value_or(0);
  const double reduce_to_one = player.read("model_reduce_to_one_us", -1).value_or(0);
  EXPECT_GT(nccl, 0.0);
  EXPECT_GT(reduce_to_one, nccl);  // everything through one GPU's port
  // On 2 of the 8 GPUs: fewer hops, less time.
  EXPECT_LT(player.read("model_ring_us", -1, 2).value_or(1e9),
            player.read("model_ring_us", -1, 8).value_or(0));
  EXPECT_EQ(player.read("model_speedup", -1, 1), 1.0);
  EXPECT_EQ(player.read("model_gpus", -1, 9), std::nullopt);  // more GPUs than the machine has
  // One card carved in four: no NCCL (a GPU of its own per rank), and compute in turns.
  player.enter(1);
  EXPECT_EQ(player.read("model_gpus", -1), 4.0);
  EXPECT_EQ(player.read("model_nccl_runs", -1), 0.0);
  EXPECT_EQ(player.read("model_nccl_us", -1), std::nullopt);
  EXPECT_EQ(player.read("model_nccl_algorithm", -1), std::nullopt);
  EXPECT_GT(player.read("model_ring_us", -1).value_or(0), 0.0);
  // This machine's fit, where there is none, is said, not crashed on.
  ASSERT_EQ(setenv("MIRRORLAB_FIT_FILE", "/nonexistent/this-machine.toml", 1), 0);
  player.enter(2);
  unsetenv("MIRRORLAB_FIT_FILE");
  EXPECT_EQ(player.machine(), nullptr);
  EXPECT_EQ(player.read("model_ring_us", -1), std::nullopt);
  ASSERT_FALSE(player.notes().empty());
  EXPECT_NE(player.notes().back().find("mirrorlab compare --fit"), std::string::npos)
      << player.notes().back();
}

// Lesson 2 entered at its third step replays the second (the refused reconfiguration) to get
// there; what that step's actions said is the second step's, not the third's.
TEST(LessonPlayer, AStepEnteredDirectlyShowsOnlyItsOwnActionsNotes) {
  LessonPlayer direct(load_lesson(MIRRORLAB_SOURCE_DIR "/lessons/02-devices.md"), small_data());
  direct.enter(1);
  ASSERT_TRUE(direct.run_actions(60));
  ASSERT_EQ(direct.notes().size(), 1u);  // the refusal, said in step 2
  EXPECT_NE(direct.notes()[0].find("cannot be modified"), std::string::npos) << direct.notes()[0];
  LessonPlayer later(load_lesson(MIRRORLAB_SOURCE_DIR "/lessons/02-devices.md"), small_data());
  later.enter(2);
  ASSERT_TRUE(later.run_actions(60));
  EXPECT_EQ(later.notes(), std::vector<std::string>{});
}

TEST(LessonPlayer, AModelThatDoesNotFitIsARunErrorNotACrash) {
  Lesson l = lesson_one();
  l.steps[0].setup->devices.memory_limits_mib = {1};
  LessonPlayer player(std::move(l), small_data());
  player.enter(0);
  ASSERT_TRUE(player.run_actions(10));
  EXPECT_NE(player.run_error().find("/gpu:0"), std::string::npos) << player.run_error();
  EXPECT_EQ(*player.read("run_failed", -1), 1);
  EXPECT_FALSE(player.evaluate(player.step().checks.at(0)).passed);
}

}  // namespace
}  // namespace mirrorlab::lessons
