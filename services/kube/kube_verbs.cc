#include "services/kube/kube_verbs.h"

#include <cstdio>

#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "runtime/config_schema.h"
#include "services/kube/cluster_spec.h"
#include "services/kube/kubectl.h"
#include "services/kube/manifests.h"

namespace rlvla3::kube {
namespace {

constexpr int kExitOk = 0;
constexpr int kExitFailure = 1;
constexpr int kExitUsage = 2;
// Without change, the progress line is repeated this often.
constexpr double kRepeatProgressS = 30;

// Prints `s` as the CLI does (config errors as "config error", exit 2).
int Report(const std::string& verb, const absl::Status& s) {
  if (IsConfigError(s)) {
    std::fprintf(stderr, "rl-vla3: config error: %s\n",
                 std::string(s.message()).c_str());
    return kExitUsage;
  }
  std::fprintf(stderr, "rl-vla3 %s: %s\n", verb.c_str(),
               std::string(s.message()).c_str());
  return kExitFailure;
}

// kubectl on PATH, talking to a cluster that answers.
absl::StatusOr<Kubectl> Connect() {
  absl::StatusOr<Kubectl> k = Kubectl::Find();
  if (!k.ok()) return k.status();
  if (absl::Status s = k->CheckCluster(); !s.ok()) return s;
  return k;
}

void PrintIndented(const std::string& text) {
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    std::printf("  %s\n", std::string(line).c_str());
  }
  std::fflush(stdout);
}

void PrintWhereToWatch(const ClusterSpec& spec) {
  std::printf(
      "  logs:    kubectl -n %s logs -f statefulset/%s-learner\n"
      "  pods:    rl-vla3 status %s\n"
      "  roster:  kubectl -n %s port-forward pod/%s-learner-0 %lld, then\n"
      "           rl-vla3 status --learner 127.0.0.1:%lld%s\n"
      "  stop:    rl-vla3 down %s\n",
      spec.ns.c_str(), spec.name.c_str(), spec.path.c_str(), spec.ns.c_str(),
      spec.name.c_str(), static_cast<long long>(spec.learner.port),
      static_cast<long long>(spec.learner.port),
      spec.token_file.empty()
          ? ""
          : absl::StrCat(" --set cluster.token_file=", spec.token_path).c_str(),
      spec.path.c_str());
  std::fflush(stdout);
}

// Polls the job's pods until all are ready or the timeout.
int WaitUntilReady(const Kubectl& k, const ClusterSpec& spec,
                   const KubeUpOptions& o) {
  const absl::Time start = absl::Now();
  const absl::Time deadline = start + absl::Seconds(o.timeout_s);
  std::string last_line, last_error;
  absl::Time last_print = absl::InfinitePast();
  while (true) {
    absl::StatusOr<std::vector<PodState>> pods = k.Pods(spec);
    const int64_t t = absl::ToInt64Seconds(absl::Now() - start);
    if (!pods.ok()) {
      // The API server may blink; the timeout decides.
      if (pods.status().ToString() != last_error) {
        std::fprintf(stderr, "up: [%4llds] %s\n", static_cast<long long>(t),
                     std::string(pods.status().message()).c_str());
      }
      last_error = pods.status().ToString();
    } else {
      const std::vector<RoleState> roles = Summarize(spec, *pods);
      const std::string line = ProgressLine(roles);
      if (line != last_line ||
          absl::Now() - last_print > absl::Seconds(kRepeatProgressS)) {
        std::printf("up: [%4llds] %s\n", static_cast<long long>(t),
                    line.c_str());
        std::fflush(stdout);
        last_line = line;
        last_print = absl::Now();
      }
      if (AllReady(roles)) {
        std::printf("up: job %s is ready in namespace %s\n", spec.name.c_str(),
                    spec.ns.c_str());
        PrintWhereToWatch(spec);
        return kExitOk;
      }
    }
    if (absl::Now() + absl::Seconds(o.poll_s) > deadline) break;
    absl::SleepFor(absl::Seconds(o.poll_s));
  }
  std::fprintf(stderr,
               "rl-vla3 up: not every pod is ready after %.0f s (%s); the "
               "objects stay applied.\n  see: kubectl -n %s get pods -l "
               "app.kubernetes.io/instance=%s; kubectl -n %s describe pod "
               "POD\n  stop: rl-vla3 down %s\n",
               o.timeout_s, last_line.c_str(), spec.ns.c_str(),
               spec.name.c_str(), spec.ns.c_str(), spec.path.c_str());
  return kExitFailure;
}

std::string StatusTable(const std::vector<RoleState>& roles) {
  std::string out = absl::StrFormat("%-10s %-7s %-9s %s\n", "ROLE", "READY",
                                    "RESTARTS", "PODS");
  for (const RoleState& r : roles) {
    std::vector<std::string> phases;
    for (const auto& [phase, n] : r.phases) {
      phases.push_back(absl::StrCat(phase, " ", n));
    }
    std::string pods = phases.empty() ? "none" : absl::StrJoin(phases, ", ");
    if (!r.reasons.empty()) {
      absl::StrAppend(&pods, " (", absl::StrJoin(r.reasons, ", "), ")");
    }
    absl::StrAppendFormat(&out, "%-10s %-7s %-9d %s\n", r.role,
                          absl::StrCat(r.ready, "/", r.desired), r.restarts,
                          pods);
  }
  return out;
}

int Usage(const std::string& verb, const std::string& bad) {
  std::fprintf(stderr,
               "rl-vla3 %s: unknown argument '%s'\nusage: rl-vla3 up "
               "CLUSTER.yaml [--dry-run] [--timeout S]\n       rl-vla3 down "
               "CLUSTER.yaml [--delete-data]\n       rl-vla3 status "
               "CLUSTER.yaml\n",
               verb.c_str(), bad.c_str());
  return kExitUsage;
}

// The token's and the TLS files' contents, for the Secrets `up` applies.
absl::StatusOr<SecretValues> ReadSecrets(const ClusterSpec& spec) {
  SecretValues v;
  if (!spec.token_file.empty()) {
    absl::StatusOr<std::string> t = ReadToken(spec);
    if (!t.ok()) return t.status();
    v.token = *std::move(t);
  }
  if (!spec.tls.cert.empty()) {
    absl::StatusOr<std::vector<std::string>> tls = ReadTlsFiles(spec);
    if (!tls.ok()) return tls.status();
    v.tls_cert = (*tls)[0];
    v.tls_key = (*tls)[1];
    v.tls_ca = (*tls)[2];
  }
  return v;
}

}  // namespace

int RunKubeUp(const std::string& path, const KubeUpOptions& o) {
  absl::StatusOr<ClusterSpec> spec = LoadClusterSpec(path);
  if (!spec.ok()) return Report("up", spec.status());
  if (absl::Status s = CheckRunConfig(*spec); !s.ok()) return Report("up", s);
  absl::StatusOr<std::string> config = ReadRunConfig(*spec);
  if (!config.ok()) return Report("up", config.status());
  if (o.dry_run) {
    std::fputs(
        JoinManifests(RenderManifests(*spec, *config, SecretValues{})).c_str(),
        stdout);
    return kExitOk;
  }
  absl::StatusOr<Kubectl> k = Connect();
  if (!k.ok()) return Report("up", k.status());
  absl::StatusOr<SecretValues> secrets = ReadSecrets(*spec);
  if (!secrets.ok()) return Report("up", secrets.status());
  const std::string token = secrets->token.value_or("");
  const std::string manifests =
      JoinManifests(RenderManifests(*spec, *config, *secrets));
  std::printf("up: applying job %s to namespace %s\n", spec->name.c_str(),
              spec->ns.c_str());
  absl::StatusOr<std::string> out = k->Apply(manifests, token);
  if (!out.ok()) return Report("up", out.status());
  PrintIndented(*out);
  return WaitUntilReady(*k, *spec, o);
}

int RunKubeDown(const std::string& path, const KubeDownOptions& o) {
  absl::StatusOr<ClusterSpec> spec = LoadClusterSpec(path, false);
  if (!spec.ok()) return Report("down", spec.status());
  absl::StatusOr<Kubectl> k = Connect();
  if (!k.ok()) return Report("down", k.status());
  std::vector<Manifest> keep, remove;
  for (Manifest& m : RenderManifests(*spec, "", SecretValues{})) {
    const bool kept = m.kind == "Namespace" ||
                      (m.kind == "PersistentVolumeClaim" && !o.delete_data);
    (kept ? keep : remove).push_back(std::move(m));
  }
  std::printf("down: deleting job %s from namespace %s\n", spec->name.c_str(),
              spec->ns.c_str());
  absl::StatusOr<std::string> out = k->Delete(JoinManifests(remove));
  if (!out.ok()) return Report("down", out.status());
  PrintIndented(*out);
  for (const Manifest& m : keep) {
    std::printf("down: kept %s %s (%s)\n", m.kind.c_str(), m.name.c_str(),
                m.kind == "Namespace"
                    ? "shared by the jobs in it"
                    : "the checkpoints; --delete-data deletes it");
  }
  return kExitOk;
}

int RunKubeStatus(const std::string& path) {
  absl::StatusOr<ClusterSpec> spec = LoadClusterSpec(path, false);
  if (!spec.ok()) return Report("status", spec.status());
  absl::StatusOr<Kubectl> k = Connect();
  if (!k.ok()) return Report("status", k.status());
  absl::StatusOr<std::vector<PodState>> pods = k->Pods(*spec);
  if (!pods.ok()) return Report("status", pods.status());
  const std::vector<RoleState> roles = Summarize(*spec, *pods);
  std::printf("job %s in namespace %s: %zu pods\n%s", spec->name.c_str(),
              spec->ns.c_str(), pods->size(), StatusTable(roles).c_str());
  if (pods->empty()) {
    std::printf("no pods: start the job with `rl-vla3 up %s`\n",
                spec->path.c_str());
  }
  return AllReady(roles) ? kExitOk : kExitFailure;
}

bool IsKubeInvocation(const std::vector<std::string>& args) {
  if (args.size() < 2) return false;
  if (args[0] != "up" && args[0] != "down" && args[0] != "status") {
    return false;
  }
  for (const std::string& a : args) {
    if (a == "--local") return false;
  }
  return !args[1].empty() && args[1][0] != '-';
}

int RunKubeCli(const std::vector<std::string>& args) {
  const std::string& verb = args.at(0);
  const std::string& path = args.at(1);
  KubeUpOptions up;
  KubeDownOptions down;
  for (size_t i = 2; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (verb == "up" && a == "--dry-run") {
      up.dry_run = true;
    } else if (verb == "up" &&
               (a == "--timeout" || absl::StartsWith(a, "--timeout="))) {
      std::string value = a == "--timeout" ? "" : a.substr(10);
      if (a == "--timeout" && i + 1 < args.size()) value = args[++i];
      if (!absl::SimpleAtod(value, &up.timeout_s) || !(up.timeout_s > 0)) {
        std::fprintf(stderr, "rl-vla3 up: --timeout takes seconds > 0\n");
        return kExitUsage;
      }
    } else if (verb == "down" && a == "--delete-data") {
      down.delete_data = true;
    } else {
      return Usage(verb, a);
    }
  }
  if (verb == "up") return RunKubeUp(path, up);
  if (verb == "down") return RunKubeDown(path, down);
  return RunKubeStatus(path);
}

}  // namespace rlvla3::kube
