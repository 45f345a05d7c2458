#include "core/fit.h"

#include <algorithm>
#include <stdexcept>

namespace mirrorlab::core {

Metrics Metrics::from(const LossStats& stats) {
  Metrics m;
  m.examples = stats.count;
  if (stats.count > 0) {
    const double n = static_cast<double>(stats.count);
    m.loss = stats.loss_sum / n;
    m.accuracy = static_cast<double>(stats.correct) / n;
    m.top5_accuracy = static_cast<double>(stats.correct_top5) / n;
  }
  return m;
}

std::int64_t steps_per_epoch(std::size_t examples, std::size_t global_batch) {
  return static_cast<std::int64_t>((examples + global_batch - 1) / global_batch);
}

History fit(MirroredStrategy& strategy, const Dataset& train, const Dataset* validation,
            const FitOptions& options, FitCallback* callback) {
  if (options.epochs < 1) throw std::invalid_argument("epochs must be at least 1");
  if (options.batch_per_replica < 1) throw std::invalid_argument("batch must be at least 1");
  if (train.size() == 0) throw std::invalid_argument("the training set is empty");
  const std::size_t global = options.batch_per_replica * strategy.num_replicas_in_sync();
  const std::int64_t steps = steps_per_epoch(train.size(), global);

  History history;
  for (int epoch = 1; epoch <= options.epochs && !history.stopped_by_max_steps; ++epoch) {
    if (callback) callback->on_epoch_begin(epoch, options.epochs, steps);
    const std::vector<std::uint32_t> order = shuffled_indices(train.size(), options.seed, epoch);
    EpochLog log;
    log.epoch = epoch;
    log.steps_per_epoch = steps;
    LossStats running;
    const auto start = vgpu::Clock::now();
    for (std::int64_t s = 0; s < steps; ++s) {
      if (options.max_steps > 0 && history.steps >= options.max_steps) {
        history.stopped_by_max_steps = true;
        break;
      }
      const std::size_t begin = static_cast<std::size_t>(s) * global;
      const std::size_t count = std::min(global, train.size() - begin);
      const GlobalBatch batch{&train, std::span(order).subspan(begin, count),
                              options.batch_per_replica};
      const LossStats stats = strategy.train_step(batch);
      running += stats;
      history.final_train_loss = Metrics::from(stats).loss;
      ++history.steps;
      ++log.steps;
      history.train_examples += stats.count;
      if (callback) {
        callback->on_batch_end(epoch, s + 1, steps, Metrics::from(running),
                               vgpu::seconds_between(start, vgpu::Clock::now()));
      }
    }
    if (log.steps == 0) break;  // max_steps reached exactly at an epoch boundary
    log.seconds = vgpu::seconds_between(start, vgpu::Clock::now());
    history.train_seconds += log.seconds;
    log.train = Metrics::from(running);
    if (validation != nullptr && validation->size() > 0) {
      log.validation = Metrics::from(strategy.evaluate(*validation, options.batch_per_replica));
      log.has_validation = true;
    }
    history.epochs.push_back(log);
    if (callback) callback->on_epoch_end(log);
    if (options.max_steps > 0 && history.steps >= options.max_steps) {
      history.stopped_by_max_steps = history.steps < steps * options.epochs;
    }
  }
  return history;
}

}  // namespace mirrorlab::core
