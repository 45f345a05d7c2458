// One replica's compute on a device, as the device runs it: the kernels of a training step (what
// core/strategy/step_kernels.h lists, as mirrorlab's CUDA backend launches them), each priced as a
// launch plus the larger of its arithmetic at the device's achievable rate and its bytes at the
// memory's bandwidth (a roofline), and the host's own cost of a step beside them:
//
//   compute = host + sum over kernels of ( launch + max(FLOPs / rate, bytes / bandwidth) )
//
// A step of small kernels costs launches (microseconds each, whatever the card); a big one costs
// FLOPs or bytes. The numbers are a topology's [compute] table, each with its source: the launch
// and host costs and the achievable rate fitted to recorded steps (fit_compute), the bandwidth
// and the peak rates from the datasheet. Left out: kernels of one replica overlapping each other
// (the backend queues them on one stream), replicas of one card slowing each other, the first
// step's loading of kernels, and the library's choice of kernel for each shape (cuBLAS splits
// some small products in ways no roofline sees: docs/timing-model.md, section 7).
#pragma once

#include <string>
#include <vector>

namespace mirrorlab::timing {

// What the host queues: one of its own kernels, a library call (cuBLAS: a matrix product or a
// column sum), or a copy within the device's memory. Each costs a launch.
enum class LaunchKind { kKernel, kLibrary, kCopy };

// What one launch of a step does.
struct KernelWork {
  std::string name;  // "gemm", "relu_forward", "adam_update", ...
  std::string part;  // "forward", "backward" or "update"
  LaunchKind kind = LaunchKind::kKernel;
  double flops = 0;  // arithmetic: a multiply-add counts 2
  double bytes = 0;  // read plus written in the device's memory
};

// How a device runs a step's kernels. All in seconds, FLOP/s and bytes/s.
struct ComputeSpec {
  double launch = 0;     // each kernel: its launch, and the least time a kernel takes
  double host = 0;       // each step: the host's work that the kernels wait for
  double rate = 0;       // achievable FLOP/s of the step's arithmetic (FP32, as mirrorlab runs it)
  double bandwidth = 0;  // achievable bytes/s of the memory
  double peak_fp32 = 0;  // the datasheet's peaks, for what is said beside (0: not given)
  double peak_tf32 = 0;  // tensor cores at TF32 (0: none)
  std::string source;    // where each number comes from
  bool given() const { return rate > 0 && bandwidth > 0; }
};

// A step's compute on one device, in parts that add up.
struct ComputeTime {
  int kernels = 0;
  double flop_count = 0, byte_count = 0;
  double launches = 0;  // kernels x launch
  double flops = 0;     // kernels bound by arithmetic: their FLOPs / rate
  double bytes = 0;     // kernels bound by memory: their bytes / bandwidth
  double host = 0;
  double seconds = 0;  // the sum
};

// Throws std::invalid_argument for a spec that is not given or has a negative launch or host
// cost, or a kernel with negative or non-finite work.
ComputeTime compute_time(const std::vector<KernelWork>& kernels, const ComputeSpec& spec);

// A measured step: its kernels and one replica's forward, backward and update, in seconds.
struct ComputeSample {
  std::string label;  // "cnn, 16 a replica"
  std::vector<KernelWork> kernels;
  double seconds = 0;
};

// The host's cost, the achievable rate and the achievable bandwidth that make compute_time()
// closest to the samples in relative terms (least squares of (predicted - measured) / measured),
// the launch given (measured apart: the least time a kernel takes, as a profiler reads it): the
// rate and bandwidth searched on a grid from the peaks given down to a hundredth of them, the host
// by least squares at each (never negative). Throws std::invalid_argument for fewer than three
// samples, a sample with no kernels or a time that is not positive, a peak that is not positive
// or a negative launch.
ComputeSpec fit_compute(const std::vector<ComputeSample>& samples, double launch, double bandwidth,
                        double max_rate);

}  // namespace mirrorlab::timing
