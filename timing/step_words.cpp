#include "timing/step_words.h"

#include <algorithm>
#include <cstdio>

namespace mirrorlab::timing {
namespace {

// "1st", "2nd", "3rd", "4th", ..., "11th", "12th", "13th", "21st"
std::string ordinal(int n) {
  const int tens = n % 100, ones = n % 10;
  const char* suffix = (tens >= 11 && tens <= 13) ? "th"
                       : ones == 1                ? "st"
                       : ones == 2                ? "nd"
                       : ones == 3                ? "rd"
                                                  : "th";
  return std::to_string(n) + suffix;
}

std::string device_words(int n) { return std::to_string(n) + (n == 1 ? " device" : " devices"); }

const StepTime& row_of(const std::vector<StepTime>& rows, int devices) {
  // where_adding_stops() names counts of `rows`.
  return *std::find_if(rows.begin(), rows.end(),
                       [&](const StepTime& r) { return r.devices == devices; });
}

}  // namespace

std::string time_text(double seconds) {
  char text[32];
  if (seconds < 1e-3) {
    std::snprintf(text, sizeof text, "%.1f us", seconds * 1e6);
  } else if (seconds < 1) {
    std::snprintf(text, sizeof text, "%.2f ms", seconds * 1e3);
  } else {
    std::snprintf(text, sizeof text, "%.2f s", seconds);
  }
  return text;
}

namespace {

// `value` in thousands, millions, ... of `unit` ("331 MFLOP", "2.65 MB"): 3 figures below 10,
// whole numbers above.
std::string decimal_text(double value, const char* unit) {
  const char* prefixes[] = {"", "k", "M", "G", "T", "P"};
  int prefix = 0;
  while (value >= 1000 && prefix < 5) {
    value /= 1000;
    ++prefix;
  }
  char text[32];
  std::snprintf(text, sizeof text, value < 10 ? "%.2f %s%s" : "%.0f %s%s", value, prefixes[prefix],
                unit);
  return text;
}

}  // namespace

std::string flop_text(double flops) { return decimal_text(flops, "FLOP"); }

std::string engines_sentence(const Topology& t, int engines) {
  if (engines == 0) return "Every GPU computes its own replica, all at the same time.";
  if (t.memory.engines > 0) {
    return std::to_string(engines) + " engine" + (engines == 1 ? "" : "s") +
           " (the topology's: CPU cores) compute at once; replicas beyond them take turns "
           "('in turn': replicas one engine computes one after another).";
  }
  return "Its logical GPUs share one card: their replicas take turns on it ('in turn').";
}

std::string all_reduce_sentence(const std::string& algorithm, bool was_auto, bool nccl) {
  return "All-reduce: " + algorithm +
         (was_auto ? (nccl ? " (auto: TensorFlow 2.21's choice with a GPU per replica)"
                           : " (auto: TensorFlow 2.21's choice where NCCL cannot run)")
                   : "") +
         (nccl ? ", its time from NCCL's own tuning model, which picks its algorithm and protocol."
               : ", its time predicted by the timing model, step by step.");
}

std::string flops_compute_sentence(const Topology& t, double forward, double backward,
                                   double update, std::size_t batch, SecondsText seconds_text) {
  const double flops = (forward + backward) * static_cast<double>(batch) + update;
  const double seconds = compute_seconds(flops, t);
  char text[320];
  std::snprintf(text, sizeof text,
                "scaled to %s's FLOP/s: %s per example (forward %s + backward %s) x %zu, + %s "
                "of update = %s per replica step / %.4g TFLOP/s = %s. A peak FLOP/s: real "
                "kernels on small matrices reach a fraction of it, so this is a lower bound",
                t.id.c_str(), flop_text(forward + backward).c_str(), flop_text(forward).c_str(),
                flop_text(backward).c_str(), batch, flop_text(update).c_str(),
                flop_text(flops).c_str(), t.flops / 1e12, seconds_text(seconds).c_str());
  return text;
}

namespace {

std::string words_number(double x) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3g", x);
  return text;
}

// "379 MB", "2.65 MB", "840 kB"
std::string byte_text(double bytes) { return decimal_text(bytes, "B"); }

}  // namespace

std::string kernels_compute_sentence(const Topology& t, const ComputeTime& parts,
                                     SecondsText seconds_text) {
  const ComputeSpec& c = t.compute;
  const std::string peak =
      c.peak_fp32 > 0 ? ", of " + words_number(c.peak_fp32 / 1e12) + " peak" : std::string();
  // Sized for the machine's id, whatever its length.
  std::string text(512 + t.id.size(), '\0');
  const int written = std::snprintf(
      text.data(), text.size(),
      "its kernels as mirrorlab's CUDA backend launches them, priced on a GPU of %s: %d launches "
      "x %s = %s; %s at %.3g TFLOP/s achievable (FP32%s) where arithmetic bounds a kernel: %s; "
      "%s at %.3g TB/s achievable where memory does: %s; the host's %s a step; in all %s",
      t.id.c_str(), parts.kernels, seconds_text(c.launch).c_str(),
      seconds_text(parts.launches).c_str(), flop_text(parts.flop_count).c_str(), c.rate / 1e12,
      peak.c_str(), seconds_text(parts.flops).c_str(), byte_text(parts.byte_count).c_str(),
      c.bandwidth / 1e12, seconds_text(parts.bytes).c_str(), seconds_text(parts.host).c_str(),
      seconds_text(parts.seconds).c_str());
  text.resize(written > 0 ? std::min(static_cast<std::size_t>(written), text.size() - 1) : 0);
  std::string out = text;
  if (c.peak_tf32 > 0) {
    out +=
        ". TensorFlow 2.21 enables TF32 by default, which would run the matrix products on "
        "tensor cores (" +
        words_number(c.peak_tf32 / 1e12) +
        " TFLOP/s peak): mirrorlab's kernels compute in FP32, and so does this price";
  }
  return out;
}

std::string step_formula_sentence(std::size_t batch) {
  return "step = compute x 'in turn' + all-reduce; images/s = devices x " + std::to_string(batch) +
         " / step (the global batch grows with the devices); speed-up: images/s over one "
         "device's; added: the images/s the last device brought, in one device's images/s.";
}

std::string pays_rule_sentence() {
  char rule[160];
  std::snprintf(rule, sizeof rule,
                "Another device pays for itself while it adds at least %.0f%% of one device's "
                "images/s (added >= %+.2f).",
                100 * kPaysForItself, kPaysForItself);
  return rule;
}

StepVerdict step_verdict(const std::vector<StepTime>& rows, const std::string& larger_batch,
                         SecondsText seconds_text) {
  StepVerdict out;
  if (rows.empty()) return out;
  const StopPoint stop = where_adding_stops(rows);
  if (!stop.stopped) {
    char verdict[200];
    std::snprintf(verdict, sizeof verdict,
                  "Here every device up to %s pays for itself: they give %.2fx the images/s of "
                  "one (the topology has no more).",
                  device_words(stop.devices).c_str(), rows.back().speedup);
    out.verdict = verdict;
    const StepTime& last = rows.back();
    if (rows.size() > 1 && last.replicas_per_engine == 1) {
      char share[32];
      std::snprintf(share, sizeof share, "%.0f%%", 100 * last.all_reduce / last.compute);
      out.why = "Why: the all-reduce (" + seconds_text(last.all_reduce) + " on " +
                device_words(last.devices) + ") is " + share + " of each device's compute (" +
                seconds_text(last.compute) + ").";
    }
    return out;
  }
  const StepTime& before = row_of(rows, stop.devices);
  const StepTime& next = row_of(rows, stop.next);
  const StepTime& best =
      *std::max_element(rows.begin(), rows.end(), [](const StepTime& a, const StepTime& b) {
        return a.images_per_second < b.images_per_second;
      });
  const bool one_more = next.devices == before.devices + 1;
  const std::string which = one_more ? "the " + ordinal(next.devices) + " adds"
                                     : "devices " + std::to_string(before.devices + 1) + " to " +
                                           std::to_string(next.devices) + " add";
  char verdict[320];
  std::snprintf(verdict, sizeof verdict,
                "Here it stops paying after %s: %s %+.2f of a device ('!'%s). The most images/s: "
                "%s, %.2fx one device's.",
                device_words(stop.devices).c_str(), which.c_str(), next.added,
                one_more ? "" : " each", device_words(best.devices).c_str(), best.speedup);
  out.verdict = verdict;
  out.why = next.replicas_per_engine > before.replicas_per_engine
                ? "Why: the engines are all busy, so another replica waits its turn and its "
                  "examples cost as long as the ones before."
                : "Why: the all-reduce (" + seconds_text(next.all_reduce) + " on " +
                      device_words(next.devices) +
                      ") grows beside a compute that does not shrink (" +
                      seconds_text(next.compute) + "); a larger " + larger_batch +
                      " gives each device more work for the same all-reduce.";
  return out;
}

std::string step_left_out_sentence() {
  return "Left out: replicas computing at once slowing each other (shared memory bandwidth and "
         "caches), the batch's split and input pipeline (docs/timing-model.md, section 7).";
}

}  // namespace mirrorlab::timing
