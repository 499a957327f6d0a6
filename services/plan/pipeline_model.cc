#include "services/plan/pipeline_model.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <functional>
#include <queue>
#include <random>
#include <vector>

#include "services/plan/event_queue.h"

namespace rlvla3 {
namespace {

// Env step times: lognormal with the measured mean and cv.
class StepTimes {
 public:
  StepTimes(double mean, double cv, uint64_t seed) : mean_(mean), rng_(seed) {
    const double s2 = std::log(1.0 + cv * cv);
    sigma_ = std::sqrt(s2);
    mu_ = std::log(mean) - s2 / 2;
  }
  double Next() {
    if (sigma_ == 0) return mean_;
    return std::exp(mu_ + sigma_ * normal_(rng_));
  }

 private:
  double mean_, mu_ = 0, sigma_ = 0;
  std::mt19937_64 rng_;
  std::normal_distribution<double> normal_;
};

double InferSeconds(const StageCosts& c, int batch) {
  return c.infer_fixed_s + c.infer_per_obs_s * batch;
}

double LearnSeconds(const StageCosts& c, int samples) {
  return c.learn_per_step_s + c.learn_per_sample_s * samples;
}

// What both modes count.
struct Tally {
  int64_t frames = 0, trained = 0, updates = 0, batches = 0, batched = 0;
  double env_busy = 0, inference_busy = 0, learner_busy = 0, lag_sum = 0;
};

PipelinePrediction Predict(const Tally& t, const PipelineShape& s,
                           double seconds) {
  PipelinePrediction p;
  p.frames_per_s = t.frames / seconds;
  p.samples_per_s = t.trained / seconds;
  p.updates_per_s = t.updates / seconds;
  p.env_busy = t.env_busy / (seconds * s.env_workers);
  p.inference_busy = t.inference_busy / (seconds * s.inference_servers);
  p.learner_busy = t.learner_busy / seconds;
  p.lag_mean = t.trained > 0 ? t.lag_sum / t.trained : 0;
  p.mean_batch = t.batches > 0 ? double(t.batched) / t.batches : 0;
  p.bottleneck = "env";
  double most = p.env_busy;
  if (p.inference_busy > most)
    most = p.inference_busy, p.bottleneck = "inference";
  if (p.learner_busy > most) p.bottleneck = "learner";
  return p;
}

// The asynchronous run: every queue as the runtime has it.
class AsyncPipeline {
 public:
  AsyncPipeline(const StageCosts& c, const PipelineShape& s, uint64_t seed)
      : c_(c),
        s_(s),
        times_(c.env_step_s, c.env_step_cv, seed),
        free_workers_(s.env_workers),
        free_servers_(s.inference_servers),
        act_version_(s.envs, 0),
        segment_(s.envs) {}

  Tally Run(double seconds) {
    for (int e = 0; e < s_.envs; ++e) Observe(e);
    q_.RunUntil(seconds);
    return t_;
  }

 private:
  // An env's observation is ready: admitted, or parked while the rollout
  // is max_policy_lag versions ahead of the learner.
  void Observe(int env) {
    const int64_t ahead = in_flight_samples_;
    if (ahead >= int64_t(s_.max_policy_lag + 1) * s_.global_batch) {
      parked_.push_back(env);
      return;
    }
    ++in_flight_samples_;
    waiting_.push_back({env, q_.now()});
    TryBatch();
  }

  void TryBatch() {
    while (free_servers_ > 0 && !waiting_.empty()) {
      const double oldest = waiting_.front().since;
      if (int(waiting_.size()) < s_.max_batch &&
          q_.now() < oldest + s_.max_wait_s) {
        if (!wake_pending_) {
          wake_pending_ = true;
          q_.At(oldest + s_.max_wait_s, [this] {
            wake_pending_ = false;
            TryBatch();
          });
        }
        return;
      }
      const int b = std::min<int>(s_.max_batch, int(waiting_.size()));
      std::vector<int> batch;
      for (int i = 0; i < b; ++i) {
        batch.push_back(waiting_.front().env);
        act_version_[size_t(batch.back())] = version_;
        waiting_.pop_front();
      }
      --free_servers_;
      const double dt = InferSeconds(c_, b);
      t_.inference_busy += dt;
      ++t_.batches;
      t_.batched += b;
      q_.After(dt, [this, batch] {
        ++free_servers_;
        for (int env : batch) Step(env);
        TryBatch();
      });
    }
  }

  // The env steps on a worker when one is free.
  void Step(int env) {
    if (free_workers_ == 0) {
      ready_.push_back(env);
      return;
    }
    --free_workers_;
    const double dt = times_.Next();
    t_.env_busy += dt;
    q_.After(dt, [this, env] {
      ++free_workers_;
      Stepped(env);
      if (!ready_.empty()) {
        const int next = ready_.front();
        ready_.pop_front();
        Step(next);
      }
    });
  }

  // One sample made; a whole segment goes to the learner.
  void Stepped(int env) {
    ++t_.frames;
    std::vector<uint64_t>& seg = segment_[size_t(env)];
    seg.push_back(act_version_[size_t(env)]);
    if (int(seg.size()) >= s_.rollout_len) {
      learner_queue_.insert(learner_queue_.end(), seg.begin(), seg.end());
      seg.clear();
      TryLearn();
    }
    Observe(env);
  }

  void TryLearn() {
    if (learning_ || int64_t(learner_queue_.size()) < s_.global_batch) return;
    learning_ = true;
    for (int i = 0; i < s_.global_batch; ++i) {
      t_.lag_sum += double(version_ - learner_queue_.front());
      learner_queue_.pop_front();
    }
    const double dt = LearnSeconds(c_, s_.global_batch);
    t_.learner_busy += dt;
    q_.After(dt, [this] {
      learning_ = false;
      ++version_;
      ++t_.updates;
      t_.trained += s_.global_batch;
      in_flight_samples_ -= s_.global_batch;
      std::deque<int> parked;
      parked.swap(parked_);
      for (int env : parked) Observe(env);
      TryLearn();
    });
  }

  struct Waiting {
    int env;
    double since;
  };
  const StageCosts c_;
  const PipelineShape s_;
  StepTimes times_;
  EventQueue q_;
  Tally t_;
  int free_workers_, free_servers_;
  bool wake_pending_ = false, learning_ = false;
  uint64_t version_ = 0;
  int64_t in_flight_samples_ = 0;  // admitted, not yet trained
  std::vector<uint64_t> act_version_;
  std::vector<std::vector<uint64_t>> segment_;
  std::deque<Waiting> waiting_;
  std::deque<int> ready_, parked_;
  std::deque<uint64_t> learner_queue_;
};

// The time `jobs` take on `servers` taking the next job when free.
double Makespan(const std::vector<double>& jobs, int servers) {
  std::priority_queue<double, std::vector<double>, std::greater<double>> free;
  for (int i = 0; i < servers; ++i) free.push(0.0);
  double end = 0;
  for (double j : jobs) {
    const double t = free.top() + j;
    free.pop();
    free.push(t);
    end = std::max(end, t);
  }
  return end;
}

// Lock-step: each decision batched over every env, then every env steps;
// after rollout_len decisions the learner trains on them all.
Tally RunSync(const StageCosts& c, const PipelineShape& s, uint64_t seed,
              double seconds) {
  StepTimes times(c.env_step_s, c.env_step_cv, seed);
  Tally t;
  double now = 0;
  const int64_t samples = int64_t(s.envs) * s.rollout_len;
  const int64_t steps = std::max<int64_t>(1, samples / s.global_batch);
  while (true) {
    double round = 0;
    for (int d = 0; d < s.rollout_len; ++d) {
      std::vector<double> batches, envs;
      for (int left = s.envs; left > 0; left -= s.max_batch) {
        const int b = std::min(left, s.max_batch);
        batches.push_back(InferSeconds(c, b));
        t.inference_busy += batches.back();
        ++t.batches;
        t.batched += b;
      }
      for (int e = 0; e < s.envs; ++e) {
        envs.push_back(times.Next());
        t.env_busy += envs.back();
      }
      round += Makespan(batches, s.inference_servers) +
               Makespan(envs, s.env_workers);
    }
    const double learn = steps * LearnSeconds(c, int(samples / steps));
    if (now + round + learn > seconds) break;
    now += round + learn;
    t.learner_busy += learn;
    t.frames += samples;
    t.trained += samples;
    t.updates += steps;
  }
  return t;
}

}  // namespace

PipelinePrediction SimulatePipeline(const StageCosts& costs,
                                    const PipelineShape& shape,
                                    const SimulationOptions& options) {
  const Tally t =
      shape.sync
          ? RunSync(costs, shape, options.seed, options.seconds)
          : AsyncPipeline(costs, shape, options.seed).Run(options.seconds);
  return Predict(t, shape, options.seconds);
}

}  // namespace rlvla3
