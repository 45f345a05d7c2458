#include "app/train/workers.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <sstream>

#include "CLI/CLI.hpp"
#include "app/flags/flags.h"
#include "app/flags/train_flags.h"
#include "core/io/output_file.h"
#include "virtualgpu/devices/device.h"

#if MIRRORLAB_HAVE_MPI
#include "virtualgpu/mpi/mpi_worker_group.h"
#include "virtualgpu/mpi/nccl_workers.h"
#endif

namespace mirrorlab::app {

void add_worker_flags(CLI::App* cmd, TrainOptions& o) {
  add_whole_number_flag(cmd, "--workers", o.settings.workers, 0, 4096,
                        "Workers (processes, each with --gpus devices), as mpirun -np starts "
                        "them: mpirun -np W mirrorlab train ...; 0: as many as mpirun started");
  add_real_flag(cmd, "--worker-timeout", o.worker_timeout_seconds, 1, 86400,
                "Seconds a worker waits in an exchange for a worker on another host before it "
                "stops (a worker on the same host that dies is seen within 0.1 s)");
}

bool mpi_built() {
#if MIRRORLAB_HAVE_MPI
  return true;
#else
  return false;
#endif
}

namespace {

const char* kInstallMpi =
    "install Open MPI (Debian: apt-get install libopenmpi-dev openmpi-bin, which scripts/setup "
    "does) and build mirrorlab again";

}  // namespace

std::string check_launch(int workers_flag, const vgpu::Launch& launch, bool built) {
  const int w = launch.world_size;
  if (w > 1 && !built) {
    return "this process is one of " + std::to_string(w) + " that " + launch.launcher +
           " started, but this mirrorlab was built without MPI, so each would train alone: " +
           kInstallMpi + ", then run mpirun -np " + std::to_string(w) + " mirrorlab train ...";
  }
  if (workers_flag > 1 && w == 0) {
    return "--workers " + std::to_string(workers_flag) + " needs " + std::to_string(workers_flag) +
           " processes, started by MPI's launcher: mpirun -np " + std::to_string(workers_flag) +
           " mirrorlab train --gpus N ..." +
           (built ? std::string(" (mpirun comes with Debian's openmpi-bin)")
                  : std::string("; this mirrorlab was built without MPI: ") + kInstallMpi);
  }
  if (workers_flag > 0 && w > 0 && workers_flag != w) {
    return "--workers " + std::to_string(workers_flag) + " but " + launch.launcher + " started " +
           std::to_string(w) + " processes: give mpirun -np " + std::to_string(workers_flag) +
           ", or leave --workers out";
  }
  return "";
}

std::unique_ptr<vgpu::WorkerGroup> start_workers(const vgpu::Launch& launch,
                                                 double timeout_seconds) {
  if (launch.world_size <= 1) return nullptr;
#if MIRRORLAB_HAVE_MPI
  const auto timeout = std::chrono::milliseconds(static_cast<std::int64_t>(timeout_seconds * 1e3));
  return std::make_unique<vgpu::MpiWorkerGroup>(timeout, [](const vgpu::WorkerLoss& loss) {
    // On the watch's thread, while another may be blocked in MPI for ever: say it and leave.
    std::fflush(stdout);
    std::fprintf(stderr, "\nmirrorlab: error: %s%s\n", loss.sentence.c_str(),
                 loss.timed_out ? " If the workers are only slow, give --worker-timeout more "
                                  "seconds."
                                : "");
    std::fflush(stderr);
    core::remove_temporary_files_signal_safe();  // the output files not yet written: nothing left
    _exit(1);
  });
#else
  (void)timeout_seconds;
  throw std::logic_error(check_launch(0, launch, false));
#endif
}

std::unique_ptr<vgpu::WorkerGroup> nccl_workers(vgpu::WorkerGroup& workers,
                                                const std::vector<vgpu::Device*>& devices,
                                                std::string* why_not) {
  if (devices.empty() || !devices[0]->is_cuda()) return nullptr;
#if MIRRORLAB_HAVE_MPI
  auto* mpi = dynamic_cast<vgpu::MpiWorkerGroup*>(&workers);
  if (mpi == nullptr) return nullptr;
  try {
    return vgpu::make_nccl_worker_group(*mpi, *devices[0]);
  } catch (const std::exception& e) {
    *why_not = e.what();
  }
#else
  (void)workers;
#endif
  return nullptr;
}

void finish_workers(vgpu::WorkerGroup& workers) {
#if MIRRORLAB_HAVE_MPI
  if (auto* mpi = dynamic_cast<vgpu::MpiWorkerGroup*>(&workers)) mpi->finish();
  vgpu::finalize_mpi();
#else
  (void)workers;
#endif
}

namespace {

// What a worker that gave no flag for setting `key` trains with, in words: the setting's value
// (`value`), or what a value that stands for "not given" means.
std::string default_text(const std::string& key, const std::string& value, const TrainOptions& o) {
  if (key == "gpus") {
    std::string problem;  // said at the start, where the flags are checked
    const int count = device_count(o.settings.devices, &problem);
    return problem.empty() ? std::to_string(count) : value;
  }
  if (key == "max_steps" && value == "0") return "no limit";
  if (key == "train_examples" && value == "0") return "all of the training set";
  if (key == "workers" && value == "0") return "as many as mpirun started";
  if (key == "memory_mib" && value == "(none)") {
    return std::to_string(kDefaultMemoryLimitMib) + " MiB each";
  }
  if (key == "physical_gpus" && value == "(none)") return "the first GPU";
  return value;
}

// The line of `flag` with `value`; for a flag this worker was not given, a tab and the words
// that say so ("gave no --gpus (the default, 2)"), which compare_worker_flags says but does not
// compare: a flag left out and one given its default value train alike.
std::string flag_line(const std::string& flag, const std::string& value, bool given,
                      const std::string& default_words) {
  return flag + " " + value +
         (given ? "" : "\tgave no " + flag + " (the default, " + default_words + ")") + "\n";
}

}  // namespace

std::string train_flag_lines(const TrainOptions& o) {
  // Every setting, by the flag that sets it (a setting no flag sets, by its key), then
  // --worker-timeout, which is no setting of the run but must agree too.
  std::string lines;
  std::istringstream by_key(core::settings_lines(o.settings));
  for (std::string line; std::getline(by_key, line);) {
    const std::size_t space = line.find(' ');
    const std::string key = line.substr(0, space), value = line.substr(space + 1);
    const std::string flag = flag_for_setting(key);
    if (flag.empty()) {
      lines += line + "\n";
    } else {
      lines += flag_line(flag, value, o.given.count(flag) > 0, default_text(key, value, o));
    }
  }
  std::ostringstream timeout;
  timeout << o.worker_timeout_seconds;
  lines += flag_line("--worker-timeout", timeout.str(), o.given.count("--worker-timeout") > 0,
                     timeout.str());
  // Worker 0 writes the files, with every worker's part gathered from the others (an exchange
  // they all make only when the files are asked for): each is asked on every worker or on none.
  // The paths may differ (each host its own folders).
  const auto asked = [](const char* flag, const std::string& path) {
    return std::string(flag) + (path.empty() ? " (not given)\n" : " (a file)\n");
  };
  return lines + asked("--history", o.history_file) + asked("--trace", o.trace_file);
}

std::string compare_worker_flags(const std::vector<std::string>& lines_by_worker) {
  const auto split = [](const std::string& text) {
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
  };
  // A line is "--flag value", then for a flag not given a tab and how to say it.
  const auto compared = [](const std::string& line) { return line.substr(0, line.find('\t')); };
  const auto said = [](const std::string& line) {
    const std::size_t tab = line.find('\t');
    return tab == std::string::npos ? "has " + line : line.substr(tab + 1);
  };
  const std::vector<std::string> first = split(lines_by_worker.at(0));
  for (std::size_t w = 1; w < lines_by_worker.size(); ++w) {
    const std::vector<std::string> other = split(lines_by_worker[w]);
    for (std::size_t i = 0; i < std::max(first.size(), other.size()); ++i) {
      const std::string a = i < first.size() ? first[i] : "nothing";
      const std::string b = i < other.size() ? other[i] : "nothing";
      if (compared(a) != compared(b)) {
        return "the workers were started with different flags: worker " + std::to_string(w) + " " +
               said(b) + " where worker 0 " + said(a) +
               ". Every worker must train with the same flags (mpirun gives every rank the "
               "same command line unless it is told otherwise)";
      }
    }
  }
  return "";
}

std::string not_for_workers(const TrainOptions& o) {
  const char* flag = !o.checkpoint_dir.empty() ? "--checkpoint-dir"
                     : !o.resume_dir.empty()   ? "--resume"
                     : !o.faults.empty()       ? "the fault flags"
                                               : nullptr;
  if (flag == nullptr) return "";
  return std::string(flag) +
         " is not built for several workers yet (each worker would act on its own): run it "
         "without mpirun";
}

std::string agree_to_train(vgpu::WorkerGroup& workers, const std::string& own_problem,
                           const std::string& flag_lines) {
  const std::vector<std::string> all = workers.all_gather(own_problem + '\x1f' + flag_lines);
  std::vector<std::string> flags;
  std::string problem;
  for (std::size_t w = 0; w < all.size(); ++w) {
    const std::size_t cut = all[w].find('\x1f');
    if (problem.empty() && cut > 0) {
      problem = (w == 0 ? "" : "worker " + std::to_string(w) + ": ") + all[w].substr(0, cut);
    }
    flags.push_back(all[w].substr(cut + 1));
  }
  return problem.empty() ? compare_worker_flags(flags) : problem;
}

bool announce_worker(vgpu::WorkerGroup& workers) {
  const vgpu::WorkerPlace& place = workers.places()[static_cast<std::size_t>(workers.rank())];
  std::printf("Worker %d of %d, pid %lld on %s, in TensorFlow's words: TF_CONFIG='%s'\n",
              workers.rank(), workers.size(), static_cast<long long>(place.pid), place.host.c_str(),
              vgpu::tf_config(workers).c_str());
  std::fflush(stdout);
  return workers.rank() == 0 || std::freopen("/dev/null", "w", stdout) != nullptr;
}

std::string check_same_data(vgpu::WorkerGroup& workers, const core::FashionMnist& data) {
  const std::vector<std::string> all = workers.all_gather(describe_data(data));
  for (std::size_t w = 1; w < all.size(); ++w) {
    if (all[w] != all[0]) {
      return "the workers read different data: worker " + std::to_string(w) + " has " + all[w] +
             ", worker 0 " + all[0] + ". Give every worker the same --data.";
    }
  }
  return "";
}

void gather_workers(vgpu::WorkerGroup& workers, const std::vector<vgpu::Device*>& devices,
                    const std::vector<core::PhaseTotals>& totals, nlohmann::json* history_workers,
                    std::vector<core::TraceProcess>* trace) {
  nlohmann::json parts = nlohmann::json::array();
  for (std::size_t d = 0; d < devices.size(); ++d) {
    nlohmann::json phases = nlohmann::json::object();
    for (int p = 0; p < core::kNumPhases; ++p) {
      phases[core::to_string(static_cast<core::Phase>(p))] = d < totals.size() ? totals[d][p] : 0.0;
    }
    parts.push_back({{"name", devices[d]->name()},
                     {"phase_seconds", phases},
                     {"peak_memory_bytes", devices[d]->memory().peak()}});
  }
  MergedRun merged =
      merge_worker_parts(workers.all_gather(worker_part(workers, parts, trace->at(0).events)));
  *history_workers = std::move(merged.workers);
  *trace = std::move(merged.trace);
}

std::string describe_data(const core::FashionMnist& data) {
  std::uint64_t hash = 14695981039346656037ull;  // FNV-1a over the training labels, in order
  for (const std::uint8_t label : data.train.labels) hash = (hash ^ label) * 1099511628211ull;
  char text[128];
  std::snprintf(text, sizeof text, "%zu training and %zu test images (labels %016llx)",
                data.train.size(), data.test.size(), static_cast<unsigned long long>(hash));
  return text;
}

std::string worker_part(const vgpu::WorkerGroup& workers, const nlohmann::json& devices,
                        const std::vector<core::TraceEvent>& events) {
  nlohmann::json trace = nlohmann::json::array();
  for (const core::TraceEvent& e : events) {
    trace.push_back({e.device, static_cast<int>(e.phase), e.step, e.begin_us, e.end_us, e.bytes,
                     e.pack, static_cast<int>(e.lane)});
  }
  const vgpu::WorkerPlace& place = workers.places()[static_cast<std::size_t>(workers.rank())];
  return nlohmann::json{
      {"worker", workers.rank()}, {"host", place.host},
      {"pid", place.pid},         {"tf_config", nlohmann::json::parse(vgpu::tf_config(workers))},
      {"devices", devices},       {"trace", trace}}
      .dump();
}

MergedRun merge_worker_parts(const std::vector<std::string>& parts) {
  MergedRun merged;
  for (const std::string& text : parts) {
    nlohmann::json part = nlohmann::json::parse(text);
    core::TraceProcess process;
    process.name = "worker " + std::to_string(part["worker"].get<int>()) + " (pid " +
                   std::to_string(part["pid"].get<std::int64_t>()) + " on " +
                   part["host"].get<std::string>() + ")";
    for (const auto& device : part["devices"]) process.lanes.push_back(device["name"]);
    for (const auto& e : part["trace"]) {
      process.events.push_back(core::TraceEvent{
          e[0].get<int>(), static_cast<core::Phase>(e[1].get<int>()), e[2].get<std::int64_t>(),
          e[3].get<double>(), e[4].get<double>(), e[5].get<std::size_t>(), e[6].get<int>(),
          e[7].get<int>() == 1 ? core::Lane::kCommunication : core::Lane::kCompute});
    }
    merged.trace.push_back(std::move(process));
    part.erase("trace");
    merged.workers.push_back(std::move(part));
  }
  return merged;
}

}  // namespace mirrorlab::app
