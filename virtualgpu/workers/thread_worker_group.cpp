#include "virtualgpu/workers/thread_worker_group.h"

#include <unistd.h>

#include <algorithm>

namespace mirrorlab::vgpu {

// Worker w's view of the shared ThreadWorkers: what its MirroredStrategy calls.
class ThreadWorkers::Handle final : public WorkerGroup {
 public:
  Handle(ThreadWorkers& all, int rank) : all_(&all), rank_(rank) {}

  int rank() const override { return rank_; }
  int size() const override { return all_->size(); }
  const std::vector<WorkerPlace>& places() const override { return all_->places_; }
  std::string transport() const override {
    return "threads of one process (in-process stand-in for MPI)";
  }

  void all_reduce_sum(std::span<float> values) override {
    Slot slot;
    slot.floats = values;
    all_->meet(rank_, slot, [this] { all_->sum(&Slot::floats); });
  }
  void all_reduce_sum(std::span<double> values) override {
    Slot slot;
    slot.doubles = values;
    all_->meet(rank_, slot, [this] { all_->sum(&Slot::doubles); });
  }
  using WorkerGroup::all_reduce_sum;

  void broadcast(std::span<float> values, int root) override {
    if (root < 0 || root >= size()) {
      throw std::invalid_argument("broadcast from worker " + std::to_string(root) + " of " +
                                  std::to_string(size()));
    }
    Slot slot;
    slot.floats = values;
    all_->meet(rank_, slot, [this, root] {
      const std::span<float> from = all_->slots_[static_cast<std::size_t>(root)].floats;
      for (const Slot& s : all_->slots_) {
        if (s.floats.size() != from.size()) {
          throw std::invalid_argument(
              "broadcast between workers of different sizes: " + std::to_string(s.floats.size()) +
              " values against " + std::to_string(from.size()));
        }
      }
      for (const Slot& s : all_->slots_) {
        if (s.floats.data() != from.data()) std::copy(from.begin(), from.end(), s.floats.begin());
      }
    });
  }

  std::vector<std::string> all_gather(const std::string& mine) override {
    std::vector<std::string> gathered;
    Slot slot;
    slot.text = &mine;
    slot.gathered = &gathered;
    all_->meet(rank_, slot, [this] {
      std::vector<std::string> texts;
      for (const Slot& s : all_->slots_) texts.push_back(*s.text);
      for (const Slot& s : all_->slots_) *s.gathered = texts;
    });
    return gathered;
  }

  // Nothing watches threads of one process: a worker that fails says so itself.
  void set_activity(std::string) override {}

 private:
  ThreadWorkers* all_;
  int rank_;
};

ThreadWorkers::ThreadWorkers(int workers)
    : slots_(static_cast<std::size_t>(std::max(workers, 1))), barrier_(std::max(workers, 1)) {
  if (workers < 1) throw std::invalid_argument("a group of workers needs at least one");
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  for (int w = 0; w < workers; ++w) {
    places_.push_back(WorkerPlace{host, static_cast<std::int64_t>(getpid())});
    handles_.push_back(std::make_unique<Handle>(*this, w));
  }
}

ThreadWorkers::~ThreadWorkers() = default;

WorkerGroup& ThreadWorkers::worker(int w) { return *handles_.at(static_cast<std::size_t>(w)); }

void ThreadWorkers::abort(const std::string& why) {
  {
    std::lock_guard lock(why_mutex_);
    if (why_aborted_.empty()) why_aborted_ = why;
  }
  barrier_.abort();
}

void ThreadWorkers::meet(int w, const Slot& slot, const std::function<void()>& exchange) {
  slots_[static_cast<std::size_t>(w)] = slot;  // read only by the last to arrive, under the barrier
  try {
    barrier_.arrive_and_wait(exchange);
  } catch (const CollectiveAborted&) {
    std::lock_guard lock(why_mutex_);
    throw WorkersAborted("worker " + std::to_string(w) + " stopped waiting for the others: " +
                         (why_aborted_.empty() ? "another worker failed" : why_aborted_));
  }
}

template <typename T>
void ThreadWorkers::sum(std::span<T> Slot::*field) {
  const std::size_t n = (slots_[0].*field).size();
  for (const Slot& s : slots_) {
    if ((s.*field).size() != n) {
      throw std::invalid_argument(
          "an all-reduce between workers of different sizes: " + std::to_string((s.*field).size()) +
          " values against " + std::to_string(n));
    }
  }
  // In rank order, into a buffer of its own: every worker gets the same bits.
  std::vector<T> total((slots_[0].*field).begin(), (slots_[0].*field).end());
  for (std::size_t w = 1; w < slots_.size(); ++w) {
    const std::span<T> values = slots_[w].*field;
    for (std::size_t i = 0; i < n; ++i) total[i] += values[i];
  }
  for (const Slot& s : slots_) std::copy(total.begin(), total.end(), (s.*field).begin());
}

}  // namespace mirrorlab::vgpu
