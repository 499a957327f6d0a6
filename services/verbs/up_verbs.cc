// `rl-vla3 up --local`, `down --local` and `status`: every role of the run as a
// process on this machine.
#include <cstdio>
#include <optional>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "runtime/config_schema.h"
#include "runtime/logging.h"
#include "services/options/cluster_options.h"
#include "services/runs/cluster_status.h"
#include "services/runs/local_cluster.h"
#include "services/verbs/verb.h"
#include "services/verbs/verbs.h"
#include "spdlog/spdlog.h"

namespace rlvla3 {
namespace {

// The network options of a run's clients (the shared token, if any).
// The run's network options; else nullopt and the exit code in *code (2 for
// a config error: an unreadable cluster.tls_* file).
std::optional<NetOptions> ClientNet(const Config& c, int* code) {
  absl::StatusOr<NetOptions> net = NetOptionsFromConfig(c);
  if (!net.ok()) {
    std::fprintf(stderr, "rl-vla3: %s\n", net.status().ToString().c_str());
    *code = IsConfigError(net.status()) ? kExitUsage : kExitFailure;
    return std::nullopt;
  }
  return *net;
}

int VerbUpDown(const VerbArgs& f) {
  const std::string& verb = f.verb;
  const bool local = f.Has("--local");
  if (!local) {
    std::fprintf(stderr,
                 "rl-vla3 %s: give --local (every role as a process on this "
                 "machine) or a CLUSTER.yaml (Kubernetes)\n",
                 verb.c_str());
    return kExitUsage;
  }
  auto c = LoadOrReport(f);
  if (!c) return kExitUsage;
  InitLogging(c->run.log_level, c->run.log_format);
  const std::string run_dir = c->run.out_dir + "/" + c->run.name;
  if (verb == "down") return RunDownLocal(run_dir);
  absl::StatusOr<std::string> dir = MakeRunDir(*c);
  int net_exit = kExitFailure;
  auto net = ClientNet(*c, &net_exit);
  if (!dir.ok() || !net) {
    if (!dir.ok()) spdlog::error("up: {}", dir.status().ToString());
    return dir.ok() ? net_exit : kExitFailure;
  }
  UpLocalOptions o;
  absl::StatusOr<std::string> self = SelfExecutable();
  if (!self.ok()) {
    spdlog::error("up: {}", std::string(self.status().message()));
    return kExitFailure;
  }
  o.binary = *self;
  o.config_path = *dir + "/config.yaml";
  o.run_dir = *dir;
  o.layout = LayoutFromConfig(c->cluster);
  o.interval_s = c->metrics.interval_s;
  o.role_timeout_s = c->cluster.role_timeout_s;
  o.collective_timeout_s = c->cluster.collective_timeout_s;
  o.liveness_s = c->cluster.role_timeout_s *
                 static_cast<double>(c->cluster.liveness_timeouts);
  o.metrics_port = static_cast<int>(c->metrics.prometheus_port);
  o.net = *net;
  // The run ends where `train` would: at rl.duration_s, unless --duration.
  if (!absl::SimpleAtod(f.Get("--duration", absl::StrCat(c->rl.duration_s)),
                        &o.duration_s) ||
      o.duration_s < 0) {
    std::fprintf(stderr, "rl-vla3 up: --duration takes seconds >= 0\n");
    return kExitUsage;
  }
  return RunUpLocal(o);
}

int VerbStatus(const VerbArgs& f) {
  auto c = LoadOrReport(f);
  if (!c) return kExitUsage;
  int net_exit = kExitFailure;
  auto net = ClientNet(*c, &net_exit);
  if (!net) return net_exit;
  ClusterLayout layout = LayoutFromConfig(c->cluster);
  // A run started elsewhere (by hand, Kubernetes): its learner's roster.
  if (const std::string learner = f.Get("--learner", ""); !learner.empty()) {
    layout = ClusterLayout{learner, {}, {}};
  }
  return RunStatus(layout, *net);
}

}  // namespace

Verb UpVerb() {
  return {
      "up",
      "--local: start every role of the run as a process on this machine\n"
      "(1 learner, cluster.inference_servers, cluster.rollout_workers), wait\n"
      "until all are healthy, print one progress line per metrics interval,\n"
      "restart a role that crashes (the 5th crash in 10 min ends the run); "
      "the\n"
      "learner's exit 0 or any role's exit 2 ends it; Ctrl-C stops them all\n"
      "  --local              every role on this machine\n"
      "  --duration S         stop after S seconds (default rl.duration_s, as\n"
      "                       train; 0: until stopped)\n"
      "  logs: RUN_DIR/logs/ROLE.log\n"
      "up CLUSTER.yaml: the job on Kubernetes (docs/kubernetes.md): kubectl\n"
      "apply of its objects, then progress until every pod is ready\n"
      "  --dry-run            print the manifests (token redacted), no "
      "kubectl\n"
      "  --timeout S          wait S seconds for readiness (default 600)\n",
      {"--duration"},
      {"--local"},
      VerbUpDown};
}

Verb DownVerb() {
  return {
      "down",
      "--local: stop the run that `up --local` started (same config)\n"
      "down CLUSTER.yaml [--delete-data]: delete the job's Kubernetes objects\n"
      "(the checkpoint volume only with --delete-data; never the namespace)\n",
      {"--duration"},
      {"--local"},
      VerbUpDown};
}

Verb StatusVerb() {
  return {
      "status",
      "health, policy version and throughput of every role of the run (the\n"
      "addresses the config lays out), then the learner's roster: every role\n"
      "that sends heartbeats, a role silent past cluster.role_timeout_s\n"
      "flagged SILENT; exit 1 unless all are SERVING and none is silent\n"
      "  --learner HOST:PORT  a run started elsewhere: its learner and "
      "roster\n"
      "status CLUSTER.yaml: the job's pods on Kubernetes per role (ready,\n"
      "restarts, phases); exit 1 unless all are ready\n",
      {"--learner"},
      {},
      VerbStatus};
}

}  // namespace rlvla3
