#include "services/runs/bench_processes.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "runtime/stop_signal.h"
#include "runtime/text_file.h"
#include "services/net/grpc_common.h"
#include "services/net/role_status.h"
#include "services/options/cluster_options.h"
#include "services/options/run_variants.h"
#include "services/runs/child_process.h"
#include "services/runs/health_wait.h"
#include "services/runs/local_cluster.h"
#include "services/runs/serve.h"

namespace rlvla3 {
namespace {

using Clock = std::chrono::steady_clock;

// What the window is measured from: summed over the rollout workers.
struct Sample {
  Clock::time_point at;
  uint64_t env_frames = 0, trained = 0, steps = 0, version = 0;
};

absl::StatusOr<Sample> Take(const ClusterLayout& l, const NetOptions& net) {
  Sample s;
  s.at = Clock::now();
  absl::StatusOr<v1::RoleStatus> learner =
      QueryRoleStatus(Role::kLearner, l.learner, net);
  if (!learner.ok()) return learner.status();
  s.trained = learner->trained_samples();
  s.steps = learner->optimizer_steps();
  s.version = learner->policy_version();
  for (const std::string& a : l.rollout) {
    absl::StatusOr<v1::RoleStatus> r = QueryRoleStatus(Role::kRollout, a, net);
    if (!r.ok()) return r.status();
    s.env_frames += r->env_frames();
  }
  return s;
}

// Every role SERVING (or the run ended / timed out).
absl::Status WaitAllHealthy(const ClusterLayout& l, const NetOptions& net,
                            ChildProcess& up, double timeout_s) {
  std::vector<std::string> all = {l.learner};
  all.insert(all.end(), l.inference.begin(), l.inference.end());
  all.insert(all.end(), l.rollout.begin(), l.rollout.end());
  return WaitServing(
      all, net, timeout_s, "roles", up.log_path(), [&]() -> absl::Status {
        if (up.running()) return absl::OkStatus();
        return absl::InternalError(absl::StrCat(
            "up --local ended (", up.HowItEnded(), "); see ", up.log_path()));
      });
}

void SleepUnlessStopped(double seconds) {
  const auto end = Clock::now() + std::chrono::milliseconds(
                                      static_cast<int64_t>(seconds * 1000));
  while (Clock::now() < end && !StopSignalled()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

// "frames_per_s" of the last point of an env_scaling.json: one worker count,
// images drawn as the run draws them (rl.execute_steps, the last point).
absl::StatusOr<double> ReadFramesPerS(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  const std::string s = text.str();
  const std::string key = "\"frames_per_s\": ";
  const size_t at = s.rfind(key);
  double v = 0;
  if (at == std::string::npos ||
      !absl::SimpleAtod(s.substr(at + key.size(),
                                 s.find_first_of(",}", at) - at - key.size()),
                        &v)) {
    return absl::InternalError(absl::StrCat("no frames_per_s in ", path));
  }
  return v;
}

}  // namespace

absl::StatusOr<EnvProcessesRun> RunEnvStageAsProcesses(
    const Config& config, const std::string& binary, const std::string& dir,
    double seconds) {
  const EnvStageProcesses p = EnvStageProcessesOf(config, dir);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  const std::string config_path = dir + "/config.yaml";
  if (absl::Status s = WriteTextFile(config_path, ConfigToYaml(p.config));
      !s.ok()) {
    return s;
  }
  const int64_t workers = p.workers;
  const int64_t per_worker = p.envs_per_worker;
  const int n = p.processes;
  std::vector<std::unique_ptr<ChildProcess>> children;
  for (int i = 0; i < n; ++i) {
    children.push_back(std::make_unique<ChildProcess>(
        std::vector<std::string>{binary, "bench", "--config", config_path,
                                 "--env-workers", absl::StrCat(workers),
                                 "--envs-per-worker", absl::StrCat(per_worker),
                                 "--duration", absl::StrCat(seconds), "--set",
                                 absl::StrCat("run.name=env-", i), "--json",
                                 absl::StrCat(dir, "/env-", i, ".json")},
        absl::StrCat(dir, "/env-", i, ".log")));
  }
  spdlog::info("bench: env stage alone as {} processes of {} workers x {} envs",
               n, workers, per_worker);
  for (auto& c : children) {
    if (absl::Status s = c->Start(); !s.ok()) return s;
  }
  const auto end =
      Clock::now() + std::chrono::seconds(static_cast<int64_t>(seconds) + 120);
  for (auto& c : children) {
    while (!c->Poll()) {
      if (Clock::now() > end || StopSignalled()) {
        return absl::DeadlineExceededError(absl::StrCat(
            "env stage processes did not finish; see ", c->log_path()));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    if (c->exit_code() != 0) {
      return absl::InternalError(absl::StrCat(
          "env stage process: ", c->HowItEnded(), "; see ", c->log_path()));
    }
  }
  EnvProcessesRun r;
  r.processes = n;
  for (int i = 0; i < n; ++i) {
    absl::StatusOr<double> f =
        ReadFramesPerS(absl::StrCat(dir, "/env-", i, ".json"));
    if (!f.ok()) return f.status();
    r.frames_per_s += *f;
  }
  return r;
}

absl::StatusOr<ProcessRun> RunProcessesOnce(const Config& config,
                                            const std::string& mode,
                                            const std::string& binary,
                                            const std::string& dir,
                                            double duration_s) {
  absl::StatusOr<ProcessesRunSetup> run =
      ProcessesRunSetupOf(config, mode, dir);
  if (!run.ok()) return run.status();
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  const std::string config_path = dir + "/config.yaml";
  if (absl::Status s = WriteTextFile(config_path, ConfigToYaml(run->config));
      !s.ok()) {
    return s;
  }
  const NetOptions& net = run->net;
  const ClusterLayout& layout = run->layout;
  ChildProcess up({binary, "up", "--local", "--config", config_path},
                  dir + "/up.log");
  if (absl::Status s = up.Start(); !s.ok()) return s;
  ProcessRun r;
  r.processes =
      1 + static_cast<int>(layout.inference.size() + layout.rollout.size());
  spdlog::info("bench: {} across {} processes (log {})", mode, r.processes,
               up.log_path());
  absl::Status st = WaitAllHealthy(layout, net, up, 180);
  // Warm-up: the first weights reach every role, the first batches run.
  if (st.ok()) SleepUnlessStopped(std::max(3.0, duration_s / 6));
  absl::StatusOr<Sample> a =
      st.ok() ? Take(layout, net) : absl::StatusOr<Sample>(st);
  if (a.ok()) SleepUnlessStopped(duration_s);
  absl::StatusOr<Sample> b = a.ok() ? Take(layout, net) : a;
  up.Stop(absl::Seconds(30));
  if (!b.ok()) return b.status();
  r.ran = true;
  r.window_s = std::chrono::duration<double>(b->at - a->at).count();
  r.env_frames_per_s = (b->env_frames - a->env_frames) / r.window_s;
  r.trained_samples_per_s = (b->trained - a->trained) / r.window_s;
  r.optimizer_steps = b->steps - a->steps;
  r.policy_version = b->version;
  return r;
}

}  // namespace rlvla3
