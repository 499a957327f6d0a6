// `rl-vla3 serve ROLE`: one role as its own gRPC service.
#include <cstdio>
#include <optional>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "runtime/logging.h"
#include "services/runs/serve.h"
#include "services/verbs/verb.h"
#include "services/verbs/verbs.h"

namespace rlvla3 {
namespace {

int VerbServe(const VerbArgs& f) {
  auto c = LoadOrReport(f);
  if (!c) return kExitUsage;
  InitLogging(c->run.log_level, c->run.log_format);
  ServeFlags s;
  s.role = f.operand;
  s.listen = f.Get("--listen", "127.0.0.1:0");
  for (const std::string& v : f.All("--learner")) {
    for (absl::string_view t : absl::StrSplit(v, ',', absl::SkipEmpty())) {
      s.learner_ranks.emplace_back(t);
    }
  }
  if (!s.learner_ranks.empty()) s.learner = s.learner_ranks.front();
  for (const std::string& v : f.All("--inference")) {
    for (absl::string_view t : absl::StrSplit(v, ',', absl::SkipEmpty())) {
      s.inference.emplace_back(t);
    }
  }
  if (!absl::SimpleAtoi(f.Get("--worker", "0"), &s.worker) ||
      !absl::SimpleAtod(f.Get("--duration", "0"), &s.duration_s)) {
    std::fprintf(stderr,
                 "rl-vla3: serve: --worker and --duration take "
                 "numbers\n");
    return kExitUsage;
  }
  return RunServe(*c, s);
}

}  // namespace

Verb ServeVerb() {
  return {
      "serve",
      "ROLE: run one role as its own gRPC service (learner | inference |\n"
      "rollout); prints \"ROLE: serving on HOST:PORT\" when ready\n"
      "  --listen HOST:PORT   where to serve (default 127.0.0.1:0: any port)\n"
      "  --learner HOST:PORT  the learner (inference, rollout); rollout: its\n"
      "                       ranks A[,B...], segments spread across them\n"
      "  --inference A[,B]    inference servers; envs are sharded (rollout)\n"
      "  --worker W           this rollout worker's index (< "
      "cluster.rollout_workers)\n"
      "  --duration S         stop after S seconds (default: until signalled)\n"
      "  token: cluster.token_file, else env RLVLA3_TOKEN (never logged);\n"
      "  over plaintext only on loopback unless cluster.allow_plaintext_token\n"
      "  TLS: cluster.tls_cert, cluster.tls_key, cluster.tls_ca (mutual)\n"
      "  metrics: metrics.prometheus_port serves /metrics (Prometheus)\n",
      {"--listen", "--learner", "--inference", "--worker", "--duration"},
      {},
      VerbServe,
      /*takes_operand=*/true,
      "rl-vla3: serve needs a role: learner, inference or rollout\n"};
}

}  // namespace rlvla3
