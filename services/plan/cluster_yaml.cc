#include "services/plan/cluster_yaml.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace rlvla3 {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// A memory request: the estimate plus 1 GiB for the process itself.
std::string Gi(double bytes) {
  return absl::StrCat(static_cast<int64_t>(std::ceil(bytes / kGiB)) + 1, "Gi");
}

std::string Role(const char* name, const char* comment, int replicas, int gpus,
                 int cpu, const std::string& memory,
                 const std::vector<std::string>& set) {
  std::string out = absl::StrFormat(
      "%s:                       # %s\n  replicas: %d\n  gpus: %d\n"
      "  cpu: \"%d\"\n  memory: %s\n",
      name, comment, replicas, gpus, cpu, memory);
  if (!set.empty()) {
    out += "  set:\n";
    for (const std::string& s : set) out += absl::StrCat("    - ", s, "\n");
  }
  return out;
}

}  // namespace

std::string ClusterYaml(const SplitForecast& f, const PlanInputs& in,
                        const ClusterYamlOptions& o) {
  const Split& s = f.split;
  const RunShape& r = in.run;
  const bool gpu = in.offer.gpus > 0;
  std::string out = absl::StrFormat(
      "# Written by `rl-vla3 plan` (docs/planning.md): %d rollout pods x %d "
      "envs (%d env threads each), %d inference servers, %d learner ranks.\n"
      "# Predicted (async): %.0f env frames/s, %.0f trained samples/s, "
      "bottleneck %s.\n"
      "#   rl-vla3 up THIS_FILE --dry-run\n\n"
      "name: %s\nnamespace: %s\nimage: %s\nconfig: %s\n\n"
      "set:                             # every role: the learner sizes its "
      "batch from it\n  - env.num_envs=%d\n\n",
      s.rollout_workers, s.envs_per_worker, s.env_workers, s.inference_servers,
      s.learner_ranks, f.async.frames_per_s, f.async.samples_per_s,
      f.async.bottleneck, o.name, o.ns, o.image, o.config, s.envs_per_worker);
  if (gpu && s.inference_servers + s.learner_ranks > in.offer.total_gpus()) {
    absl::StrAppendFormat(
        &out,
        "# %d GPU pods on %d GPUs: the plan shares them, so the cluster must\n"
        "# share GPUs too (the NVIDIA device plugin's time-slicing); without\n"
        "# it the pods past the GPUs stay Pending.\n\n",
        s.inference_servers + s.learner_ranks, in.offer.total_gpus());
  }
  std::vector<std::string> learner_set,
      inference_set = {"threads.inference_actors=1"};
  if (gpu) {
    learner_set = {
        "learner.device=cuda",
        absl::StrCat("learner.precision=", r.learner_bf16 ? "bf16" : "fp32")};
    if (s.learner_ranks > 1)
      learner_set.push_back("cluster.learner_backend=nccl");
    inference_set.push_back("inference.device=cuda");
    inference_set.push_back(absl::StrCat("inference.precision=",
                                         r.inference_bf16 ? "bf16" : "fp32"));
  }
  const double learner_host =
      gpu ? f.learner.Of("segments") + 4.0 * r.policy.parameters * 3
          : f.learner.total_bytes;
  const double inference_host =
      gpu ? f.inference.Of("inputs") + 4.0 * r.policy.parameters
          : f.inference.total_bytes;
  out += Role("learner", "data-parallel ranks", s.learner_ranks, gpu ? 1 : 0,
              gpu ? 2 : r.learner_threads + 1, Gi(learner_host), learner_set);
  out +=
      Role("inference", "each rollout pod shards its envs over all",
           s.inference_servers, gpu ? 1 : 0, gpu ? 2 : r.inference_threads + 1,
           Gi(inference_host), inference_set);
  out += Role("rollout", "envs on CPU cores", s.rollout_workers, 0,
              s.env_workers + 1, Gi(f.rollout_host.total_bytes),
              {absl::StrCat("threads.env_workers=", s.env_workers)});
  const double checkpoints =
      10.0 * 12.0 * static_cast<double>(r.policy.parameters);
  out += absl::StrCat(
      "\nstorage:\n  size: ", Gi(std::max(checkpoints, 19.0 * kGiB)), "\n");
  return out;
}

}  // namespace rlvla3
