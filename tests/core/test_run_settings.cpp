// A run's settings as one value (core/settings/run_settings.h): every member is in the one list
// of settings, and every setting goes through each face that carries it (JSON, checkpoints, the
// followers of a window under mpirun) and comes back the same; a setting added to the struct
// and not to the list fails here first.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "core/checkpoint/checkpoint.h"
#include "core/session/session_config.h"
#include "core/session/worker_followers.h"
#include "core/settings/run_settings.h"
#include "nlohmann/json.hpp"
#include "tests/support/settings_variations.h"

namespace {

using namespace mirrorlab;
using nlohmann::json;

// How many members an aggregate has: the most initializers `T{...}` takes (each one any type).
struct AnyMember {
  template <class T>
  operator T() const;  // never called: only its type is asked for
};
template <class T, std::size_t... I>
constexpr bool takes(std::index_sequence<I...>) {
  return requires { T{((void)I, AnyMember{})...}; };
}
template <class T, std::size_t N = 0>
constexpr std::size_t member_count() {
  if constexpr (N < 64 && takes<T>(std::make_index_sequence<N + 1>{})) {
    return member_count<T, N + 1>();
  } else {
    return N;
  }
}

TEST(RunSettings, EveryMemberIsInTheListOfSettings) {
  // RunSettings' own members, but that three of them (the optimizer, the packs, the devices) are
  // visited member by member.
  constexpr std::size_t members =
      member_count<core::RunSettings>() - 3 + member_count<core::OptimizerConfig>() +
      member_count<core::PackOptions>() + member_count<core::DeviceSettings>();
  static_assert(member_count<core::OptimizerConfig>() == 6);
  static_assert(member_count<core::PackOptions>() == 3);
  static_assert(member_count<core::DeviceSettings>() == 6);
  EXPECT_EQ(core::setting_keys().size(), members)
      << "a member of RunSettings, OptimizerConfig, PackOptions or DeviceSettings is not visited "
         "by "
         "for_each_setting (core/settings/run_settings.h): add it there, with its key and range";
  // Each visit is a different member.
  core::RunSettings s;
  std::vector<const void*> seen;
  core::for_each_setting(s, [&](const core::SettingInfo& info, const auto& value) {
    for (const void* other : seen) EXPECT_NE(other, &value) << info.key << " is visited twice";
    seen.push_back(&value);
  });
  const std::vector<std::string> keys = core::setting_keys();
  for (std::size_t i = 0; i < keys.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j) EXPECT_NE(keys[i], keys[j]);
  }
}

TEST(RunSettings, EachSettingComesBackFromJsonAndIsTheOnlyDifference) {
  const core::RunSettings base;
  for (const settings_test::Variation& v : settings_test::every_setting_varied(base)) {
    SCOPED_TRACE(v.key);
    ASSERT_FALSE(v.settings == base) << "the variation changed nothing";
    const std::vector<core::SettingDifference> d = core::setting_differences(base, v.settings);
    ASSERT_EQ(d.size(), 1u);
    EXPECT_EQ(d[0].key, v.key);
    EXPECT_EQ(d[0].role, v.role);
    EXPECT_NE(d[0].first, d[0].second);
    // Through the text, as files and the followers' messages carry it.
    const json written = json::parse(core::settings_json(v.settings).dump());
    EXPECT_TRUE(core::read_settings_json(written, base, true) == v.settings);
    EXPECT_TRUE(core::unknown_setting_keys(written).empty());
  }
}

TEST(RunSettings, JsonKeepsFloatsExactAndWritesThemShort) {
  core::RunSettings s;
  s.optimizer.learning_rate = 0.001f;
  s.optimizer.momentum = 0.1f + 1e-8f;
  s.seed = std::numeric_limits<std::uint64_t>::max();
  const json j = core::settings_json(s);
  EXPECT_EQ(j["learning_rate"].dump(), "0.001");
  EXPECT_TRUE(core::read_settings_json(json::parse(j.dump()), {}, true) == s);
}

TEST(RunSettings, BadValuesAreRefusedNamingTheSetting) {
  const std::vector<std::pair<json, std::string>> cases = {
      {{{"model", "resnet"}}, "`model`: is 'resnet', not one of cnn or mlp"},
      {{{"optimizer", 3}}, "`optimizer`: is not a name: choose sgd, adam or nadam"},
      {{{"learning_rate", 20}},
       "`learning_rate`: is 20, out of range: give a number from 1e-09 to 10"},
      {{{"learning_rate", "fast"}},
       "`learning_rate`: is not a number: give a number from 1e-09 to 10"},
      {{{"momentum", -0.5}}, "`momentum`: is -0.5, out of range: give a number from 0 to 1"},
      {{{"epochs", 1.5}},
       "`epochs`: is 1.5, not a whole number: give a whole number from 1 to 1000"},
      {{{"epochs", 0}}, "`epochs`: is 0, out of range: give a whole number from 1 to 1000"},
      {{{"epochs", 1e4}}, "`epochs`: is 10000.0, out of range: give a whole number from 1 to 1000"},
      {{{"seed", 1e300}}, "`seed`: is 1e+300, out of range: give a whole number from 0 to"},
      {{{"batch_per_replica", -3}}, "`batch_per_replica`: is -3, out of range"},
      {{{"seed", -1}}, "`seed`: is -1, out of range: give a whole number from 0 to the largest"},
      {{{"allreduce", "tree"}}, "`allreduce`: is 'tree', not one of auto, "},
      {{{"backend", "tpu"}}, "`backend`: is 'tpu', not one of cpu, cuda, auto"},
      {{{"memory_mib", {512, 0}}}, "`memory_mib`: is 0, out of range"},
      {{{"memory_mib", "lots"}},
       "`memory_mib`: is not a list ([...]): give a whole number from 1 to"},
      {{{"sm_split", 1}}, "`sm_split`: is not true or false"},
      {{{"loss_scaling", "sum"}},
       "`loss_scaling`: is 'sum', not one of replica-mean, batch-mean, global-batch or "
       "shard-mean"},
  };
  for (const auto& [object, expected] : cases) {
    SCOPED_TRACE(object.dump());
    try {
      core::read_settings_json(object, {});
      ADD_FAILURE() << "accepted";
    } catch (const core::SettingError& e) {
      EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
    }
  }
  // NaN and infinities, which JSON cannot write but a reader of other files may hand over.
  for (const double bad : {std::nan(""), std::numeric_limits<double>::infinity()}) {
    EXPECT_THROW(core::read_settings_json(json{{"learning_rate", bad}}, {}), core::SettingError);
  }
  // A whole number written with a point (TOML's 2.0, 1e3) is that number.
  EXPECT_EQ(core::read_settings_json(json{{"epochs", 3.0}}, {}).epochs, 3);
  EXPECT_EQ(core::read_settings_json(json{{"train_examples", 1e3}}, {}).train_examples, 1000u);
  // A file mirrorlab wrote has every setting: with every_key, one missing is an error.
  json all = core::settings_json({});
  all.erase("momentum");
  EXPECT_THROW(core::read_settings_json(all, {}, true), core::SettingError);
  EXPECT_NO_THROW(core::read_settings_json(all, {}, false));
  EXPECT_EQ(core::unknown_setting_keys(json{{"lr", 1}, {"seed", 2}}),
            std::vector<std::string>{"lr"});
}

// A checkpoint of a run with no weights: enough to carry its settings through both files.
core::Checkpoint checkpoint_of(const core::RunSettings& settings) {
  core::Checkpoint c;
  c.config.settings = settings;
  c.config.settings.train_examples = 100;  // a checkpoint's is the data's size, never "all"
  c.config.replicas = 2;
  c.config.devices = {"/gpu:0", "/gpu:1"};
  return c;
}

TEST(RunSettings, EachSettingComesBackFromACheckpoint) {
  core::RunSettings base;
  base.train_examples = 100;
  for (const settings_test::Variation& v : settings_test::every_setting_varied(base)) {
    SCOPED_TRACE(v.key);
    if (v.key == "train_examples") continue;  // a checkpoint's is the data's size (above)
    const core::Checkpoint c = checkpoint_of(v.settings);
    const core::CheckpointBytes bytes = core::encode_checkpoint(c, "ckpt.safetensors");
    const core::Checkpoint back =
        core::decode_checkpoint(bytes.state, bytes.weights, "ckpt.json", "ckpt.safetensors");
    EXPECT_TRUE(back.config.settings == c.config.settings);
  }
}

// The window's Load checkpoint: the checkpoint's setting where its role says a checkpoint
// carries it (fixed, or changeable and not changed since), the session's own for the devices,
// the workers, the machine and the data the window loaded.
TEST(RunSettings, ALoadedCheckpointKeepsTheSessionsDevicesByTheirRole) {
  core::RunSettings base;
  base.train_examples = 100;
  core::SessionConfig session;
  session.settings = base;
  for (const settings_test::Variation& v : settings_test::every_setting_varied(base)) {
    SCOPED_TRACE(v.key);
    const core::SessionConfig loaded =
        core::config_for_checkpoint(checkpoint_of(v.settings), session);
    const bool carried =
        (v.role == core::SettingRole::kFixed || v.role == core::SettingRole::kChangeable) &&
        v.key != "train_examples";
    EXPECT_TRUE(loaded.settings == (carried ? v.settings : base));
  }
}

TEST(RunSettings, EachSettingReachesTheFollowersOfAWindow) {
  for (const settings_test::Variation& v :
       settings_test::every_setting_varied(core::SessionConfig{}.settings)) {
    SCOPED_TRACE(v.key);
    core::SessionConfig c;
    c.settings = v.settings;
    const core::SessionConfig back =
        core::session_config_from_text(core::session_config_text(c), core::SessionConfig{});
    EXPECT_TRUE(back.settings == v.settings);
  }
}

TEST(RunSettings, LogicalDevicesFollowTheCountAndLimits) {
  core::DeviceSettings d;
  EXPECT_EQ(core::logical_devices(d).size(), 2u);
  d.memory_limits_mib = {512, 256, 128};
  const auto three = core::logical_devices(d);
  ASSERT_EQ(three.size(), 3u);
  EXPECT_EQ(three[2].memory_limit_mib, 128u);
  d.gpus = 4;
  d.memory_limits_mib = {300};
  const auto four = core::logical_devices(d);
  ASSERT_EQ(four.size(), 4u);
  for (const auto& device : four) EXPECT_EQ(device.memory_limit_mib, 300u);
}

}  // namespace
