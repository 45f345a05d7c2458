#include "core/session/worker_followers.h"

#include <stdexcept>
#include <utility>

#include "nlohmann/json.hpp"

namespace mirrorlab::core {

// ============================================================================================
// What goes between the workers: a session's config, and each worker's reply
// ============================================================================================

std::string session_config_text(const SessionConfig& c) { return settings_json(c.settings).dump(); }

SessionConfig session_config_from_text(const std::string& text, SessionConfig base) {
  try {
    base.settings = read_settings_json(nlohmann::json::parse(text), base.settings, true);
  } catch (const std::exception& e) {  // not JSON, or a setting this build does not read
    throw std::invalid_argument(std::string("worker 0's settings could not be read here (is every "
                                            "worker the same mirrorlab?): ") +
                                e.what());
  }
  base.faults = FaultPlan{};
  base.resume.reset();
  base.other_workers = nullptr;
  return base;
}

namespace {

// A worker's reply after a command: "" or what failed, its devices and fingerprint.
std::string reply_text(const std::string& error, const std::vector<vgpu::Device*>& devices,
                       std::uint64_t fingerprint) {
  nlohmann::json list = nlohmann::json::array();
  for (const DeviceStatus& d : device_statuses(devices)) {
    list.push_back({d.name, d.what, d.cuda_ordinal, d.limit, d.in_use, d.peak});
  }
  return nlohmann::json{{"error", error}, {"devices", list}, {"fingerprint", fingerprint}}.dump();
}

struct Reply {
  std::string error;
  std::vector<DeviceStatus> devices;
  std::uint64_t fingerprint = 0;
};

Reply read_reply(const std::string& text) {
  Reply reply;
  try {
    const nlohmann::json j = nlohmann::json::parse(text);
    reply.error = j.at("error").get<std::string>();
    for (const auto& d : j.at("devices")) {
      reply.devices.push_back(DeviceStatus{d.at(0).get<std::string>(), d.at(1).get<std::string>(),
                                           d.at(2).get<int>(), d.at(3).get<std::size_t>(),
                                           d.at(4).get<std::size_t>(), d.at(5).get<std::size_t>()});
    }
    reply.fingerprint = j.at("fingerprint").get<std::uint64_t>();
  } catch (const nlohmann::json::exception& e) {
    reply.error = std::string("its reply could not be read: ") + e.what();
  }
  return reply;
}

// The first worker's error among every worker's replies ("worker 1: ..."), or "".
std::string first_error(const std::vector<Reply>& replies) {
  for (std::size_t w = 0; w < replies.size(); ++w) {
    if (!replies[w].error.empty()) return "worker " + std::to_string(w) + ": " + replies[w].error;
  }
  return "";
}

std::vector<Reply> gather_replies(vgpu::WorkerGroup& group, const std::string& mine) {
  std::vector<Reply> replies;
  for (const std::string& text : group.all_gather(mine)) replies.push_back(read_reply(text));
  return replies;
}

std::string place_of(const vgpu::WorkerGroup& group, int w) {
  const vgpu::WorkerPlace& place = group.places().at(static_cast<std::size_t>(w));
  return "pid " + std::to_string(place.pid) + " on " + place.host;
}

}  // namespace

// ============================================================================================
// Worker 0: the other workers of its sessions are the followers
// ============================================================================================

struct WorkerFollowers::Link {
  explicit Link(vgpu::WorkerGroup& g) : group(g) {}
  vgpu::WorkerGroup& group;
  mutable std::mutex mutex;
  std::string lost;  // under mutex

  std::string why_lost() const {
    std::lock_guard lock(mutex);
    return lost;
  }
};

namespace {

class OtherWorkerProcesses final : public OtherWorkers {
 public:
  OtherWorkerProcesses(std::shared_ptr<WorkerFollowers::Link> link, const SessionConfig& config)
      : link_(std::move(link)), group_(link_->group) {
    if (const std::string lost = link_->why_lost(); !lost.empty()) throw std::runtime_error(lost);
    for (int w = 0; w < group_.size(); ++w) {
      statuses_.push_back(WorkerStatus{vgpu::tf_config(group_, w), place_of(group_, w), {}, 0});
    }
    group_.wait_for_text("build\n" + session_config_text(config), 0);
    // The followers' devices, before any strategy meets: one that could not make them stops
    // the build on every worker (each reads every reply).
    const std::vector<Reply> replies = gather_replies(group_, reply_text("", {}, 0));
    if (const std::string error = first_error(replies); !error.empty()) {
      throw std::runtime_error(error);
    }
    keep(replies);
  }

  ~OtherWorkerProcesses() override {
    if (built_ && link_->why_lost().empty()) group_.wait_for_text("end", 0);
  }

  int size() const override { return group_.size(); }
  vgpu::WorkerGroup& worker_0() override { return group_; }
  std::string what_workers_are() const override {
    return "processes started by mpirun (MPI ranks), their memory as of their last step";
  }

  void wait_built(std::exception_ptr mine) override {
    const std::vector<Reply> replies =
        gather_replies(group_, reply_text(mine ? error_text(mine) : "", {}, 0));
    if (mine) std::rethrow_exception(mine);  // every follower read it, and dropped its session
    if (const std::string error = first_error(replies); !error.empty()) {
      throw std::runtime_error(error);
    }
    keep(replies);
    built_ = true;
  }

  void start_step() override {
    // A session whose followers are lost has failed: it takes no step.
    if (link_->why_lost().empty()) group_.wait_for_text("step", 0);
  }

  std::string finish_step() override {
    if (!link_->why_lost().empty()) return "";
    const std::vector<Reply> replies = gather_replies(group_, reply_text("", {}, 0));
    keep(replies);
    return first_error(replies);
  }

  void abort(const std::string& why) override {
    std::lock_guard lock(link_->mutex);
    if (!link_->lost.empty()) return;
    link_->lost = why +
                  ", so the other workers are still inside that step's exchanges, where "
                  "nothing can reach them: they can follow no other run. Close the window; they "
                  "stop when it has closed";
  }

  bool can_leave_a_step() const override { return false; }

  WorkerStatus status(int w) const override {
    std::lock_guard lock(mutex_);
    return statuses_.at(static_cast<std::size_t>(w));
  }

 private:
  void keep(const std::vector<Reply>& replies) {
    std::lock_guard lock(mutex_);
    for (std::size_t w = 1; w < replies.size() && w < statuses_.size(); ++w) {
      statuses_[w].devices = replies[w].devices;
      statuses_[w].fingerprint = replies[w].fingerprint;
    }
  }

  std::shared_ptr<WorkerFollowers::Link> link_;
  vgpu::WorkerGroup& group_;
  bool built_ = false;  // the followers hold a session of this one: tell them when it ends
  mutable std::mutex mutex_;
  std::vector<WorkerStatus> statuses_;  // under mutex_
};

}  // namespace

WorkerFollowers::WorkerFollowers(vgpu::WorkerGroup& group) : link_(std::make_shared<Link>(group)) {}

MakeOtherWorkers WorkerFollowers::maker() {
  return [link = link_](std::shared_ptr<const FashionMnist>, const SessionConfig& config) {
    return std::make_unique<OtherWorkerProcesses>(link, config);
  };
}

std::string WorkerFollowers::lost() const { return link_->why_lost(); }

void WorkerFollowers::quit() {
  if (lost().empty()) link_->group.wait_for_text("quit", 0);
}

// ============================================================================================
// Workers 1 .. W-1: each command of worker 0, until quit
// ============================================================================================

namespace {

struct FollowedSession {
  SessionConfig config;
  vgpu::DeviceRegistry registry;  // before the strategy, which uses its devices
  std::vector<vgpu::Device*> devices;
  std::unique_ptr<MirroredStrategy> strategy;
  std::unique_ptr<FitLoop> loop;
};

// The same stages as worker 0's session and OtherWorkerProcesses: the devices, an exchange; the
// strategy (its collectives meet worker 0's) and fit loop, an exchange. nullptr when any worker
// failed a stage (every worker read it).
std::unique_ptr<FollowedSession> build(vgpu::WorkerGroup& group, const std::string& config_text,
                                       const std::shared_ptr<const FashionMnist>& data,
                                       const SessionConfig& base) {
  auto s = std::make_unique<FollowedSession>();
  std::string problem;
  try {
    s->config = session_config_from_text(config_text, base);
    if (s->config.make_devices) {
      s->config.make_devices(s->registry, session_devices(s->config));
    } else {
      s->registry.set_logical_device_configuration(session_devices(s->config));
    }
    s->devices = s->registry.logical_devices();
  } catch (...) {
    problem = error_text(std::current_exception());
  }
  if (!first_error(gather_replies(group, reply_text(problem, s->devices, 0))).empty())
    return nullptr;
  try {
    s->strategy = std::make_unique<MirroredStrategy>(
        s->devices, strategy_options(s->config.settings), nullptr, &group);
    s->loop = std::make_unique<FitLoop>(*s->strategy, data->train, &data->test,
                                        fit_options(s->config.settings));
  } catch (...) {
    problem = error_text(std::current_exception());
  }
  if (!first_error(gather_replies(group, reply_text(problem, s->devices, 0))).empty())
    return nullptr;
  return s;
}

}  // namespace

std::string follow_worker_0(vgpu::WorkerGroup& group, std::shared_ptr<const FashionMnist> data,
                            const SessionConfig& base) {
  const std::string self = "worker " + std::to_string(group.rank());
  std::unique_ptr<FollowedSession> session;
  while (true) {
    group.set_activity("the wait for the next command of worker 0's window");
    const std::string command = group.wait_for_text("", 0);
    const std::string verb = command.substr(0, command.find('\n'));
    if (verb == "quit") return "";
    if (verb == "end") {
      session.reset();
    } else if (verb == "build") {
      session.reset();  // frees the old devices' memory before the new ones are made
      session = build(group, command.substr(verb.size() + 1), data, base);
    } else if (verb == "step" && session) {
      const std::int64_t step = session->loop->history().steps + 1;
      try {
        if (!session->loop->done()) session->loop->step();
      } catch (const std::exception& e) {
        return self + ": training step " + std::to_string(step) + " failed: " + e.what();
      }
      group.all_gather(
          reply_text("", session->devices, session->strategy->replica(0).last_fingerprint()));
    } else {
      return self + " could not follow worker 0: it asked for '" + verb + "'" +
             (session ? "" : " with no run built") + " (is every worker the same mirrorlab?)";
    }
  }
}

}  // namespace mirrorlab::core
