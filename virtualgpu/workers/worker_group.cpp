#include "virtualgpu/workers/worker_group.h"

#include <cstdlib>
#include <vector>

#include "nlohmann/json.hpp"
#include "virtualgpu/devices/device.h"
#include "virtualgpu/devices/device_buffers.h"

namespace mirrorlab::vgpu {

void WorkerGroup::all_reduce_sum(std::span<float> values, Device& holder) {
  if (holder.memory().host_accessible()) {
    all_reduce_sum(values);
    return;
  }
  std::vector<float> staging(values.size());
  read_buffer(holder, values, staging);
  all_reduce_sum(std::span<float>(staging));
  write_buffer(holder, values, staging);
}

bool any_worker_asks(WorkerGroup* workers, bool mine) {
  if (workers == nullptr) return mine;
  double asked = mine ? 1 : 0;
  workers->all_reduce_sum(std::span<double>(&asked, 1));
  return asked > 0;
}

std::string describe_worker(const WorkerGroup& workers, int rank) {
  std::string text = "worker " + std::to_string(rank);
  if (rank >= 0 && rank < static_cast<int>(workers.places().size())) {
    const WorkerPlace& place = workers.places()[static_cast<std::size_t>(rank)];
    text += " (pid " + std::to_string(place.pid) + " on " + place.host + ")";
  }
  return text;
}

std::string WorkerGroup::wait_for_text(const std::string& text, int root) {
  return all_gather(text).at(static_cast<std::size_t>(root));
}

std::string tf_config(const WorkerGroup& workers) { return tf_config(workers, workers.rank()); }

std::string tf_config(const WorkerGroup& workers, int rank) {
  nlohmann::ordered_json addresses = nlohmann::ordered_json::array();
  for (int w = 0; w < workers.size(); ++w) {
    addresses.push_back(workers.places()[static_cast<std::size_t>(w)].host + ":" +
                        std::to_string(20000 + w));
  }
  nlohmann::ordered_json config;
  config["cluster"]["worker"] = addresses;
  config["task"]["type"] = "worker";
  config["task"]["index"] = rank;
  return config.dump();
}

namespace {

// A whole number from the environment, or -1 when it is not set or not a number.
int env_number(const char* name) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return -1;
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  if (*end != '\0' || value < 0 || value > 1 << 20) return -1;
  return static_cast<int>(value);
}

}  // namespace

Launch launched_by() {
  Launch launch;
  if (const int size = env_number("OMPI_COMM_WORLD_SIZE"); size > 0) {
    launch.world_size = size;
    launch.rank = std::max(0, env_number("OMPI_COMM_WORLD_RANK"));
    launch.launcher = "mpirun (Open MPI)";
  } else if (const int pmi = env_number("PMI_SIZE"); pmi > 0) {
    launch.world_size = pmi;
    launch.rank = std::max(0, env_number("PMI_RANK"));
    launch.launcher = "a PMI launcher (MPICH's mpiexec, Slurm's srun)";
  }
  return launch;
}

}  // namespace mirrorlab::vgpu
