// Recordings of what a fit or a check of the timing model measured
// (virtualgpu/measure/fit_recording.h): written and read back to the same numbers, bit for bit,
// with each all-reduce's schedule rebuilt as this build models the algorithm; and every file that
// is not such a recording refused with a RecordingError that says where and what, never a crash or
// a silent 0.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "timing/schedule.h"
#include "virtualgpu/measure/fit_recording.h"

namespace {

using mirrorlab::vgpu::FitRecording;
using mirrorlab::vgpu::RecordingError;

// Numbers whose decimal forms are long (what a measurement gives), some peers not measured.
FitRecording a_fit() {
  FitRecording r;
  r.kind = FitRecording::Kind::kFit;
  r.date = "2026-11-27";
  r.machine = "A \"quoted\" CPU @ 2.50GHz";
  r.devices = 4;
  r.engines = 2;
  mirrorlab::timing::MemorySample m;
  m.bytes = 1 << 20;
  m.copy_one = 52242508520.49569;
  m.reduce_one = 64654664528.60235 / 3;
  m.copy_all = 1.0e11 / 7;
  m.reduce_all = 130164446194.82692;
  m.copy_peer_one = 18248188069.863605;
  m.reduce_peer_one = 0;  // not measured
  m.copy_peer_all = std::nextafter(3.5e10, 4e10);
  m.reduce_peer_all = 63146746640.72628;
  r.measured.memory = {m, m};
  r.measured.memory[1].bytes = 3 << 20;
  r.measured.latency = {
      {"ring", mirrorlab::timing::ring_schedule(4, 4096), 2.4789087239583334e-05},
      {"one-shot", mirrorlab::timing::one_shot_schedule(2, 65536), 1.0 / 3e4},
      {"reduce-to-one", mirrorlab::timing::reduce_to_one_schedule(3, 8192), 4.1e-05}};
  r.measured.check = {
      {"reduce-to-one", mirrorlab::timing::reduce_to_one_schedule(4, 1 << 20), 3.1e-3}};
  return r;
}

void expect_same_memory(const mirrorlab::timing::MemorySample& a,
                        const mirrorlab::timing::MemorySample& b) {
  EXPECT_EQ(a.bytes, b.bytes);
  EXPECT_EQ(a.copy_one, b.copy_one);
  EXPECT_EQ(a.reduce_one, b.reduce_one);
  EXPECT_EQ(a.copy_all, b.copy_all);
  EXPECT_EQ(a.reduce_all, b.reduce_all);
  EXPECT_EQ(a.copy_peer_one, b.copy_peer_one);
  EXPECT_EQ(a.reduce_peer_one, b.reduce_peer_one);
  EXPECT_EQ(a.copy_peer_all, b.copy_peer_all);
  EXPECT_EQ(a.reduce_peer_all, b.reduce_peer_all);
}

void expect_same_samples(const std::vector<mirrorlab::timing::AllReduceSample>& a,
                         const std::vector<mirrorlab::timing::AllReduceSample>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].algorithm, b[i].algorithm);
    EXPECT_EQ(a[i].seconds, b[i].seconds);
    EXPECT_EQ(a[i].schedule.ranks, b[i].schedule.ranks);
    EXPECT_EQ(a[i].schedule.bytes, b[i].schedule.bytes);
    // Rebuilt from the algorithm: the same steps and traffic as the one it was measured with.
    EXPECT_EQ(a[i].schedule.steps.size(), b[i].schedule.steps.size());
    EXPECT_EQ(a[i].schedule.memory_traffic(), b[i].schedule.memory_traffic());
  }
}

TEST(FitRecording, AFitReadsBackToTheSameNumbersBitForBit) {
  const FitRecording r = a_fit();
  const std::string text = mirrorlab::vgpu::write_fit_recording(r);
  const FitRecording back = mirrorlab::vgpu::parse_fit_recording(text, "fit.json");
  EXPECT_EQ(back.kind, FitRecording::Kind::kFit);
  EXPECT_EQ(back.date, r.date);
  EXPECT_EQ(back.machine, r.machine);
  EXPECT_EQ(back.devices, 4);
  EXPECT_FALSE(back.cuda);
  EXPECT_EQ(back.engines, 2);
  EXPECT_FALSE(back.interrupted);
  ASSERT_EQ(back.measured.memory.size(), 2u);
  expect_same_memory(back.measured.memory[0], r.measured.memory[0]);
  expect_same_memory(back.measured.memory[1], r.measured.memory[1]);
  expect_same_samples(back.measured.latency, r.measured.latency);
  expect_same_samples(back.measured.check, r.measured.check);
  // One sample to a line, sizes as whole numbers.
  EXPECT_NE(text.find("\n    {\"algorithm\":\"ring\",\"devices\":4,\"bytes\":4096,"),
            std::string::npos)
      << text;
  EXPECT_EQ(mirrorlab::vgpu::write_fit_recording(back), text);
}

TEST(FitRecording, ACheckKeepsTheMemoryBeforeAndAfterOrNone) {
  FitRecording r = a_fit();
  r.kind = FitRecording::Kind::kCheck;
  r.cuda = true;
  r.interrupted = true;
  r.memory_before = r.measured.memory[0];
  r.memory_after = r.measured.memory[1];
  const FitRecording back =
      mirrorlab::vgpu::parse_fit_recording(mirrorlab::vgpu::write_fit_recording(r), "check.json");
  EXPECT_EQ(back.kind, FitRecording::Kind::kCheck);
  EXPECT_TRUE(back.cuda);
  EXPECT_TRUE(back.interrupted);
  // A check's memory is the two around it, not the fit's.
  EXPECT_TRUE(back.measured.memory.empty());
  EXPECT_TRUE(back.measured.latency.empty());
  expect_same_memory(back.memory_before, r.memory_before);
  expect_same_memory(back.memory_after, r.memory_after);
  expect_same_samples(back.measured.check, r.measured.check);

  r.memory_after = {};  // interrupted before it: neither is kept
  const FitRecording none =
      mirrorlab::vgpu::parse_fit_recording(mirrorlab::vgpu::write_fit_recording(r), "check.json");
  EXPECT_EQ(none.memory_before.bytes, 0);
  EXPECT_EQ(none.memory_after.bytes, 0);
}

struct BadRecording {
  const char* what;  // the text replaced in a good recording ("" : the whole text)
  const char* with;
  const char* expected_words;
};
void PrintTo(const BadRecording& b, std::ostream* os) {
  *os << '"' << b.what << "\" -> \"" << b.with << '"';
}

class FitRecordingRefuses : public ::testing::TestWithParam<BadRecording> {};

TEST_P(FitRecordingRefuses, WithWhereAndWhat) {
  std::string text = mirrorlab::vgpu::write_fit_recording(a_fit());
  const BadRecording& bad = GetParam();
  if (std::string(bad.what).empty()) {
    text = bad.with;
  } else {
    const std::size_t at = text.find(bad.what);
    ASSERT_NE(at, std::string::npos) << bad.what << " in\n" << text;
    text.replace(at, std::string(bad.what).size(), bad.with);
  }
  try {
    mirrorlab::vgpu::parse_fit_recording(text, "bad.json");
    FAIL() << "read:\n" << text;
  } catch (const RecordingError& e) {
    EXPECT_EQ(e.file(), "bad.json");
    EXPECT_NE(std::string(e.what()).find(bad.expected_words), std::string::npos) << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(
    Files, FitRecordingRefuses,
    ::testing::Values(
        BadRecording{"", "", "not JSON (parse error at line 1, column 1"},
        BadRecording{"", "[1, 2]", "not a JSON object"},
        BadRecording{"", "{\"format\": \"mirrorlab compare measurements\"}", "version is missing"},
        BadRecording{"mirrorlab compare measurements", "a topology", "its format is not"},
        BadRecording{"\"version\": 1", "\"version\": 2", "version 2 was written by a newer"},
        BadRecording{"\"version\": 1", "\"version\": 1.5", "version is 1.5, not a whole number"},
        BadRecording{"\"kind\": \"fit\"", "\"kind\": \"sweep\"",
                     "kind is 'sweep', not one of fit, check"},
        BadRecording{"\"count\":4", "\"count\":1", "devices.count is 1, outside [2, 64]"},
        BadRecording{"\"count\":4", "\"count\":1e9", "devices.count"},
        BadRecording{"\"type\":\"cpu\"", "\"type\":\"tpu\"",
                     "devices.type is 'tpu', not one of cpu, cuda"},
        BadRecording{"\"engines\":2", "\"engines\":-1", "devices.engines is -1, outside [0, 64]"},
        BadRecording{"\"interrupted\": false", "\"interrupted\": 0",
                     "interrupted is not true or false"},
        BadRecording{"\"copy_one\":52242508520.49569", "\"copy_one\":NaN", "not JSON"},
        BadRecording{"\"copy_one\":52242508520.49569", "\"copy_one\":1e400",
                     "not JSON (number overflow"},
        BadRecording{"\"copy_one\":52242508520.49569", "\"copy_one\":0",
                     "memory[0].copy_one is 0, outside [1e+06, 1e+14]"},
        // 1 byte/s, or more than any memory moves: what no topology file holds (1 MB/s to 100
        // TB/s), and the fit could not be read back.
        BadRecording{"\"copy_one\":52242508520.49569", "\"copy_one\":1",
                     "memory[0].copy_one is 1, outside [1e+06, 1e+14]"},
        BadRecording{"\"copy_all\":14285714285.714285", "\"copy_all\":1e15",
                     "memory[0].copy_all is 1e+15, outside [1e+06, 1e+14]"},
        BadRecording{"\"copy_one\":52242508520.49569", "\"copy_one\":\"fast\"",
                     "memory[0].copy_one is not a number"},
        BadRecording{"\"reduce_peer_one\":0.0", "\"reduce_peer_one\":-1",
                     "memory[0].reduce_peer_one is -1, outside [1e+06, 1e+14] and not 0"},
        BadRecording{"\"bytes\":1048576", "\"bytes\":-1048576",
                     "memory[0].bytes is -1048576, outside [1, 1e+15]"},
        BadRecording{"\"memory\": [", "\"memory\": [], \"was\": [", "memory holds no samples"},
        BadRecording{"\"memory\": [", "\"memory\": {\"a\": 1}, \"was\": [", "memory is not a list"},
        BadRecording{"\"latency\": [", "\"sizes\": [", "latency is missing"},
        // Replayed as "latencies fitted: 0.0 us" before.
        BadRecording{"\"latency\": [", "\"latency\": [], \"was\": [",
                     "latency holds 0 entries, fewer than 3: a fit needs one small all-reduce at "
                     "least for each latency it fits"},
        BadRecording{"\"algorithm\":\"ring\"", "\"algorithm\":\"nccl\"",
                     "latency[0].algorithm is 'nccl', not one of reduce-to-one, ring, one-shot"},
        BadRecording{"\"algorithm\":\"ring\",\"devices\":4", "\"algorithm\":\"ring\",\"devices\":5",
                     "latency[0].devices is 5, outside [2, 4]"},
        BadRecording{"\"bytes\":4096", "\"bytes\":1e300", "latency[0].bytes is 1e+300, outside"},
        BadRecording{"\"seconds\":0.0031", "\"seconds\":0",
                     "check[0].seconds is 0, outside [1e-12, 1e+06]"},
        BadRecording{"\"seconds\":0.0031", "\"seconds\":-0.0031",
                     "check[0].seconds is -0.0031, outside"},
        BadRecording{"\"seconds\":0.0031}", "\"seconds\":0.0031}, 7",
                     "check[1] is not an object"}));

// A fit's three latencies (call, step, move) are fitted to its small all-reduces: a fit that
// holds fewer than three is refused, saying why (and that it was interrupted, when it was).
TEST(FitRecording, AFitWithTooFewSmallAllReducesForItsLatenciesIsRefused) {
  for (const bool interrupted : {false, true}) {
    FitRecording r = a_fit();
    r.interrupted = interrupted;
    r.measured.latency.resize(2);
    try {
      mirrorlab::vgpu::parse_fit_recording(mirrorlab::vgpu::write_fit_recording(r), "cut.json");
      FAIL() << "read with 2 small all-reduces";
    } catch (const RecordingError& e) {
      const std::string said = e.what();
      EXPECT_NE(said.find("latency holds 2 entries, fewer than 3: a fit needs one small "
                          "all-reduce at least for each latency it fits (call, step and move)"),
                std::string::npos)
          << said;
      EXPECT_EQ(said.find("this fit was interrupted before it measured them") != std::string::npos,
                interrupted)
          << said;
      EXPECT_EQ(e.interrupted_too_soon, interrupted) << "measure again, not another file";
    }
  }
  // What compare --record says of it, before it is read back: whether it can be fitted from.
  FitRecording cut = a_fit();
  EXPECT_TRUE(mirrorlab::vgpu::fittable(cut));
  cut.measured.latency.resize(2);
  EXPECT_FALSE(mirrorlab::vgpu::fittable(cut));
  // A check's recording holds none: it fits nothing.
  FitRecording check = a_fit();
  check.kind = FitRecording::Kind::kCheck;
  EXPECT_FALSE(mirrorlab::vgpu::fittable(check));
  EXPECT_NO_THROW(
      mirrorlab::vgpu::parse_fit_recording(mirrorlab::vgpu::write_fit_recording(check), "c.json"));
}

// A recording of `samples` rings on `devices` devices (of 64), as text.
std::string rings(int samples, int devices) {
  FitRecording r = a_fit();
  r.kind = FitRecording::Kind::kCheck;  // its all-reduces all checked ones
  r.devices = 64;
  r.measured.check.assign(samples, {"ring", mirrorlab::timing::ring_schedule(2, 4096), 1e-3});
  std::string text = mirrorlab::vgpu::write_fit_recording(r);
  const std::string two = "\"devices\":2,";
  const std::string more = "\"devices\":" + std::to_string(devices) + ",";
  for (std::size_t at = text.find(two); at != std::string::npos;
       at = text.find(two, at + more.size())) {
    text.replace(at, two.size(), more);
  }
  return text;
}

TEST(FitRecording, HowMuchARecordingHoldsIsBoundedSoThatReadingItStaysQuick) {
  // A fit on 64 devices holds about 250 all-reduces on 2 to 64 of them: it reads.
  const FitRecording big = mirrorlab::vgpu::parse_fit_recording(rings(250, 64), "big.json");
  ASSERT_EQ(big.measured.check.size(), 250u);
  EXPECT_EQ(big.measured.check.back().schedule.ranks, 64);
  // 300 on 64 devices, or more samples than any fit measures, do not.
  try {
    mirrorlab::vgpu::parse_fit_recording(rings(300, 64), "huge.json");
    FAIL();
  } catch (const RecordingError& e) {
    EXPECT_NE(std::string(e.what()).find("check[256] puts the all-reduces so far on more devices"),
              std::string::npos)
        << e.what();
  }
  try {
    mirrorlab::vgpu::parse_fit_recording(rings(10001, 2), "long.json");
    FAIL();
  } catch (const RecordingError& e) {
    EXPECT_NE(std::string(e.what()).find("check holds 10001 entries, more than 10000"),
              std::string::npos)
        << e.what();
  }
}

TEST(FitRecording, AFileThatCannotBeReadIsSaidWithWhy) {
  try {
    mirrorlab::vgpu::read_fit_recording("/no/such/recording.json");
    FAIL();
  } catch (const RecordingError& e) {
    EXPECT_NE(std::string(e.what()).find("/no/such/recording.json: cannot be read"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
