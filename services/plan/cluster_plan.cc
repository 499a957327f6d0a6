#include "services/plan/cluster_plan.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_format.h"

namespace rlvla3 {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr int kCoresPerGpuRole = 2;      // a GPU role's host side
constexpr double kHopLatencyS = 50e-6;   // a link hop, where none is measured
constexpr int kMaxBatchesQueued = 64;    // envs per server, in batches
constexpr int64_t kMaxFrames = 2000000;  // simulated per forecast, at most

bool OnGpus(const PlanInputs& in) { return in.offer.gpus > 0; }

int GlobalBatch(const PlanInputs& in, const Split& s) {
  return in.run.rollouts_per_step * s.rollout_workers * s.envs_per_worker *
         in.run.rollout_len;
}

// The pod memory of a split and whether it fits the offer.
void CheckFit(const PlanInputs& in, SplitForecast* f) {
  const Split& s = f->split;
  const NodeOffer& o = in.offer;
  const auto no = [f](std::string why) {
    if (f->fits) f->why_not = std::move(why);
    f->fits = false;
  };
  if (OnGpus(in)) {
    const double mem = o.gpu_memory_gib * kGiB;
    if (mem > 0 && f->learner.total_bytes > mem)
      no(absl::StrFormat("a learner rank needs %.1f GiB of GPU memory",
                         f->learner.total_bytes / kGiB));
    if (mem > 0 && f->inference.total_bytes > mem)
      no(absl::StrFormat("an inference server needs %.1f GiB of GPU memory",
                         f->inference.total_bytes / kGiB));
    const int gpu_roles = s.inference_servers + s.learner_ranks;
    if (gpu_roles > o.total_gpus() && o.total_gpus() > 1)
      no(absl::StrFormat("%d GPU roles on %d GPUs", gpu_roles, o.total_gpus()));
    const int cores = o.nodes * o.cores - kCoresPerGpuRole * gpu_roles;
    if (s.rollout_workers * s.env_workers > cores)
      no(absl::StrFormat("%d env threads on %d free cores",
                         s.rollout_workers * s.env_workers, cores));
  }
  if (o.host_memory_gib > 0) {
    double host = s.rollout_workers * f->rollout_host.total_bytes;
    if (!OnGpus(in))
      host += s.learner_ranks * f->learner.total_bytes +
              s.inference_servers * f->inference.total_bytes;
    if (host > o.nodes * o.host_memory_gib * kGiB)
      no(absl::StrFormat("%.1f GiB of host memory", host / kGiB));
  }
  if (GlobalBatch(in, s) % s.learner_ranks != 0)
    no("the global batch does not split evenly over the ranks");
}

// The prediction of a slice scaled back to the whole.
void ScaleUp(int k, PipelinePrediction* p) {
  p->frames_per_s *= k;
  p->samples_per_s *= k;
}

}  // namespace

bool Split::operator==(const Split& o) const {
  return rollout_workers == o.rollout_workers &&
         envs_per_worker == o.envs_per_worker && env_workers == o.env_workers &&
         inference_servers == o.inference_servers &&
         learner_ranks == o.learner_ranks && in_process == o.in_process;
}

StageCosts CostsOf(const PlanInputs& in, const Split& s, double* allreduce_s) {
  const StageCostProfile& p = in.costs;
  StageCosts c;
  c.env_step_s = p.env.step_s_mean;
  c.env_step_cv = p.env.step_s_cv;
  c.env_latency_s = p.env.latency_s_mean;
  c.env_latency_cv = p.env.latency_s_cv;
  const LinearFit infer = p.inference.Fit(), learn = p.learner.Fit();
  c.infer_fixed_s = infer.fixed;
  c.infer_per_obs_s = infer.slope;
  c.learn_per_step_s = learn.fixed;
  c.learn_per_sample_s = learn.slope;
  const int R = s.learner_ranks;
  if (R > 1) {
    const double bytes = 4.0 * double(p.policy.parameters);
    const double share = 2.0 * (R - 1) / R;
    const LinearFit ring = p.allreduce.Fit();
    if (in.offer.link_gbps > 0) {
      const double hop =
          p.allreduce.by_bytes.empty() ? kHopLatencyS : ring.fixed / 2;
      c.allreduce_s =
          2.0 * (R - 1) * hop + share * bytes / (in.offer.link_gbps * 1e9 / 8);
    } else {  // measured between two ranks: latency per hop pair, rate
      c.allreduce_s = (R - 1) * ring.fixed + ring.slope * bytes * share;
    }
  }
  if (!s.in_process) {
    c.wire_obs_s = p.wire.observation_cpu_s;
    c.wire_obs_wait_s = p.wire.observation_wait_s;
    c.wire_sample_s = p.wire.sample_cpu_s;
    c.wire_weights_s = p.wire.weights_cpu_s;
  }
  if (allreduce_s != nullptr) *allreduce_s = c.allreduce_s;
  return c;
}

PipelineShape ShapeOf(const PlanInputs& in, const Split& s, bool sync) {
  const RunShape& r = in.run;
  PipelineShape sh;
  sh.envs = s.rollout_workers * s.envs_per_worker;
  sh.env_workers = s.rollout_workers * s.env_workers;
  sh.inference_servers = s.inference_servers;
  sh.learner_ranks = s.learner_ranks;
  sh.execute_steps = r.execute_steps;
  sh.max_batch = r.max_batch;
  sh.max_wait_s = r.max_wait_s;
  sh.rollout_len = r.rollout_len;
  sh.global_batch = GlobalBatch(in, s);
  sh.max_policy_lag = r.max_policy_lag;
  sh.sync = sync;
  if (OnGpus(in)) {
    sh.cpu.inference_on_gpu = sh.cpu.learner_on_gpu = true;
    const int roles = s.inference_servers + s.learner_ranks;
    // Roles beyond the GPUs share them (one node's GPU serving both).
    sh.cpu.gpus = roles > in.offer.total_gpus() ? in.offer.total_gpus() : 0;
  } else {
    sh.cpu.cores = double(in.offer.nodes * in.offer.cores);
    sh.cpu.inference_threads = r.inference_threads;
    sh.cpu.learner_threads = r.learner_threads;
    sh.cpu.learner_nice = r.learner_nice;
  }
  return sh;
}

namespace {

// One mode's forecast of `s` (a server's slice where the servers are alike).
PipelinePrediction Simulate(const PlanInputs& in, const Split& s,
                            const StageCosts& c, bool sync) {
  PipelineShape sh = ShapeOf(in, s, sync);
  int k = 1;
  const int I = s.inference_servers;
  if (OnGpus(in) && sh.cpu.gpus == 0 && I > 1 && sh.envs % I == 0 &&
      sh.env_workers % I == 0 && sh.global_batch % I == 0) {
    // One server's slice; the learner's whole step in each slice's step.
    k = I;
    StageCosts slice = c;
    slice.learn_per_step_s =
        c.learn_per_step_s +
        c.learn_per_sample_s * sh.global_batch / s.learner_ranks +
        c.allreduce_s;
    slice.learn_per_sample_s = 0;
    slice.allreduce_s = 0;
    sh.envs /= k;
    sh.env_workers /= k;
    sh.global_batch /= k;
    sh.inference_servers = 1;
    sh.learner_ranks = 1;
    PipelinePrediction p =
        SimulatePipeline(slice, sh, {in.seconds, 1, kMaxFrames});
    ScaleUp(k, &p);
    return p;
  }
  return SimulatePipeline(c, sh, {in.seconds, 1, kMaxFrames});
}

}  // namespace

void ForecastSync(const PlanInputs& in, SplitForecast* f) {
  if (f->has_sync) return;
  f->sync = Simulate(in, f->split, CostsOf(in, f->split, nullptr), true);
  f->has_sync = true;
}

SplitForecast Forecast(const PlanInputs& in, const Split& s, bool sync) {
  SplitForecast f;
  f.split = s;
  f.global_batch = GlobalBatch(in, s);
  const StageCosts c = CostsOf(in, s, &f.allreduce_s);
  f.async = Simulate(in, s, c, false);
  if (sync) ForecastSync(in, &f);
  LearnerMemoryOptions lo;
  lo.ranks = s.learner_ranks;
  lo.micro_batch = in.run.micro_batch;
  lo.global_batch = f.global_batch;
  lo.bf16 = in.run.learner_bf16;
  lo.segment_bytes_per_sample = in.run.observation_bytes;
  f.learner = LearnerMemory(in.run.policy, lo);
  InferenceMemoryOptions io;
  io.max_batch = in.run.max_batch;
  io.bf16 = in.run.inference_bf16;
  io.input_bytes_per_obs = in.run.observation_bytes;
  f.inference = InferenceMemory(in.run.policy, io);
  f.rollout_host =
      RolloutHostMemory(s.envs_per_worker, in.costs.env.host_bytes_per_env,
                        in.run.rollout_len, in.run.observation_bytes);
  CheckFit(in, &f);
  return f;
}

std::vector<Split> Candidates(const PlanInputs& in, bool processes_only) {
  std::vector<Split> out;
  const NodeOffer& o = in.offer;
  const RunShape& r = in.run;
  if (!OnGpus(in)) {
    const int cores = o.nodes * o.cores;
    for (int rw = 1; rw <= std::min(4, cores + 1); ++rw)
      for (int w = 1; w <= std::min(cores, r.num_envs); ++w)
        for (int i = 1; i <= 2; ++i)
          for (int l = 1; l <= 2; ++l) out.push_back({rw, r.num_envs, w, i, l});
    if (o.nodes > 1 || processes_only) return out;
    for (int w = 1; w <= std::min(cores, r.num_envs); ++w)
      for (int i = 1; i <= 2; ++i)
        out.push_back({1, r.num_envs, w, i, 1, /*in_process=*/true});
    return out;
  }
  const int G = o.total_gpus();
  std::vector<int> counts;
  for (int n = 1; n <= std::max(1, G); n *= 2) counts.push_back(n);
  for (int q : {3, 5, 6, 7}) {
    const int n = G * q / 8;
    if (n >= 1 && std::find(counts.begin(), counts.end(), n) == counts.end())
      counts.push_back(n);
  }
  // Rollout pods of the run's env threads each (threads scale across
  // processes better than within one: docs/gpu.md), as many as the cores
  // left after each GPU role's host side.
  // Pods in a multiple of the servers, so that each server's slice is
  // alike; never more envs on a server than kMaxBatchesQueued of its
  // batches (it could not keep up: such a split is not worth simulating).
  const int w = std::max(1, r.env_workers);
  for (int l : counts)
    for (int i : counts) {
      if (G > 1 && i + l > G) continue;
      const int cores = o.nodes * o.cores - kCoresPerGpuRole * (i + l);
      const int pods = cores / w / i * i;
      if (pods < 1) continue;
      for (int m : {1, 2, 4, 8}) {
        const int envs = r.num_envs * m;
        if (double(pods) * envs / i > kMaxBatchesQueued * r.max_batch) continue;
        out.push_back({pods, envs, w, i, l});
      }
    }
  return out;
}

std::vector<SplitForecast> ForecastSplits(const PlanInputs& in,
                                          const std::vector<Split>& splits) {
  std::vector<SplitForecast> out;
  out.reserve(splits.size());
  for (const Split& s : splits) out.push_back(Forecast(in, s, false));
  return out;
}

const SplitForecast* Best(const std::vector<SplitForecast>& all,
                          const PlanGoal& goal) {
  const SplitForecast* best = nullptr;
  const auto gpus = [](const SplitForecast& f) {
    return f.split.inference_servers + f.split.learner_ranks;
  };
  const auto cores = [](const SplitForecast& f) {
    return f.split.rollout_workers * f.split.env_workers;
  };
  for (const SplitForecast& f : all) {
    if (!f.fits) continue;
    if (goal.frames_per_s > 0) {
      if (f.async.frames_per_s < goal.frames_per_s) continue;
      if (best == nullptr || gpus(f) < gpus(*best) ||
          (gpus(f) == gpus(*best) && cores(f) < cores(*best)) ||
          (gpus(f) == gpus(*best) && cores(f) == cores(*best) &&
           f.async.samples_per_s > best->async.samples_per_s)) {
        best = &f;
      }
      continue;
    }
    if (best == nullptr || f.async.samples_per_s > best->async.samples_per_s)
      best = &f;
  }
  return best;
}

SplitSearch SearchSplits(const PlanInputs& in,
                         const std::vector<Split>& candidates,
                         const PlanGoal& goal, int finalists) {
  PlanInputs brief = in;
  brief.seconds = std::max(5.0, in.seconds / 10);
  SplitSearch out;
  out.others = ForecastSplits(brief, candidates);
  for (int k = 0; k < finalists; ++k) {
    const SplitForecast* b = Best(out.others, goal);
    if (b == nullptr) break;
    out.finalists.push_back(Forecast(in, b->split, false));
    out.others.erase(out.others.begin() + (b - out.others.data()));
  }
  return out;
}

}  // namespace rlvla3
