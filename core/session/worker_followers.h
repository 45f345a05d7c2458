// `mpirun -np W mirrorlab gui`: the window on worker 0, and workers 1 .. W-1 following it.
//
// Worker 0's window holds the session (training_session.h); that session's other workers are
// the other processes (OtherWorkers, other_workers.h), told over the WorkerGroup what to do
// next, one command at a time, each sent with WorkerGroup::wait_for_text (a follower of a
// window left paused sleeps):
//   build <config>  make a session like worker 0's new one: the devices, then the strategy and
//                   fit loop, each stage followed by one all_gather of every worker's outcome,
//                   so that one that failed anywhere is dropped everywhere
//   step            the next step of that session, then one all_gather of each follower's
//                   outcome, devices (memory) and weights' fingerprint
//   end             the session is gone (the window rebuilt it or is closing)
//   quit            the window has closed: follow_worker_0 returns
// Between these, every worker calls the same collectives (the strategy's), in the same order.
//
// What cannot be called off is a collective under way in another process (MPI's). So a step
// held at a phase boundary runs to its end before its session ends (can_leave_a_step() is
// false), and a step that fails on worker 0 leaves the followers inside that step, beyond
// reach: from then on they are lost (lost() says why), no command is sent again, and worker 0
// leaves without them; they see it gone (the worker watch, virtualgpu/workers/worker_watch.h) and
// stop. A follower whose step fails returns the sentence: its process leaves, and worker 0's watch
// sees it gone and stops likewise, naming it. A follower that cannot build a session (worker 0's
// new settings do not fit it) says so, and the window shows it as a setting that cannot work.
//
// No MPI here: the group is a vgpu::WorkerGroup (MPI's in the app, threads in the tests).
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "core/session/other_workers.h"
#include "core/session/training_session.h"

namespace mirrorlab::core {

// What the followers need of a session's config to build the same (the devices' count and
// limits, the strategy, the fit loop), as text; and back, onto `base` (which keeps its own
// make_devices). Faults and a resumed checkpoint are not sent: sessions of several workers
// refuse them.
std::string session_config_text(const SessionConfig& config);
SessionConfig session_config_from_text(const std::string& text, SessionConfig base);

// Worker 0's side: lives as long as the group.
class WorkerFollowers {
 public:
  explicit WorkerFollowers(vgpu::WorkerGroup& group);  // group.rank() == 0

  // For SessionConfig::other_workers: each session worker 0 builds, the followers build too.
  // Throws std::runtime_error when the followers are lost.
  MakeOtherWorkers maker();
  // "" while the followers follow; else why they cannot any more.
  std::string lost() const;
  // The window has closed, every session with it: each follower's follow_worker_0 returns.
  // Nothing when lost.
  void quit();

  struct Link;  // what the sessions' other workers share with this (other_workers.cpp)

 private:
  std::shared_ptr<Link> link_;
};

// Workers 1 .. W-1: follows worker 0's commands until quit (returns ""), building each session
// from `base` (this worker's make_devices, its own flags' settings) with worker 0's config
// text. Returns the sentence when a step of this worker failed ("worker 1: training step 4
// failed: ..."): the process should say it and leave without another collective.
std::string follow_worker_0(vgpu::WorkerGroup& group, std::shared_ptr<const FashionMnist> data,
                            const SessionConfig& base);

}  // namespace mirrorlab::core
