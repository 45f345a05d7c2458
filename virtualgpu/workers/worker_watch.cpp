#include "virtualgpu/workers/worker_watch.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <sstream>

namespace mirrorlab::vgpu {

bool process_gone(std::int64_t pid) {
  if (pid <= 0) return false;
  if (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) return true;
  // A process that has died but not been reaped by its parent (mpirun's daemon) still answers
  // kill(pid, 0): its state in /proc is Z.
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return false;  // no /proc: only kill() tells
  const std::size_t close = line.rfind(')');    // the name may hold spaces and parentheses
  return close != std::string::npos && close + 2 < line.size() &&
         (line[close + 2] == 'Z' || line[close + 2] == 'X');
}

WorkerWatch::WorkerWatch(std::vector<WorkerPlace> places, int self,
                         std::chrono::milliseconds timeout, Lost on_lost,
                         std::chrono::milliseconds period)
    : places_(std::move(places)),
      self_(self),
      timeout_(timeout),
      period_(period),
      on_lost_(std::move(on_lost)),
      thread_([this] { run(); }) {}

WorkerWatch::~WorkerWatch() { stop(); }

void WorkerWatch::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
}

void WorkerWatch::set_activity(std::string activity) {
  std::lock_guard lock(mutex_);
  activity_ = std::move(activity);
}

void WorkerWatch::enter_collective(const char* what) {
  std::lock_guard lock(mutex_);
  collective_ = what;
  collective_since_ = std::chrono::steady_clock::now();
}

void WorkerWatch::leave_collective() {
  std::lock_guard lock(mutex_);
  collective_ = nullptr;
}

void WorkerWatch::run() {
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    wake_.wait_for(lock, period_, [this] { return stopping_; });
    if (stopping_) break;
    lock.unlock();
    check();
    lock.lock();
  }
}

void WorkerWatch::check() {
  std::string activity;
  const char* collective = nullptr;
  std::chrono::steady_clock::time_point since;
  {
    std::lock_guard lock(mutex_);
    activity = activity_;
    collective = collective_;
    since = collective_since_;
  }
  const std::string self_name = "worker " + std::to_string(self_);
  const WorkerPlace& mine = places_[static_cast<std::size_t>(self_)];
  std::vector<int> elsewhere;
  for (int w = 0; w < static_cast<int>(places_.size()); ++w) {
    if (w == self_) continue;
    const WorkerPlace& place = places_[static_cast<std::size_t>(w)];
    if (place.host != mine.host) {
      elsewhere.push_back(w);
      continue;
    }
    if (process_gone(place.pid)) {
      report(WorkerLoss{w, false,
                        "worker " + std::to_string(w) + " (pid " + std::to_string(place.pid) +
                            " on " + place.host + ") is gone: it exited or was killed while " +
                            self_name + " was in " + activity +
                            ". Every worker takes part in every all-reduce, so " + self_name +
                            " stops too."});
      return;
    }
  }
  if (collective == nullptr) return;
  const auto waited = std::chrono::steady_clock::now() - since;
  if (waited < timeout_) return;
  std::ostringstream text;
  text << self_name << " waited "
       << std::chrono::duration_cast<std::chrono::seconds>(waited).count() << " s in " << collective
       << " (" << activity << ") without every worker taking part: ";
  if (elsewhere.empty()) {
    text << "every other worker is still running on this host, so one of them hangs or is far "
            "slower than the others.";
  } else {
    text << "a worker on another host has died or hangs (";
    for (std::size_t i = 0; i < elsewhere.size(); ++i) {
      const WorkerPlace& place = places_[static_cast<std::size_t>(elsewhere[i])];
      text << (i == 0 ? "" : ", ") << "worker " << elsewhere[i] << " on " << place.host;
    }
    text << "; only workers on this host can be seen exiting).";
  }
  text << " " << self_name << " stops.";
  report(WorkerLoss{-1, true, text.str()});
}

void WorkerWatch::report(WorkerLoss loss) {
  {
    std::lock_guard lock(mutex_);
    if (stopping_) return;
    stopping_ = true;  // once
  }
  if (on_lost_) on_lost_(loss);
}

}  // namespace mirrorlab::vgpu
