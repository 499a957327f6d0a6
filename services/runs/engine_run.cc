#include "services/runs/engine_run.h"

#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include <cmath>
#include <csignal>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <fstream>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "envs/task.h"
#include "envs/task_file.h"
#include "policies/checkpoint.h"
#include "policies/checkpoint_context.h"
#include "runtime/gpu_monitor.h"
#include "runtime/metrics_writer.h"
#include "runtime/text_file.h"
#include "runtime/tfevents_writer.h"
#include "services/options/config_bridge.h"
#include "services/options/engine_config.h"
#include "services/options/resume_plan.h"
#include "services/runs/learning_curve.h"

namespace rlvla3 {
namespace {

// Version ranges in the success-by-start-version summary and chart.
constexpr int kSuccessBuckets = 4;
// The trained samples/s chart's window (whole optimizer steps within it).
constexpr double kRateWindowS = 10;

// What each metrics interval of a run leaves: a RunSample (with each stage's
// busy %), a metrics.jsonl line and TensorBoard scalars (when the run writes
// outputs), and the progress line. The first failed write stops the engine;
// the run then returns it (the file and the reason) instead of a result.
class IntervalRecorder {
 public:
  IntervalRecorder(const RecorderOptions& r, const RunOptions& options,
                   LocalEngine* e, EngineRun* run)
      : r_(r),
        options_(options),
        engine_(e),
        run_(run),
        progress_(stderr, r.progress, absl::Seconds(r.interval_s * 5)),
        workers_(r.env_workers),
        envs_(r.envs),
        actors_(r.inference_actors),
        window_s_(std::max(10.0, 5 * r.interval_s)) {}

  absl::Status OpenOutputs(const std::string& run_dir) {
    if (r_.jsonl) {
      absl::StatusOr<std::unique_ptr<JsonlWriter>> j =
          JsonlWriter::Open(run_dir + "/metrics.jsonl");
      if (!j.ok()) return j.status();
      jsonl_ = *std::move(j);
    }
    absl::StatusOr<std::unique_ptr<TfEventsWriter>> tf =
        TfEventsWriter::Open(run_dir);
    if (!tf.ok()) return tf.status();
    tfevents_ = *std::move(tf);
    return absl::OkStatus();
  }

  void OnInterval(const MetricsSnapshot& s) {
    const RunSample p = Sample(s);
    run_->samples.push_back(p);
    Write(s, p);
    ShowProgress(s, p);
  }

  // The GPU means over the intervals that had a reading.
  void Finish() {
    progress_.Finish();
    double busy = 0, memory = 0;
    int n = 0;
    for (const RunSample& p : run_->samples) {
      if (p.busy_gpu < 0) continue;
      busy += p.busy_gpu;
      memory += p.gpu_memory_mib;
      ++n;
    }
    if (n > 0) {
      run_->busy_gpu = busy / n;
      run_->gpu_memory_mib = memory / n;
    }
  }

  absl::Status error() {
    absl::MutexLock lock(&mu_);
    return error_;
  }

 private:
  // The interval's figures; busy % from the stages' busy seconds since the
  // previous interval, per worker.
  RunSample Sample(const MetricsSnapshot& s) {
    RunSample p;
    p.t_s = s.elapsed_s;
    p.env_frames_per_s = s.Get("env_frames_per_s");
    p.trained_samples_per_s = s.Get("trained_samples_per_s");
    p.success_rate = s.Get("success_rate");
    p.lag_mean = s.Get("policy_lag_mean");
    const double dt = std::max(1e-9, s.elapsed_s - last_t_);
    const double env_s = s.Get("stage_env.busy_s"),
                 inf_s = s.Get("stage_inference.busy_s"),
                 learn_s = s.Get("stage_learner.busy_s");
    p.busy_env = 100 * (env_s - last_env_) / dt / workers_;
    p.busy_inference = 100 * (inf_s - last_inf_) / dt / actors_;
    p.busy_learner = 100 * (learn_s - last_learn_) / dt;
    const double parked_us = s.Get("env_time_parked_us"),
                 wait_us = s.Get("env_time_action_wait_us");
    const double env_us = 1e6 * dt * envs_;
    p.envs_parked = 100 * (parked_us - last_parked_us_) / env_us;
    p.envs_awaiting = 100 * (wait_us - last_wait_us_) / env_us;
    last_parked_us_ = parked_us;
    last_wait_us_ = wait_us;
    const GpuSample gpu = gpus_.Sample();
    p.busy_gpu = gpu.busy_pct;
    p.gpu_memory_mib = gpu.memory_used_mib;
    last_t_ = s.elapsed_s;
    last_env_ = env_s;
    last_inf_ = inf_s;
    last_learn_ = learn_s;
    return p;
  }

  void Write(const MetricsSnapshot& s, const RunSample& p) {
    if (jsonl_) Fail(jsonl_->Write(s));
    if (!tfevents_) return;
    const int64_t step = static_cast<int64_t>(s.Get("optimizer_steps"));
    for (const char* k :
         {"env_frames_per_s", "trained_samples_per_s", "success_rate",
          "policy_lag_mean", "policy_lag_max", "s_per_step",
          "inference_batch_size.mean", "clip_fraction", "approx_kl",
          "is_weight_mean", "loss", "entropy", "dropped_samples",
          "grpo_informative_fraction", "step_kl", "token_kl", "lr"}) {
      tfevents_->Scalar(k, s.Get(k), step);
    }
    tfevents_->Scalar("busy_pct/env", p.busy_env, step);
    tfevents_->Scalar("busy_pct/inference", p.busy_inference, step);
    tfevents_->Scalar("busy_pct/learner", p.busy_learner, step);
    if (p.busy_gpu >= 0) {
      tfevents_->Scalar("busy_pct/gpu", p.busy_gpu, step);
      tfevents_->Scalar("gpu_memory_mib", p.gpu_memory_mib, step);
    }
    Fail(tfevents_->Flush());
  }

  // The progress line's rates: over the last 10 s (at least 5 intervals),
  // not one interval, so trained samples (which arrive once per optimizer
  // step) read steady instead of flickering between 0 and a burst.
  void ShowProgress(const MetricsSnapshot& s, const RunSample& p) {
    window_.push_back(
        {s.elapsed_s, s.Get("env_frames"), s.Get("trained_samples")});
    while (window_.size() > 2 && window_.back().t - window_[1].t >= window_s_)
      window_.pop_front();
    const double span = std::max(1e-9, window_.back().t - window_.front().t);
    const bool one = window_.size() < 2;
    const double frames_rate =
        one ? p.env_frames_per_s
            : (window_.back().frames - window_.front().frames) / span;
    const double trained_rate =
        one ? p.trained_samples_per_s
            : (window_.back().trained - window_.front().trained) / span;
    progress_.Update(absl::StrFormat(
        "%s%s %3.0fs | env %4.0f frames/s | trained %4.0f samples/s | step %d "
        "(%.2f s/step) | lag %.1f/%.0f | success %3.0f%% (%d ep) | busy env "
        "%2.0f%% inf %2.0f%% learn %2.0f%% | envs parked %2.0f%% awaiting "
        "actions %2.0f%% | queue req %d traj %d",
        options_.label, r_.mode, s.elapsed_s, frames_rate, trained_rate,
        static_cast<int64_t>(s.Get("optimizer_steps")), s.Get("s_per_step"),
        p.lag_mean, s.Get("policy_lag_max"), 100 * p.success_rate,
        static_cast<int64_t>(s.Get("episodes")), p.busy_env, p.busy_inference,
        p.busy_learner, p.envs_parked, p.envs_awaiting,
        static_cast<int64_t>(s.Get("queue_request_depth")),
        static_cast<int64_t>(s.Get("queue_trajectory_depth"))));
  }

  void Fail(absl::Status status) {
    if (status.ok()) return;
    {
      absl::MutexLock lock(&mu_);
      if (!error_.ok()) return;
      error_ = status;
    }
    spdlog::error("train: {}; stopping the run", status.ToString());
    engine_->Stop();
  }

  struct Count {
    double t, frames, trained;
  };
  const RecorderOptions r_;
  const RunOptions& options_;
  LocalEngine* engine_;
  EngineRun* run_;
  ProgressLine progress_;
  std::unique_ptr<JsonlWriter> jsonl_;
  std::unique_ptr<TfEventsWriter> tfevents_;
  const GpuMonitor gpus_;  // opened once per run; unavailable without NVML
  const int workers_, envs_, actors_;
  const double window_s_;
  double last_t_ = 0, last_env_ = 0, last_inf_ = 0, last_learn_ = 0;
  double last_parked_us_ = 0, last_wait_us_ = 0;
  std::deque<Count> window_;
  absl::Mutex mu_;
  absl::Status error_ ABSL_GUARDED_BY(mu_);
};

// After the run: episodes.csv and the final checkpoint.
absl::Status WriteRunOutputs(LocalEngine& e, const CheckpointContext& context,
                             EngineRun& run) {
  const std::string episodes_csv = run.run_dir + "/episodes.csv";
  std::ofstream csv(episodes_csv);
  csv << "start_version,start_frame,env,success,late\n";
  for (const auto& ep : run.episodes) {
    csv << ep.start_version << ',' << ep.start_frame << ',' << ep.env << ','
        << (ep.success ? 1 : 0) << ',' << (ep.late ? 1 : 0) << '\n';
  }
  csv.flush();
  if (absl::Status cs = StreamStatus(csv, episodes_csv); !cs.ok()) return cs;
  run.checkpoint = run.run_dir + "/checkpoints/final";
  if (absl::Status s =
          e.policy().Save(run.checkpoint, e.tokenizer(), run.summary.version);
      !s.ok()) {
    return s;
  }
  return WriteCheckpointContext(run.checkpoint, context);
}

}  // namespace

absl::StatusOr<EngineRun> RunEngineOnce(const EngineSetup& setup,
                                        const std::string& run_dir,
                                        const RunOptions& options) {
  absl::StatusOr<std::unique_ptr<LocalEngine>> engine =
      LocalEngine::Create(setup.options, setup.parts);
  if (!engine.ok()) return engine.status();
  LocalEngine& e = **engine;
  absl::StatusOr<std::unique_ptr<PrometheusEndpoint>> endpoint =
      PrometheusEndpoint::StartIfAsked(setup.recorder.prometheus, &e.metrics(),
                                       "train");
  if (!endpoint.ok()) return endpoint.status();
  EngineRun run;
  run.run_dir = run_dir;
  run.success_window = setup.recorder.success_window;
  IntervalRecorder recorder(setup.recorder, options, &e, &run);
  if (options.write_outputs) {
    if (absl::Status s = recorder.OpenOutputs(run_dir); !s.ok()) return s;
  }
  EngineHooks hooks;
  hooks.on_interval = [&recorder](const MetricsSnapshot& s) {
    recorder.OnInterval(s);
  };
  hooks.should_stop = [] { return StopSignalled(); };
  absl::Status s = e.Run(hooks);
  recorder.Finish();
  run.interrupted = StopSignalled();
  if (!s.ok()) return s;
  if (absl::Status w = recorder.error(); !w.ok()) return w;
  run.summary = e.Summary();
  run.curve = e.LearningCurve();
  run.episodes = e.Episodes();
  run.lag_histogram = e.LagHistogram();
  run.timeline = e.Timeline();
  if (options.write_outputs) {
    if (absl::Status w =
            WriteRunOutputs(e, setup.options.learner.checkpoints.context, run);
        !w.ok()) {
      return w;
    }
  }
  return run;
}

namespace {

// env frames/s and trained samples/s over wall time.
ReportSection ThroughputSection(const std::vector<const EngineRun*>& runs) {
  ReportSection thr{"Throughput over time", "", {}, {}, {}};
  LineChart frames{"env frames/s", "wall time (s)", "env frames/s", {}};
  LineChart trained{"trained samples/s", "wall time (s)", "samples/s", {}};
  for (const EngineRun* r : runs) {
    Series f{r->summary.mode, {}, {}}, t{r->summary.mode, {}, {}};
    for (const auto& p : r->samples) {
      f.x.push_back(p.t_s);
      f.y.push_back(p.env_frames_per_s);
    }
    frames.series.push_back(f);
    // Over whole optimizer steps (a metrics window holds 0, 1 or 2 of them).
    trained.series.push_back(
        TrainedSamplesRate(r->curve, kRateWindowS, r->summary.mode));
  }
  thr.lines = {frames, trained};
  return thr;
}

// Each stage's busy share of wall time.
ReportSection UtilisationSection(const std::vector<const EngineRun*>& runs) {
  ReportSection util{"Stage utilisation",
                     "busy time per stage as a share of wall time "
                     "(per thread of that stage)",
                     {},
                     {},
                     {}};
  BarChart bars{"stage busy %",
                "busy (% of wall time)",
                {"env", "inference", "learner"},
                {},
                "stage"};
  // The GPU's bar where a run had an NVIDIA driver to ask (NVML).
  bool gpu = false;
  for (const EngineRun* r : runs) gpu = gpu || r->busy_gpu >= 0;
  if (gpu) {
    bars.labels.push_back("GPU (NVML)");
    util.text += "; the GPU bar is NVML's utilization, as nvidia-smi shows it";
  }
  for (const EngineRun* r : runs) {
    Series s{r->summary.mode,
             {},
             {r->summary.busy_env, r->summary.busy_inference,
              r->summary.busy_learner}};
    if (gpu) s.y.push_back(std::max(0.0, r->busy_gpu));
    bars.series.push_back(s);
  }
  util.bars.push_back(bars);
  return util;
}

// The policy-lag histogram of trained samples.
ReportSection LagSection(const std::vector<const EngineRun*>& runs) {
  ReportSection lag{"Policy lag",
                    "trained samples by learner version minus "
                    "behaviour version",
                    {},
                    {},
                    {}};
  BarChart lh{"policy-lag histogram",
              "trained samples",
              {},
              {},
              "policy lag (versions behind the learner)"};
  size_t max_lag = 0;
  for (const EngineRun* r : runs)
    max_lag = std::max(max_lag, r->lag_histogram.size());
  for (size_t i = 0; i < std::max<size_t>(1, max_lag); ++i)
    lh.labels.push_back(absl::StrCat(i));
  for (const EngineRun* r : runs) {
    Series s{r->summary.mode, {}, {}};
    for (size_t i = 0; i < lh.labels.size(); ++i) {
      s.y.push_back(i < r->lag_histogram.size()
                        ? static_cast<double>(r->lag_histogram[i])
                        : 0);
    }
    lh.series.push_back(s);
  }
  lag.bars.push_back(lh);
  return lag;
}

// Success against trained samples, and by the version that started an episode.
ReportSection LearningSection(const std::vector<const EngineRun*>& runs) {
  ReportSection learn{"Learning",
                      "rolling success rate (last rl.success_window "
                      "episodes) against trained samples",
                      {},
                      {},
                      {}};
  LineChart sc{
      "success vs trained samples", "trained samples", "success (%)", {}};
  for (const EngineRun* r : runs) {
    Series s{r->summary.mode, {}, {}};
    for (const auto& p : r->curve) {
      s.x.push_back(static_cast<double>(p.trained_samples));
      s.y.push_back(100 * p.rolling_success);
    }
    sc.series.push_back(s);
  }
  learn.lines.push_back(sc);
  // Episodes by the version that started them, at the trained samples and
  // wall time that version was published (the episodes behind each point
  // are in the table).
  LineChart vs_samples{
      "success by the policy version that started the "
      "episode, against trained samples",
      "trained samples",
      "success (% of episodes)",
      {}};
  LineChart vs_wall{
      "... against wall time", "wall time (s)", "success (% of episodes)", {}};
  learn.table.push_back(
      {"run", "versions", "trained samples", "wall s", "success", "episodes"});
  for (const EngineRun* r : runs) {
    Series a{r->summary.mode, {}, {}}, w{r->summary.mode, {}, {}};
    for (const CurvePoint& p :
         LearningCurveByVersion(r->episodes, r->curve, kSuccessBuckets)) {
      if (p.episodes == 0) continue;
      a.x.push_back(p.trained_samples);
      w.x.push_back(p.wall_s);
      a.y.push_back(100 * p.rate());
      w.y.push_back(100 * p.rate());
      learn.table.push_back(
          {r->summary.mode,
           absl::StrFormat("%d-%d", p.version_lo, p.version_hi),
           absl::StrFormat("%.0f", p.trained_samples),
           absl::StrFormat("%.0f", p.wall_s),
           absl::StrFormat("%.0f%%", 100 * p.rate()),
           absl::StrFormat("%d", p.episodes)});
    }
    vs_samples.series.push_back(a);
    vs_wall.series.push_back(w);
  }
  learn.lines.push_back(vs_samples);
  learn.lines.push_back(vs_wall);
  return learn;
}

}  // namespace

std::vector<ReportSection> RunReportSections(
    const std::vector<const EngineRun*>& runs) {
  return {ThroughputSection(runs), UtilisationSection(runs), LagSection(runs),
          LearningSection(runs)};
}

std::string FormatTrainSummary(const EngineRun& r) {
  const EngineSummary& s = r.summary;
  // The first point whose rolling window is full (or the last one there is),
  // so a window of one or two episodes is not reported as a rate.
  std::string first_success = "n/a", last_success = "n/a";
  if (!r.curve.empty()) {
    const LocalEngine::LearningPoint* first = &r.curve.back();
    for (const auto& p : r.curve) {
      if (static_cast<int64_t>(p.episodes) >= r.success_window) {
        first = &p;
        break;
      }
    }
    first_success =
        absl::StrFormat("%.0f%% (at %d trained samples)",
                        100 * first->rolling_success, first->trained_samples);
    last_success =
        absl::StrFormat("%.0f%% (at %d)", 100 * r.curve.back().rolling_success,
                        r.curve.back().trained_samples);
  }
  const std::string by_version = FormatLearningCurve(
      LearningCurveByVersion(r.episodes, r.curve, kSuccessBuckets));
  int64_t late = 0;
  for (const auto& e : r.episodes) late += e.late ? 1 : 0;
  return absl::StrFormat(
      "%s run%s: %.0f s, %d env frames (%.0f frames/s), %d episodes, %d "
      "successes\n"
      "learner: %d optimizer steps (%.2f s/step), %d samples trained (%.0f "
      "samples/s), %d skipped (NaN/Inf), %d dropped for staleness\n"
      "policy lag mean %.2f max %.0f; inference batch mean %.1f; busy env "
      "%.0f%% inference %.0f%% learner %.0f%%\n"
      "rolling success (last %d episodes): %s -> %s\n"
      "success by start version (at the trained samples and wall time it "
      "was published; episodes):%s; %d late episodes left out\n"
      "checkpoint: %s\n",
      s.mode, r.interrupted ? " (interrupted)" : "", s.wall_s, s.env_frames,
      s.env_frames_per_s, s.episodes, s.successes, s.optimizer_steps,
      s.s_per_step, s.trained_samples, s.trained_samples_per_s, s.skipped_steps,
      s.dropped_samples, s.lag_mean, s.lag_max, s.inference_batch_mean,
      s.busy_env, s.busy_inference, s.busy_learner, r.success_window,
      first_success, last_success, by_version, late,
      r.checkpoint.empty() ? "(none)" : r.checkpoint);
}

}  // namespace rlvla3
