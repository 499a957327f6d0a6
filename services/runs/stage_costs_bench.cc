#include "services/runs/stage_costs_bench.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <torch/torch.h>
#include <unistd.h>

#include <algorithm>
#include <memory>
#include <thread>
#include <vector>

#include "policies/device.h"
#include "runtime/steady_clock.h"
#include "services/learner/c10d_reducer.h"
#include "services/options/engine_config.h"
#include "services/options/run_variants.h"
#include "services/runs/env_stage_bench.h"
#include "services/runs/stage_drivers.h"
#include "services/runs/wire_costs_bench.h"

namespace rlvla3 {
namespace {

using Clock = std::chrono::steady_clock;

// Seconds per call of `call`: the median of the calls timed one by one,
// after two warm-up calls, over at least `seconds` and `min_calls` calls
// (a median, so that another tenant's burst on a shared machine does not
// move it). At most kMaxCalls are kept.
template <typename F>
double SecondsPerCall(F&& call, double seconds, int min_calls) {
  constexpr size_t kMaxCalls = 100000;
  call();
  call();
  std::vector<double> each;
  each.reserve(1024);
  const auto t0 = Clock::now();
  while ((SecondsSince(t0) < seconds ||
          static_cast<int>(each.size()) < min_calls) &&
         each.size() < kMaxCalls) {
    const auto t = Clock::now();
    call();
    each.push_back(SecondsSince(t));
  }
  std::nth_element(each.begin(), each.begin() + each.size() / 2, each.end());
  return each[each.size() / 2];
}

absl::Status MeasureEnv(const Config& c, const LocalEngineOptions& o,
                        double seconds, EnvCosts* e) {
  absl::StatusOr<EnvPoolOptions> pool = EnvPoolOptionsOfRun(c);
  if (!pool.ok()) return pool.status();
  spdlog::info("stage costs: env stage alone, {} envs on {} workers, {:.0f} s",
               pool->num_envs, pool->num_threads, 2 * seconds);
  absl::StatusOr<EnvStageFigures> f =
      MeasureEnvStage(*pool, 2 * seconds, o.rollout.execute_steps);
  if (!f.ok()) return f.status();
  e->workers = f->workers;
  e->envs = f->envs;
  e->image_width = pool->env.image_width;
  e->image_height = pool->env.image_height;
  e->cameras =
      pool->env.render ? static_cast<int>(pool->env.cameras.size()) : 0;
  e->execute_steps = f->execute_steps;
  e->backend = f->backend;
  e->step_s_mean = std::max(1e-9, f->wall_ms_per_frame / 1e3);
  e->step_s_cv = f->step_ms_cv;
  e->step_s_p50 = f->step_ms_p50 / 1e3;
  e->step_s_p99 = f->step_ms_p99 / 1e3;
  e->physics_ms = f->physics_ms;
  e->render_ms = f->render_ms;
  e->readback_ms = f->readback_ms;
  e->handoff_ms = f->handoff_ms;
  e->latency_s_mean = pool->latency.mean_ms / 1e3;
  e->latency_s_cv = pool->latency.enabled() ? pool->latency.cv : 0;
  e->host_bytes_per_env = f->host_bytes_per_env;
  return absl::OkStatus();
}

// Batches of 1, 2, 4, ... up to twice the run's max_batch (at least 16).
void MeasureInference(LocalEngineOptions o, const EngineParts& parts,
                      double seconds, InferenceCosts* out) {
  const int most = std::min(
      256, std::max(16, 2 * static_cast<int>(o.inference.batcher.max_batch)));
  o.rollout.pool.num_envs = std::max(o.rollout.pool.num_envs, most);
  for (int b = 1; b <= most; b *= 2) {
    o.inference.batcher.max_batch = static_cast<size_t>(b);
    InferenceStageDriver driver(o, parts);
    const double s = SecondsPerCall([&] { driver.Batch(); }, seconds, 5);
    out->by_batch.push_back({static_cast<double>(b), s});
    spdlog::info("stage costs: inference batch {}: {:.3f} ms", b, 1e3 * s);
  }
}

// Steps over a quarter, half and all of the run's envs' segments.
void MeasureLearner(LocalEngineOptions o, const EngineParts& parts,
                    double seconds, LearnerCosts* out) {
  const int envs = o.rollout.pool.num_envs;
  std::vector<int> counts;
  for (int n : {std::max(1, envs / 4), std::max(1, envs / 2), envs}) {
    if (counts.empty() || n > counts.back()) counts.push_back(n);
  }
  for (int n : counts) {
    o.rollout.pool.num_envs = n;
    LearnerStageDriver driver(o, parts);
    int64_t samples = 0;
    const double s = SecondsPerCall(
        [&] { samples = std::max(samples, driver.Step()); }, seconds, 3);
    if (samples <= 0) continue;  // a step that trained nothing says nothing
    out->by_samples.push_back({static_cast<double>(samples), s});
    spdlog::info("stage costs: learner step over {} samples: {:.1f} ms",
                 samples, 1e3 * s);
  }
}

// A port nothing listens on now (the kernel's pick).
absl::StatusOr<int> FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return absl::InternalError("socket() failed");
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  int port = -1;
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
    port = ntohs(a.sin_port);
  }
  close(fd);
  if (port <= 0) return absl::InternalError("no free loopback port");
  return port;
}

// Two Gloo ranks in this process over loopback, averaging tensors of each
// size in `bytes`.
absl::Status MeasureAllReduce(const std::vector<double>& bytes, double seconds,
                              AllReduceCosts* out) {
  absl::StatusOr<int> port = FreePort();
  if (!port.ok()) return port.status();
  ProcessGroupOptions base;
  base.world_size = 2;
  base.master_port = *port;
  base.timeout = absl::Seconds(60);
  absl::StatusOr<std::unique_ptr<GradientReducer>> peer;
  std::thread joiner([&] {
    ProcessGroupOptions o = base;
    o.rank = 1;
    peer = ConnectProcessGroup(o);
  });
  absl::StatusOr<std::unique_ptr<GradientReducer>> self =
      ConnectProcessGroup(base);
  joiner.join();
  if (!self.ok()) return self.status();
  if (!peer.ok()) return peer.status();
  for (double b : bytes) {
    const int64_t n = std::max<int64_t>(1, static_cast<int64_t>(b / 4));
    std::vector<at::Tensor> mine{torch::ones({n})}, theirs{torch::ones({n})};
    // Both ranks make the same number of calls: the peer mirrors ours.
    const int calls = std::max(3, static_cast<int>(seconds / 0.01));
    absl::Status peer_status;
    std::thread other([&] {
      for (int i = 0; i < calls + 2 && peer_status.ok(); ++i)
        peer_status = (*peer)->AllReduceMean(absl::MakeSpan(theirs));
    });
    absl::Status mine_status;
    int done = 0;
    const double s = SecondsPerCall(
        [&] {
          if (!mine_status.ok() || done >= calls + 2) return;
          mine_status = (*self)->AllReduceMean(absl::MakeSpan(mine));
          ++done;
        },
        0, calls);
    other.join();
    if (!mine_status.ok()) return mine_status;
    if (!peer_status.ok()) return peer_status;
    out->by_bytes.push_back({static_cast<double>(n * 4), s});
    spdlog::info("stage costs: all-reduce of {} bytes over 2 ranks: {:.3f} ms",
                 n * 4, 1e3 * s);
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<StageCostProfile> MeasureStageCosts(
    const Config& config, const std::string& config_path, double seconds) {
  const Config c = BenchConfig(config, seconds);
  absl::StatusOr<EngineParts> parts = BuildEngineParts(c);
  if (!parts.ok()) return parts.status();
  absl::StatusOr<LocalEngineOptions> o =
      LocalEngineOptionsFromConfig(c, *parts);
  if (!o.ok()) return o.status();
  StageCostProfile p;
  p.config = config_path;
  p.gpus = DescribeGpus();
  p.cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (absl::Status s = MeasureEnv(c, *o, seconds, &p.env); !s.ok()) return s;
  p.inference.device = o->inference.device.str();
  p.inference.precision = o->inference.bf16 ? "bf16" : "fp32";
  p.inference.threads = at::get_num_threads();
  MeasureInference(*o, *parts, seconds, &p.inference);
  p.learner.device = o->learner.core.device.str();
  p.learner.precision = o->learner.core.bf16 ? "bf16" : "fp32";
  p.learner.threads = at::get_num_threads();
  p.learner.nice = o->learner.nice;
  p.learner.micro_batch = o->learner.core.micro_batch;
  MeasureLearner(*o, *parts, seconds, &p.learner);
  const TrainablePolicy::ParameterGroups g = (*parts).policy->Parameters();
  int64_t weight_bytes = 0;
  for (const auto* group : {&g.weights, &g.value, &g.action_scale}) {
    for (const at::Tensor& t : *group) {
      p.policy.parameters += t.numel();
      weight_bytes += t.numel() * static_cast<int64_t>(t.element_size());
    }
  }
  // AdamW keeps two fp32 moments per parameter; a checkpoint holds the
  // weights and them.
  p.policy.optimizer_bytes = 2 * 4 * p.policy.parameters;
  p.policy.checkpoint_bytes = weight_bytes + p.policy.optimizer_bytes;
  const double grads = static_cast<double>(weight_bytes);
  std::vector<double> sizes;
  for (double b = 64 * 1024; b < 2 * grads; b *= 8) sizes.push_back(b);
  sizes.push_back(std::max(2 * grads, 64.0 * 1024));
  if (absl::Status s = MeasureAllReduce(sizes, seconds / 4, &p.allreduce);
      !s.ok()) {
    return s;
  }
  WireBenchInputs w;
  w.shape = o->segment_shape;
  w.envs = o->rollout.pool.num_envs;
  w.max_batch = static_cast<int>(o->inference.batcher.max_batch);
  w.execute_steps = o->rollout.execute_steps;
  w.policy = (*parts).policy.get();
  w.seconds = seconds;
  if (absl::Status s = MeasureWireCosts(w, &p.wire); !s.ok()) return s;
  return p;
}

}  // namespace rlvla3
