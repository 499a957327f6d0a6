// File: services/plan/pipeline_model.h
// -----------------------------------------------------------------------------
// A discrete-event model of one rl-vla3 run (issue 62), the runtime's own
// queues with measured costs in place of the work:
//
//   envs --(an env worker steps one env at a time)--> observation queue
//   observation queue --(batches of up to max_batch, or what waited
//                        max_wait)--> an inference server --> actions
//   every env step is one sample; samples travel to the learner in
//   segments of rollout_len; the learner takes one optimizer step per
//   global_batch samples and publishes a version. Each env may take its
//   quota (its share of a global batch) per version, max_policy_lag
//   versions ahead: an env past its budget parks until the learner moves
//   (the runtime's AdmissionGate). Sync mode is lock-step: every
//   env takes rollout_len decisions (each decision batched over every env),
//   then the learner trains on them all, then the next rollout.
//
// Env step times are lognormal (mean and coefficient of variation, the
// heavy tail of a simulator; cv 0 is deterministic): the worker's compute,
// then the latency model's wait, which holds the env but not its worker.
// Inference takes fixed + per_obs * batch, a learner rank per_step +
// per_sample * its share of the global batch, then the ranks' all-reduce.
// On a machine whose cores the stages share (shape.cpu.cores > 0) every
// job runs on SharedCores: envs one thread each, inference and learner
// with their torch threads, the learner at its nice level's weight.
// Nothing is fitted to what it predicts: costs come from a stage-cost
// profile (bench --stage-costs), shapes from the run's config.
//
// Example:
//   StageCosts costs;  costs.env_step_s = 0.010;  ...
//   PipelineShape shape;  shape.envs = 16;  shape.sync = false;
//   PipelinePrediction p = SimulatePipeline(costs, shape, {600.0, 1});
//   p.frames_per_s, p.samples_per_s, p.bottleneck ...
// -----------------------------------------------------------------------------
#ifndef RLVLA3_SERVICES_PLAN_PIPELINE_MODEL_H_
#define RLVLA3_SERVICES_PLAN_PIPELINE_MODEL_H_

#include <cstdint>
#include <string>
#include <vector>

namespace rlvla3 {

// Seconds each stage takes, measured alone.
struct StageCosts {
  double env_step_s = 0.010;  // mean compute per env frame, on its worker
  double env_step_cv = 0.0;   // its coefficient of variation (lognormal)
  // The latency model's wait per frame (env.latency_mean_ms / cv): the env
  // is busy, its worker free.
  double env_latency_s = 0, env_latency_cv = 0;
  double infer_fixed_s = 0.002, infer_per_obs_s = 0.0005;
  double learn_per_step_s = 0.005, learn_per_sample_s = 0.001;
  // The learner ranks' gradient all-reduce per optimizer step (0 for one
  // rank): not on the shared cores.
  double allreduce_s = 0;
  // The wire between processes (0 in one process): CPU seconds per
  // observation's round trip (both ends: encoding, gRPC, checks), per
  // trained sample's share of its segment, per weight version on each
  // inference server; and the round trip's wall time beyond its CPU (the
  // env waits for it, its worker does not).
  double wire_obs_s = 0, wire_obs_wait_s = 0;
  double wire_sample_s = 0, wire_weights_s = 0;
};

// How the stages share one machine's cores (cores 0: each stage on hardware
// of its own, as on a cluster with inference and learners on GPUs).
struct CpuShare {
  double cores = 0;
  double inference_threads = 1;  // threads.torch_intra_op
  double learner_threads = 1;
  int learner_nice = 0;  // threads.learner_nice
  // Inference and learner on GPUs instead: off the cores, sharing `gpus`
  // devices (0: a device each, never shared).
  bool inference_on_gpu = false, learner_on_gpu = false;
  double gpus = 0;
};

// The run's shape (the config keys the runtime reads).
struct PipelineShape {
  int envs = 8;
  int env_workers = 1;  // threads stepping envs (one env at a time each)
  int inference_servers = 1;
  int learner_ranks = 1;      // data-parallel; each trains global_batch / ranks
  int execute_steps = 1;      // frames per decision (rl.execute_steps)
  int max_batch = 8;          // batcher.max_batch
  double max_wait_s = 0.001;  // batcher.max_wait_ms / 1000
  int rollout_len = 16;       // decisions per env per segment
  int global_batch = 128;     // samples per optimizer step
  int max_policy_lag = 1;     // rl.max_policy_lag
  bool sync = false;          // run.mode
  CpuShare cpu;
};

struct SimulationOptions {
  double seconds = 600;  // simulated time
  uint64_t seed = 1;     // env step times
  // Stop early once this many env frames are simulated (0: no limit); the
  // rates are then over the time reached. Bounds the work of a large split.
  int64_t max_frames = 0;
};

struct PipelinePrediction {
  double frames_per_s = 0;   // env steps
  double samples_per_s = 0;  // trained (a sample is one decision)
  double updates_per_s = 0;
  // Shares of time busy: env workers (mean over workers), inference
  // servers (mean), the learner.
  double env_busy = 0, inference_busy = 0, learner_busy = 0;
  std::string bottleneck;  // "env", "inference" or "learner"
  double lag_mean = 0;     // versions between acting and training
  // Share of trained samples at each lag (0, 1, 2, ...).
  std::vector<double> lag_share;
  double mean_batch = 0;  // observations per inference batch
};

PipelinePrediction SimulatePipeline(const StageCosts& costs,
                                    const PipelineShape& shape,
                                    const SimulationOptions& options);

}  // namespace rlvla3

#endif  // RLVLA3_SERVICES_PLAN_PIPELINE_MODEL_H_
