#include "services/plan/pipeline_model.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <functional>
#include <memory>
#include <random>
#include <utility>
#include <vector>

#include "services/plan/event_queue.h"
#include "services/plan/shared_cores.h"

namespace rlvla3 {
namespace {

// Lognormal draws with a given mean and cv (cv 0: the mean itself).
class Lognormal {
 public:
  Lognormal(double mean, double cv, uint64_t seed) : mean_(mean), rng_(seed) {
    const double s2 = std::log(1.0 + cv * cv);
    sigma_ = std::sqrt(s2);
    mu_ = mean > 0 ? std::log(mean) - s2 / 2 : 0;
  }
  double Next() {
    if (sigma_ == 0 || mean_ <= 0) return mean_;
    return std::exp(mu_ + sigma_ * normal_(rng_));
  }

 private:
  double mean_, mu_ = 0, sigma_ = 0;
  std::mt19937_64 rng_;
  std::normal_distribution<double> normal_;
};

// What both modes count; busy is wall time a worker, server or the learner
// held a job.
struct Tally {
  int64_t frames = 0, trained = 0, updates = 0, batches = 0, batched = 0;
  double env_busy = 0, inference_busy = 0, learner_busy = 0;
  std::vector<int64_t> lag;  // trained samples by lag
  double end = 0;            // when the last counted work finished
  double reached = 0;        // the clock when the simulation stopped
};

PipelinePrediction Predict(const Tally& t, const PipelineShape& s,
                           double seconds) {
  PipelinePrediction p;
  const double span = t.end > 0 ? t.end : seconds;
  p.frames_per_s = double(t.frames) / span;
  p.samples_per_s = double(t.trained) / span;
  p.updates_per_s = double(t.updates) / span;
  const double ran = t.reached > 0 ? t.reached : seconds;
  p.env_busy = t.env_busy / (ran * s.env_workers);
  p.inference_busy = t.inference_busy / (ran * s.inference_servers);
  p.learner_busy = t.learner_busy / ran;
  int64_t n = 0;
  double sum = 0;
  for (size_t k = 0; k < t.lag.size(); ++k) {
    n += t.lag[k];
    sum += double(k) * double(t.lag[k]);
  }
  for (int64_t c : t.lag) p.lag_share.push_back(n > 0 ? double(c) / n : 0);
  p.lag_mean = n > 0 ? sum / double(n) : 0;
  p.mean_batch = t.batches > 0 ? double(t.batched) / t.batches : 0;
  p.bottleneck = "env";
  double most = p.env_busy;
  if (p.inference_busy > most)
    most = p.inference_busy, p.bottleneck = "inference";
  if (p.learner_busy > most) p.bottleneck = "learner";
  return p;
}

// The clock, the cores and the three kinds of job, shared by both modes.
class Stages {
 public:
  Stages(const StageCosts& c, const PipelineShape& s, uint64_t seed)
      : c_(c),
        s_(s),
        cores_(&q_, s.cpu.cores),
        gpus_(&q_, s.cpu.gpus),
        compute_(c.env_step_s, c.env_step_cv, seed),
        latency_(c.env_latency_s, c.env_latency_cv, seed ^ 0x9e3779b97f4a7c15),
        free_workers_(s.env_workers) {}

  EventQueue& clock() { return q_; }
  Tally& tally() { return t_; }

  // One env frame: its compute on a free worker, then its latency wait.
  void Frame(std::function<void()> done) {
    if (free_workers_ == 0) {
      ready_.push_back(std::move(done));
      return;
    }
    --free_workers_;
    const double start = q_.now();
    cores_.Start(compute_.Next(), 1, 1,
                 [this, start, done = std::move(done)]() mutable {
                   t_.env_busy += q_.now() - start;
                   ++free_workers_;
                   const double wait = latency_.Next();
                   if (wait > 0) {
                     q_.After(wait, std::move(done));
                   } else {
                     done();
                   }
                   if (!ready_.empty() && free_workers_ > 0) {
                     std::function<void()> next = std::move(ready_.front());
                     ready_.pop_front();
                     Frame(std::move(next));
                   }
                 });
  }

  // Work on the wire between processes: `work` CPU seconds on the shared
  // cores (one thread), then `wait` more; nothing when both are 0.
  void Wire(double work, double wait, std::function<void()> done) {
    if (work <= 0 && wait <= 0) return done();
    auto then = [this, wait, done = std::move(done)]() mutable {
      if (wait > 0) return q_.After(wait, std::move(done));
      done();
    };
    if (work <= 0) return then();
    cores_.Start(work, 1, 1, std::move(then));
  }
  const StageCosts& costs() const { return c_; }

  // One inference batch of `b` (the caller holds a server).
  void Infer(int b, std::function<void()> done) {
    ++t_.batches;
    t_.batched += b;
    const double start = q_.now();
    const bool gpu = s_.cpu.inference_on_gpu;
    (gpu ? gpus_ : cores_)
        .Start(c_.infer_fixed_s + c_.infer_per_obs_s * b,
               gpu ? 1 : s_.cpu.inference_threads, 1,
               [this, start, done = std::move(done)] {
                 t_.inference_busy += q_.now() - start;
                 done();
               });
  }

  // One optimizer step over `samples`: every rank its share, then the
  // all-reduce.
  void Learn(int samples, std::function<void()> done) {
    const int ranks = std::max(1, s_.learner_ranks);
    const double work =
        c_.learn_per_step_s + c_.learn_per_sample_s * double(samples) / ranks;
    auto left = std::make_shared<int>(ranks);
    const double start = q_.now();
    auto finished = std::make_shared<std::function<void()>>(std::move(done));
    for (int r = 0; r < ranks; ++r) {
      cores_.Start(work, s_.cpu.learner_threads,
                   NiceWeight(s_.cpu.learner_nice),
                   [this, left, start, finished] {
                     if (--*left > 0) return;
                     q_.After(c_.allreduce_s, [this, start, finished] {
                       t_.learner_busy += q_.now() - start;
                       (*finished)();
                     });
                   });
    }
  }

  void Trained(const std::vector<uint64_t>& acted, uint64_t version) {
    for (uint64_t v : acted) {
      const size_t lag = size_t(version - v);
      if (t_.lag.size() <= lag) t_.lag.resize(lag + 1, 0);
      ++t_.lag[lag];
    }
    t_.trained += int64_t(acted.size());
    ++t_.updates;
    t_.end = q_.now();
  }

 private:
  const StageCosts c_;
  const PipelineShape s_;
  EventQueue q_;
  SharedCores cores_, gpus_;
  Lognormal compute_, latency_;
  Tally t_;
  int free_workers_;
  std::deque<std::function<void()>> ready_;
};

// Runs the clock to `seconds`, or (max_frames > 0) until that many frames
// are simulated, a simulated second at a time; returns the time reached.
double RunFor(Stages& st, double seconds, int64_t max_frames) {
  for (double t = 0; t < seconds;) {
    t = std::min(seconds, t + 1.0);
    st.clock().RunUntil(t);
    if (max_frames > 0 && st.tally().frames >= max_frames) return t;
  }
  return seconds;
}

// The asynchronous run: every queue as the runtime has it.
class AsyncPipeline {
 public:
  AsyncPipeline(const StageCosts& c, const PipelineShape& s, uint64_t seed)
      : s_(s),
        st_(c, s, seed),
        free_servers_(s.inference_servers),
        quota_(std::max(1, s.global_batch / std::max(1, s.envs))),
        act_version_(size_t(s.envs), 0),
        taken_(size_t(s.envs), 0),
        segment_(size_t(s.envs)) {}

  Tally Run(double seconds, int64_t max_frames) {
    for (int e = 0; e < s_.envs; ++e) Observe(e);
    st_.tally().end = st_.tally().reached = RunFor(st_, seconds, max_frames);
    return st_.tally();
  }

 private:
  EventQueue& q() { return st_.clock(); }

  // An env's observation is ready: admitted while its next decision is
  // within its budget, (version + 1 + max_policy_lag) x its quota of the
  // global batch, else parked until the learner moves (the runtime's
  // AdmissionGate: an env cannot take a slow env's share).
  void Observe(int env) {
    int64_t& taken = taken_[size_t(env)];
    if (taken >= (int64_t(version_) + 1 + s_.max_policy_lag) * quota_) {
      parked_.push_back(env);
      return;
    }
    ++taken;
    const StageCosts& c = st_.costs();
    st_.Wire(c.wire_obs_s, c.wire_obs_wait_s, [this, env] {
      waiting_.push_back({env, q().now()});
      TryBatch();
    });
  }

  void TryBatch() {
    while (free_servers_ > 0 && !waiting_.empty()) {
      const double oldest = waiting_.front().since;
      if (int(waiting_.size()) < s_.max_batch &&
          q().now() < oldest + s_.max_wait_s) {
        if (!wake_pending_) {
          wake_pending_ = true;
          q().At(oldest + s_.max_wait_s, [this] {
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
      st_.Infer(b, [this, batch] {
        ++free_servers_;
        for (int env : batch) Act(env, s_.execute_steps);
        TryBatch();
      });
    }
  }

  // The env executes its decision's frames, one after another.
  void Act(int env, int frames_left) {
    st_.Frame([this, env, frames_left] {
      ++st_.tally().frames;
      if (frames_left > 1) {
        Act(env, frames_left - 1);
      } else {
        Decided(env);
      }
    });
  }

  // One sample made; a whole segment goes to the learner.
  void Decided(int env) {
    std::vector<uint64_t>& seg = segment_[size_t(env)];
    seg.push_back(act_version_[size_t(env)]);
    if (int(seg.size()) >= s_.rollout_len) {
      std::vector<uint64_t> sent;
      sent.swap(seg);
      st_.Wire(st_.costs().wire_sample_s * double(sent.size()), 0,
               [this, sent = std::move(sent)] {
                 learner_queue_.insert(learner_queue_.end(), sent.begin(),
                                       sent.end());
                 TryLearn();
               });
    }
    Observe(env);
  }

  void TryLearn() {
    if (learning_ || int64_t(learner_queue_.size()) < s_.global_batch) return;
    learning_ = true;
    std::vector<uint64_t> acted(learner_queue_.begin(),
                                learner_queue_.begin() + s_.global_batch);
    learner_queue_.erase(learner_queue_.begin(),
                         learner_queue_.begin() + s_.global_batch);
    st_.Learn(s_.global_batch, [this, acted] {
      st_.Trained(acted, version_);
      learning_ = false;
      ++version_;
      for (int i = 0; i < s_.inference_servers; ++i)
        st_.Wire(st_.costs().wire_weights_s, 0, [] {});
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
  const PipelineShape s_;
  Stages st_;
  int free_servers_;
  bool wake_pending_ = false, learning_ = false;
  uint64_t version_ = 0;
  const int64_t quota_;  // decisions per env per optimizer step
  std::vector<uint64_t> act_version_;
  std::vector<int64_t> taken_;  // decisions admitted, per env
  std::vector<std::vector<uint64_t>> segment_;
  std::deque<Waiting> waiting_;
  std::deque<int> parked_;
  std::deque<uint64_t> learner_queue_;
};

// Lock-step: each decision batched over every env, then every env executes
// it; after rollout_len decisions the learner trains on them all, then the
// next round begins.
class SyncPipeline {
 public:
  SyncPipeline(const StageCosts& c, const PipelineShape& s, uint64_t seed)
      : s_(s), st_(c, s, seed) {}

  Tally Run(double seconds, int64_t max_frames) {
    Decide(0);
    st_.tally().reached = RunFor(st_, seconds, max_frames);
    return st_.tally();
  }

 private:
  // Decision d of the round: the batches on the servers, then the envs.
  void Decide(int d) {
    if (d == s_.rollout_len) return Train();
    batches_left_ = 0;
    for (int left = s_.envs; left > 0; left -= s_.max_batch) {
      pending_.push_back(std::min(left, s_.max_batch));
      ++batches_left_;
    }
    for (int i = 0; i < s_.inference_servers; ++i) NextBatch(d);
  }

  void NextBatch(int d) {
    if (pending_.empty()) return;
    const int b = pending_.front();
    pending_.pop_front();
    st_.Infer(b, [this, d] {
      if (--batches_left_ > 0) return NextBatch(d);
      envs_left_ = s_.envs;
      for (int e = 0; e < s_.envs; ++e) Act(d, s_.execute_steps);
    });
  }

  // An env's frames, then its next observation over the wire.
  void Act(int d, int frames_left) {
    st_.Frame([this, d, frames_left] {
      ++frames_;
      if (frames_left > 1) return Act(d, frames_left - 1);
      const StageCosts& c = st_.costs();
      st_.Wire(c.wire_obs_s, c.wire_obs_wait_s, [this, d] {
        if (--envs_left_ == 0) Decide(d + 1);
      });
    });
  }

  // The round's samples in `steps` optimizer steps, then the next round.
  void Train() {
    const int64_t samples = int64_t(s_.envs) * s_.rollout_len;
    steps_left_ = std::max<int64_t>(1, samples / s_.global_batch);
    per_step_ = int(samples / steps_left_);
    st_.Wire(st_.costs().wire_sample_s * double(samples), 0,
             [this] { NextStep(); });
  }

  void NextStep() {
    st_.Learn(per_step_, [this] {
      st_.Trained(std::vector<uint64_t>(size_t(per_step_), 0), 0);
      if (--steps_left_ > 0) return NextStep();
      st_.tally().frames += frames_;
      frames_ = 0;
      // The servers load the new weights before the next round.
      servers_loading_ = s_.inference_servers;
      for (int i = 0; i < s_.inference_servers; ++i) {
        st_.Wire(st_.costs().wire_weights_s, 0, [this] {
          if (--servers_loading_ == 0) Decide(0);
        });
      }
    });
  }

  const PipelineShape s_;
  Stages st_;
  std::deque<int> pending_;
  int batches_left_ = 0, envs_left_ = 0, per_step_ = 0, servers_loading_ = 0;
  int64_t steps_left_ = 0, frames_ = 0;
};

}  // namespace

PipelinePrediction SimulatePipeline(const StageCosts& costs,
                                    const PipelineShape& shape,
                                    const SimulationOptions& options) {
  const Tally t = shape.sync ? SyncPipeline(costs, shape, options.seed)
                                   .Run(options.seconds, options.max_frames)
                             : AsyncPipeline(costs, shape, options.seed)
                                   .Run(options.seconds, options.max_frames);
  return Predict(t, shape, options.seconds);
}

}  // namespace rlvla3
