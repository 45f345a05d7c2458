// Every value flag of every command goes through app/flags/flags.h: parsed strictly, refusing NaN,
// infinities, negatives, fractions, non-numbers, out-of-range values and empty list entries with
// a sentence naming the flag. The command line is parsed in-process, without running anything.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "CLI/CLI.hpp"
#include "app/command_line.h"
#include "app/flags/fault_flags.h"
#include "app/flags/flags.h"
#include "core/session/text/console_text.h"
#include "tests/support/command_output.h"

namespace {

using mirrorlab::app::CommandLine;

// `mirrorlab` and every command under it, at every depth ("lesson run" too).
std::vector<CLI::App*> every_command(CommandLine& command_line) {
  std::vector<CLI::App*> commands = {&command_line.app()};
  for (std::size_t i = 0; i < commands.size(); ++i) {
    for (CLI::App* sub : commands[i]->get_subcommands({})) commands.push_back(sub);
  }
  return commands;
}

struct ValueFlag {
  std::vector<std::string> command;  // {"bench", "allreduce"}
  std::string name;                  // "--lr"
  std::string type;                  // "N", "X", "SIZE", "cnn|mlp", "TEXT", ...
  bool checked = false;              // carries the kCheckedFlag validator
};

void collect(CLI::App* app, std::vector<std::string> path, std::vector<ValueFlag>& out) {
  for (CLI::Option* option : app->get_options()) {
    if (option->get_expected_max() == 0) continue;  // a plain flag (--run, --help)
    bool checked = true;
    try {
      option->get_validator(mirrorlab::app::kCheckedFlag);
    } catch (const CLI::OptionNotFound&) {
      checked = false;
    }
    out.push_back({path, option->get_name(), option->get_type_name(), checked});
  }
  for (CLI::App* sub : app->get_subcommands({})) {
    std::vector<std::string> deeper = path;
    deeper.push_back(sub->get_name());
    collect(sub, deeper, out);
  }
}

std::vector<ValueFlag> every_value_flag() {
  CommandLine command_line;
  std::vector<ValueFlag> flags;
  collect(&command_line.app(), {}, flags);
  return flags;
}

// The type names our numeric adders give (a list flag's names end in "...]").
bool is_numeric(const ValueFlag& flag) {
  const std::string& t = flag.type;
  return t == "N" || t == "X" || t == "SIZE" || t == "STEPS" || t.find("...]") != std::string::npos;
}
bool is_list(const ValueFlag& flag) { return flag.type.find("...]") != std::string::npos; }

std::string parse_error(const ValueFlag& flag, const std::string& value) {
  std::vector<std::string> args = flag.command;
  // A positional argument (mirrorlab lesson run ID) is given as it is.
  args.push_back(flag.name.starts_with("-") ? flag.name + "=" + value : value);
  CommandLine command_line;
  return command_line.parse_error(args);
}

TEST(Flags, EveryValueFlagOfEveryCommandGoesThroughTheOneCheckedPath) {
  const std::vector<ValueFlag> flags = every_value_flag();
  ASSERT_GT(flags.size(), 30u);  // train, gui, bench allreduce, devices
  for (const ValueFlag& flag : flags) {
    std::string where;
    for (const std::string& c : flag.command) where += c + " ";
    EXPECT_TRUE(flag.checked) << where << flag.name
                              << " was added without app/flags/flags.h: use add_*_flag";
  }
}

TEST(Flags, EveryNumberFlagRefusesNanInfinitiesNegativesHugeAndNonNumbers) {
  int numeric = 0;
  for (const ValueFlag& flag : every_value_flag()) {
    if (!is_numeric(flag)) continue;
    ++numeric;
    for (const std::string value :
         {"nan", "NaN", "inf", "-inf", "infinity", "-1", "-0.5", "1e300", "-1e300",
          "99999999999999999999999", "abc", "", "12abc", "0x10", "1,5"}) {
      if (is_list(flag) && value == "1,5") continue;  // two entries: fine for a list
      const std::string error = parse_error(flag, value);
      EXPECT_NE(error.find(flag.name), std::string::npos)
          << flag.name << "=" << value << " must be refused naming the flag; got: '" << error
          << "'";
    }
  }
  EXPECT_GE(numeric, 20);
}

// Zero means "none" or "no limit" for some flags (--max-steps 0, --refresh-hz 0, -w 0; --workers
// 0: as many as mpirun started; --momentum 0: plain SGD; --bytes-per-pack 0 and --num-packs 0:
// one pack, TensorFlow's default); for the others it is refused like any value out of range.
TEST(Flags, ZeroIsRefusedWhereItMeansNothing) {
  const std::vector<std::string> zero_allowed = {
      "--max-steps",      "--train-examples",  "--max-fps",    "--refresh-hz",   "--steps",
      "--phases",         "--measure-seconds", "--quit-after", "--warmup_iters", "--seed",
      "--devices",        "--model-step",      "--keep",       "--workers",      "--momentum",
      "--bytes-per-pack", "--num-packs"};
  int refused = 0;
  for (const ValueFlag& flag : every_value_flag()) {
    if (!is_numeric(flag)) continue;
    const std::string error = parse_error(flag, "0");
    const bool allowed =
        std::find(zero_allowed.begin(), zero_allowed.end(), flag.name) != zero_allowed.end();
    if (allowed) {
      EXPECT_EQ(error, "") << flag.name << "=0 means none or no limit";
    } else {
      EXPECT_NE(error.find(flag.name), std::string::npos) << flag.name << "=0: " << error;
      ++refused;
    }
  }
  EXPECT_GE(refused, 15);
}

TEST(Flags, EveryListFlagRefusesEmptyEntries) {
  int lists = 0;
  for (const ValueFlag& flag : every_value_flag()) {
    if (!is_list(flag)) continue;
    ++lists;
    for (const std::string value : {"1,", ",1", "1,,1", ",", "1, ,1"}) {
      const std::string error = parse_error(flag, value);
      EXPECT_NE(error.find("is empty"), std::string::npos)
          << flag.name << "=" << value << ": " << error;
      // No example of another flag's values (--slow-device was told "e.g. 1024,512").
      EXPECT_EQ(error.find("e.g."), std::string::npos) << flag.name << ": " << error;
    }
  }
  EXPECT_GE(lists, 6);  // --memory-limit and --devices of four commands
}

TEST(Flags, EveryTextFlagRefusesAnEmptyValue) {
  for (const ValueFlag& flag : every_value_flag()) {
    if (is_numeric(flag)) continue;
    EXPECT_NE(parse_error(flag, "").find(flag.name), std::string::npos) << flag.name;
  }
}

TEST(Flags, MessagesSayWhatIsWrongAndTheRealBounds) {
  CommandLine a;
  EXPECT_NE(a.parse_error({"train", "--gpus", "abc"})
                .find("'abc' is not a whole number: give a "
                      "whole number from 1 to 64"),
            std::string::npos);
  CommandLine b;
  EXPECT_NE(b.parse_error({"train", "--lr", "1e-10"})
                .find("'1e-10' is out of range: give a number from 1e-09 to 10"),
            std::string::npos);
  CommandLine c;
  EXPECT_NE(c.parse_error({"train", "--lr", "nan"}).find("'nan' is not a number"),
            std::string::npos);
  CommandLine d;
  EXPECT_NE(d.parse_error({"train", "--model", "cnn", "--model", "mlp"})
                .find("--model: given 2 times ('cnn', 'mlp'): give it once"),
            std::string::npos);
  CommandLine e;
  EXPECT_NE(e.parse_error({"frobnicate"}).find("'frobnicate' is not a command"), std::string::npos);
  CommandLine f;
  EXPECT_NE(f.parse_error({"bench", "allreduce", "-b", "7"}).find("not a multiple of 4"),
            std::string::npos);
  CommandLine g;
  EXPECT_NE(g.parse_error({"bench", "allreduce", "-b", "-1"}).find("'-1' is negative"),
            std::string::npos);
  CommandLine h;
  const std::string seed = h.parse_error({"train", "--seed=-1"});
  EXPECT_NE(seed.find("'-1' is negative"), std::string::npos) << seed;
  CommandLine i;
  EXPECT_NE(i.parse_error({"train", "--seed", "18446744073709551616"}).find("too large"),
            std::string::npos);
  CommandLine j;
  EXPECT_NE(j.parse_error({"train", "--memory-limit", "1024,"}).find("entry 2 of 2 is empty"),
            std::string::npos);
  CommandLine k;
  EXPECT_NE(k.parse_error({"bench", "allreduce", "-f", "nan"}).find("--stepfactor"),
            std::string::npos);
  CommandLine l;
  EXPECT_NE(l.parse_error({"bench", "allreduce", "--algorithms", "ring,ring"})
                .find("'ring' is listed twice"),
            std::string::npos);
}

// A flag the command does not have is named, with the one most likely meant: a letter or two
// away, the one flag it begins, or the flag whose help says its words. CLI11's own message was
// "The following arguments were not expected: 2 --gpu".
TEST(Flags, AnUnknownFlagIsNamedWithTheOneMeant) {
  const auto said = [](const std::vector<std::string>& args) {
    return CommandLine().parse_error(args);
  };
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"train", "--gpu", "2"}, "mirrorlab train: no flag --gpu (did you mean --gpus?)\n"},
      {{"train", "--modle", "mlp"}, "no flag --modle (did you mean --model?)\n"},
      {{"train", "--epoch=3"}, "no flag --epoch (did you mean --epochs?)\n"},
      {{"train", "--mem", "5"}, "no flag --mem (did you mean --memory-limit?)\n"},
      {{"train", "--learning-rate", "0.1"}, "no flag --learning-rate (did you mean --lr?)\n"},
      {{"compare", "--topolgy", "dgx-h100"}, "no flag --topolgy (did you mean --topology?)\n"},
      {{"train", "--frobnicate"}, "mirrorlab train: no flag --frobnicate\n"},
      {{"train", "-x"}, "mirrorlab train: no flag -x\n"},
      {{"train", "--gpus", "2", "3"}, "'3' follows no flag"}};
  for (const auto& [args, words] : cases) {
    const std::string error = said(args);
    EXPECT_NE(error.find(words), std::string::npos) << args[1] << ": " << error;
    EXPECT_NE(error.find("--help' for the flags"), std::string::npos) << error;
  }
}

// A command that is not one is named with the one most likely meant, as a flag is: a letter or
// two away, or the one command it begins; none where nothing is near.
TEST(Flags, AnUnknownCommandIsNamedWithTheOneMeant) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"trian"}, "mirrorlab: 'trian' is not a command (did you mean train?); the commands are"},
      {{"comp"}, "'comp' is not a command (did you mean compare?)"},
      {{"devcies"}, "(did you mean devices?)"},
      {{"bench", "allredcue"},
       "mirrorlab bench: 'allredcue' is not a command (did you mean "
       "allreduce?)"}};
  for (const auto& [args, words] : cases) {
    const std::string error = CommandLine().parse_error(args);
    EXPECT_NE(error.find(words), std::string::npos) << args.back() << ": " << error;
  }
  EXPECT_EQ(CommandLine().parse_error({"frobnicate"}).find("did you mean"), std::string::npos);
  // A choice too.
  EXPECT_NE(CommandLine()
                .parse_error({"train", "--allreduce", "rign"})
                .find("--allreduce: 'rign' is not one of auto, reduce-to-one, ring, one-shot, nccl "
                      "(did you mean ring?)"),
            std::string::npos);
}

// A flag given without its value, an on-or-off flag given one it cannot be, and a command's
// missing argument are said as what was wrong and what to give. CLI11's own words were
// "--gpus: 1 required N missing", "Could not convert: --overlap = maybe", "file is required".
TEST(Flags, AMissingOrImpossibleValueSaysWhatToGive) {
  std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"train", "--gpus"},
       "mirrorlab train: --gpus: no value after it: give one, as in --gpus N\n"},
      {{"train", "--model"}, "--model: no value after it: give one, as in --model cnn|mlp\n"},
      {{"compare", "--topology"}, "as in --topology ID|FILE\n"},
      {{"train", "--no-overlap=maybe"},
       "--overlap is on or off, not \"maybe\": --overlap turns it on, --no-overlap off\n"},
      {{"train", "--sm-split=abc"},
       "--sm-split is on or off, not \"abc\": give --sm-split alone to turn it on\n"}};
#ifdef MIRRORLAB_HAVE_LESSONS
  cases.push_back({{"lesson", "check"},
                   "mirrorlab lesson check: which file? give it after the command, as in: "
                   "mirrorlab lesson check FILE\n"});
  cases.push_back({{"lesson", "run"}, "which lesson? give it after the command"});
#endif
  for (const auto& [args, words] : cases) {
    const std::string error = CommandLine().parse_error(args);
    EXPECT_NE(error.find(words), std::string::npos) << args[1] << ": " << error;
    EXPECT_NE(error.find("--help' for the flags"), std::string::npos) << error;
  }
}

// A fault's step the run never makes says which steps it does: a range, the one step, or none
// left (a run resumed at its end), each count in English ("1 step").
TEST(Flags, AFaultStepOutsideTheRunSaysWhichStepsThereAre) {
  mirrorlab::core::FaultPlan plan;
  plan.failures.push_back({.device = 1, .step = 5});
  EXPECT_EQ(mirrorlab::app::check_fault_steps(plan, 0, 1),
            "--fail-device /gpu:1@5: the run makes 1 step, so step 5 never comes; give step 1");
  EXPECT_EQ(mirrorlab::app::check_fault_steps(plan, 0, 3),
            "--fail-device /gpu:1@5: the run makes 3 steps, so step 5 never comes; give a step "
            "from 1 to 3");
  EXPECT_EQ(mirrorlab::app::check_fault_steps(plan, 8, 8),
            "--fail-device /gpu:1@5: the run goes on from step 8 (its checkpoint), so step 5 "
            "never comes; no step is left to run");
  EXPECT_EQ(mirrorlab::app::check_fault_steps(plan, 4, 9), "");
}

// A flag with a "no" form shows its two names in the help, not the value each sets: CLI11 wrote
// "--overlap,--no-overlap{false}", which reads as if overlap were off unless asked for.
TEST(Flags, AFlagWithANoFormShowsItsTwoNamesInTheHelp) {
  CommandLine command_line;
  const std::vector<CLI::App*> commands = every_command(command_line);
  for (const CLI::App* command : commands) {
    const std::string help = command->help();
    EXPECT_EQ(help.find("{false}"), std::string::npos) << help;
    EXPECT_EQ(help.find("{true}"), std::string::npos) << help;
  }
  CLI::App* train = command_line.app().get_subcommand("train");
  EXPECT_NE(train->help().find("--overlap,--no-overlap "), std::string::npos) << train->help();
  EXPECT_NE(train->help().find("--cuda-graphs,--no-cuda-graphs"), std::string::npos);
  EXPECT_GT(commands.size(), 8u) << "every command and its subcommands";
}

// Every command's help fits an 80-column terminal (a description was one line of up to 500
// columns), and says every word of each flag's and command's description, in order.
TEST(Flags, EveryHelpFitsIn80ColumnsAndSaysEveryDescriptionWhole) {
  setenv("COLUMNS", "80", 1);  // an 80-column terminal, whatever runs the test
  CommandLine command_line;
  const std::vector<CLI::App*> commands = every_command(command_line);
  for (const CLI::App* command : commands) {
    const std::string help = command->help();
    std::istringstream lines(help);
    for (std::string line; std::getline(lines, line);) {
      EXPECT_LE(mirrorlab::core::character_count(line), 80u) << command->get_name() << ":\n"
                                                             << line;
    }
    const std::string read = mirrorlab::testing::unwrapped(help);
    for (const CLI::Option* option : command->get_options()) {
      EXPECT_NE(read.find(mirrorlab::testing::unwrapped(option->get_description())),
                std::string::npos)
          << option->get_name() << " in " << command->get_name();
    }
    for (const CLI::App* sub : command->get_subcommands({})) {
      EXPECT_NE(read.find(sub->get_description()), std::string::npos) << sub->get_name();
    }
  }
  EXPECT_GT(commands.size(), 8u) << "every command and its subcommands";
}

TEST(Flags, GoodValuesLandInTheOptions) {
  CommandLine cl;
  ASSERT_EQ(
      cl.parse_error({"train", "--lr", "0.01", "--gpus", "3", "--memory-limit", "512,256,128",
                      "--seed", "18446744073709551615", "--model", "mlp", "--max-steps", "+7",
                      "--optimizer", "sgd", "--momentum", "0.5", "--loss-scaling", "batch-mean"}),
      "");
  const mirrorlab::core::RunSettings& s = cl.train_options.settings;
  EXPECT_EQ(s.optimizer.learning_rate, 0.01f);
  EXPECT_EQ(s.devices.gpus, 3);
  EXPECT_EQ(s.devices.memory_limits_mib, (std::vector<std::int64_t>{512, 256, 128}));
  EXPECT_EQ(s.seed, std::numeric_limits<std::uint64_t>::max());
  EXPECT_EQ(s.model, mirrorlab::core::ModelKind::kMlp);
  EXPECT_EQ(s.max_steps, 7);
  EXPECT_EQ(s.optimizer.kind, mirrorlab::core::OptimizerKind::kSgd);
  EXPECT_EQ(s.optimizer.momentum, 0.5f);
  EXPECT_EQ(s.loss_scaling, mirrorlab::core::LossScaling::kBatchMean);

  CommandLine bench;
  ASSERT_EQ(bench.parse_error({"bench", "allreduce", "-b", "4K", "-e", "64MiB", "-f", "4",
                               "--algorithms", "ring,one-shot"}),
            "");
  EXPECT_EQ(bench.bench_options.sweep.min_bytes, 4096u);
  EXPECT_EQ(bench.bench_options.sweep.max_bytes, std::uint64_t{64} << 20);
  EXPECT_EQ(bench.bench_options.algorithms, (std::vector<std::string>{"ring", "one-shot"}));

  CommandLine gui;
  ASSERT_EQ(gui.parse_error({"gui", "--font-scale", "1.5", "--refresh-hz", "0"}), "");
  EXPECT_FLOAT_EQ(gui.gui_options.app.font_scale, 1.5f);
  EXPECT_EQ(gui.gui_options.app.refresh_hz, 0.0);
}

TEST(FlagParsing, StepsOrEpochsTakeAnEForEpochs) {
  using mirrorlab::app::parse_steps_or_epochs;
  mirrorlab::app::StepsOrEpochs v;
  EXPECT_EQ(parse_steps_or_epochs("500", 1000, &v), "");
  EXPECT_EQ(v.count, 500);
  EXPECT_FALSE(v.epochs);
  EXPECT_EQ(parse_steps_or_epochs("2e", 1000, &v), "");
  EXPECT_EQ(v.count, 2);
  EXPECT_TRUE(v.epochs);
  for (const auto& [text, problem] : std::vector<std::pair<std::string, std::string>>{
           {"0", "'0' is out of range"},
           {"0e", "'0e' is out of range"},
           {"1001", "'1001' is out of range"},
           {"-3e", "'-3e' is out of range"},
           {"1.5e", "'1.5e' is not a whole number of epochs"},
           {"1e3", "'1e3' is not a whole number"},
           {"e", "'e' is not a whole number"},
           {"nan", "'nan' is not a number"},
           {"inf", "'inf' is not a finite number"},
           {"2 epochs", "not a whole number"}}) {
    const std::string error = parse_steps_or_epochs(text, 1000, &v);
    EXPECT_NE(error.find(problem), std::string::npos) << text << ": " << error;
    EXPECT_NE(error.find("or of epochs with an e after it"), std::string::npos) << error;
  }
}

TEST(Flags, TrainRemembersWhichFlagsWereGiven) {
  CommandLine cl;
  ASSERT_EQ(cl.parse_error({"train", "--lr", "0.01", "--resume", "dir", "--checkpoint-every", "3e",
                            "--keep", "0"}),
            "");
  EXPECT_EQ(cl.train_options.given,
            (std::set<std::string>{"--lr", "--resume", "--checkpoint-every", "--keep"}));
  EXPECT_EQ(cl.train_options.checkpoint_every.count, 3);
  EXPECT_TRUE(cl.train_options.checkpoint_every.epochs);
  EXPECT_EQ(cl.train_options.resume_dir, "dir");
}

TEST(FlagParsing, SizesTakeBinaryUnits) {
  using mirrorlab::app::parse_bytes;
  std::uint64_t v = 0;
  const std::uint64_t max = std::uint64_t{1} << 40;
  EXPECT_EQ(parse_bytes("4096", 4, max, 4, &v), "");
  EXPECT_EQ(v, 4096u);
  for (const auto& [text, bytes] :
       std::vector<std::pair<std::string, std::uint64_t>>{{"1K", 1024},
                                                          {"1k", 1024},
                                                          {"4KiB", 4096},
                                                          {"4KB", 4096},
                                                          {"16M", 16u << 20},
                                                          {"1G", 1u << 30},
                                                          {"1T", max},
                                                          {"8B", 8}}) {
    EXPECT_EQ(parse_bytes(text, 4, max, 4, &v), "") << text;
    EXPECT_EQ(v, bytes) << text;
  }
  for (const std::string bad : {"2T", "1P", "1Ki", "K", "1.5M", "-4", "4 4", "0", "6"}) {
    EXPECT_NE(parse_bytes(bad, 4, max, 4, &v), "") << bad;
  }
}

TEST(FlagParsing, NumbersAreReadToTheLastCharacter) {
  using mirrorlab::app::parse_real;
  using mirrorlab::app::parse_whole_number;
  double x = 0;
  EXPECT_EQ(parse_real("1e-3", 0, 1, &x), "");
  EXPECT_DOUBLE_EQ(x, 1e-3);
  EXPECT_EQ(parse_real(" +0.5 ", 0, 1, &x), "");
  EXPECT_DOUBLE_EQ(x, 0.5);
  EXPECT_NE(parse_real("0.5x", 0, 1, &x), "");
  EXPECT_NE(parse_real("++1", 0, 2, &x), "");
  std::int64_t n = 0;
  EXPECT_EQ(parse_whole_number("+3", 0, 10, &n), "");
  EXPECT_EQ(n, 3);
  EXPECT_NE(parse_whole_number("3.0", 0, 10, &n), "");
  EXPECT_NE(parse_whole_number("1e1", 0, 100, &n), "");
  EXPECT_NE(parse_whole_number("-9223372036854775809", -100, 100, &n).find("too small"),
            std::string::npos);
}

}  // namespace
