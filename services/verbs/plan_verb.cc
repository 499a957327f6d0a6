// `rl-vla3 plan`: a split of the roles over the nodes on offer, forecast
// from a stage-cost profile by the pipeline model (services/plan), and the
// CLUSTER.yaml that runs it.
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "runtime/text_file.h"
#include "services/kube/cluster_spec.h"
#include "services/options/plan_options.h"
#include "services/plan/cluster_yaml.h"
#include "services/plan/plan_report.h"
#include "services/plan/stage_costs.h"
#include "services/verbs/verb.h"
#include "services/verbs/verbs.h"

namespace rlvla3 {
namespace {

// A number flag within [lo, hi]; nullopt after a message.
std::optional<double> Real(const VerbArgs& f, const char* flag,
                           const std::string& fallback, double lo, double hi) {
  const std::string v = f.Get(flag, fallback);
  double x = 0;
  if (!absl::SimpleAtod(v, &x) || !(x >= lo && x <= hi)) {
    std::fprintf(stderr,
                 "rl-vla3: %s expects a number from %g to %g, got '%s'\n", flag,
                 lo, hi, v.c_str());
    return std::nullopt;
  }
  return x;
}

// A count flag within [lo, hi] (1.5 nodes is refused, not truncated).
std::optional<double> Count(const VerbArgs& f, const char* flag,
                            const std::string& fallback, int lo, int hi) {
  const std::string v = f.Get(flag, fallback);
  int x = 0;
  if (!absl::SimpleAtoi(v, &x) || x < lo || x > hi) {
    std::fprintf(stderr,
                 "rl-vla3: %s expects a whole number from %d to %d, got "
                 "'%s'\n",
                 flag, lo, hi, v.c_str());
    return std::nullopt;
  }
  return x;
}

// The nodes on offer from the flags (this machine by default).
std::optional<NodeOffer> Offer(const VerbArgs& f, int profile_cores) {
  NodeOffer o;
  const auto nodes = Count(f, "--nodes", "1", 1, 100000);
  const auto cores =
      Count(f, "--cores", std::to_string(profile_cores), 1, 100000);
  const auto gpus = Count(f, "--gpus", "0", 0, 64);
  const auto mem = Real(f, "--gpu-memory", "0", 0, 1e6);
  const auto host = Real(f, "--host-memory", "0", 0, 1e7);
  const auto link = Real(f, "--link-gbps", "0", 0, 1e6);
  if (!nodes || !cores || !gpus || !mem || !host || !link) return std::nullopt;
  o.nodes = static_cast<int>(*nodes);
  o.cores = static_cast<int>(*cores);
  o.gpus = static_cast<int>(*gpus);
  o.gpu_memory_gib = *mem;
  o.host_memory_gib = *host;
  o.link_gbps = *link;
  if (o.gpus > 0 && o.gpu_memory_gib <= 0) {
    std::fprintf(stderr,
                 "rl-vla3: --gpus needs --gpu-memory GIB (each GPU's memory): "
                 "the plan checks that each pod fits\n");
    return std::nullopt;
  }
  return o;
}

// --table 8,64,256,1024: the best split at each GPU count.
int ScaleTable(const VerbArgs& f, PlanInputs in) {
  const int per_node = in.offer.gpus;
  if (per_node <= 0) {
    std::fprintf(stderr, "rl-vla3: --table needs --gpus (GPUs per node)\n");
    return kExitUsage;
  }
  std::vector<ScaleRow> rows;
  for (absl::string_view t : absl::StrSplit(f.Get("--table", ""), ',')) {
    int n = 0;
    if (!absl::SimpleAtoi(t, &n) || n < per_node || n % per_node != 0 ||
        n > 65536) {
      std::fprintf(stderr,
                   "rl-vla3: --table expects GPU counts that are multiples of "
                   "--gpus (%d), up to 65536; got '%s'\n",
                   per_node, std::string(t).c_str());
      return kExitUsage;
    }
    in.offer.nodes = n / per_node;
    const std::vector<SplitForecast> all =
        SearchSplits(in, Candidates(in), PlanGoal{}).finalists;
    ScaleRow row;
    row.gpus = n;
    if (const SplitForecast* b = Best(all, PlanGoal{}); b != nullptr) {
      row.best = *b;
      ForecastSync(in, &row.best);
      row.found = true;
    }
    rows.push_back(row);
  }
  std::printf(
      "scale table: nodes of %d cores x %d GPUs (%.0f GiB), link %s\n%s",
      in.offer.cores, per_node, in.offer.gpu_memory_gib,
      in.offer.link_gbps > 0
          ? (std::to_string(static_cast<int>(in.offer.link_gbps)) + " Gb/s")
                .c_str()
          : "as measured",
      FormatScaleTable(rows).c_str());
  const std::string json = f.Get("--json", "");
  if (json.empty()) return kExitOk;
  if (absl::Status s = WriteTextFile(json, ScaleTableJson(rows)); !s.ok()) {
    std::fprintf(stderr, "rl-vla3 plan: %s\n", s.ToString().c_str());
    return kExitFailure;
  }
  return kExitOk;
}

// Writes the CLUSTER.yaml of `best` to --out, after `up`'s own parser
// accepts it.
int WriteCluster(const VerbArgs& f, const PlanInputs& in,
                 const SplitForecast& best) {
  namespace fs = std::filesystem;
  const std::string out = f.Get("--out", "");
  ClusterYamlOptions o;
  o.name = f.Get("--name", "rl-vla3");
  o.image =
      f.Get("--image", std::string("ghcr.io/example/rl-vla3:") +
                           RLVLA3_VERSION + (in.offer.gpus > 0 ? "-cuda" : ""));
  std::error_code ec;
  const fs::path folder = fs::absolute(fs::path(out)).parent_path();
  const fs::path config =
      fs::absolute(f.config_path.empty() ? "configs/demo.yaml" : f.config_path);
  o.config = fs::relative(config, folder, ec).string();
  if (ec || o.config.empty()) o.config = config.string();
  const std::string yaml = ClusterYaml(best, in, o);
  absl::StatusOr<kube::ClusterSpec> spec =
      kube::ParseClusterSpec(yaml, out, /*check_files=*/true);
  if (!spec.ok()) {
    std::fprintf(stderr, "rl-vla3 plan: the CLUSTER.yaml would not load: %s\n",
                 spec.status().ToString().c_str());
    return kExitFailure;
  }
  if (absl::Status s = WriteTextFile(out, yaml); !s.ok()) {
    std::fprintf(stderr, "rl-vla3 plan: %s\n", s.ToString().c_str());
    return kExitFailure;
  }
  std::printf("\nCLUSTER.yaml: %s (rl-vla3 up %s --dry-run)\n", out.c_str(),
              out.c_str());
  return kExitOk;
}

// --forecast train|processes: the config's own split, as `train` runs it
// in one process or `up --local` as processes; --json FILE for scripts.
int ForecastOwn(const VerbArgs& f, const PlanInputs& in, const Config& c,
                const std::string& how) {
  if (how != "train" && how != "processes") {
    std::fprintf(stderr,
                 "rl-vla3 plan: --forecast expects train or processes, got "
                 "'%s'\n",
                 how.c_str());
    return kExitUsage;
  }
  if (!f.Get("--out", "").empty() || !f.Get("--table", "").empty() ||
      !f.Get("--goal-frames", "").empty()) {
    std::fprintf(stderr,
                 "rl-vla3 plan: --forecast forecasts the config's own split; "
                 "--out, --table and --goal-frames cannot go with it\n");
    return kExitUsage;
  }
  const SplitForecast one = Forecast(in, ConfigSplit(c, how == "processes"));
  std::printf("%s", FormatPlan(in, {one}, one, "forecast").c_str());
  const std::string json = f.Get("--json", "");
  if (json.empty()) return kExitOk;
  if (absl::Status s = WriteTextFile(json, ForecastJson(one)); !s.ok()) {
    std::fprintf(stderr, "rl-vla3 plan: %s\n", s.ToString().c_str());
    return kExitFailure;
  }
  return kExitOk;
}

int VerbPlan(const VerbArgs& f) {
  const std::string costs_path = f.Get("--stage-costs", "");
  if (costs_path.empty()) {
    std::fprintf(stderr,
                 "rl-vla3 plan: give --stage-costs FILE (rl-vla3 bench "
                 "--stage-costs FILE writes one)\n");
    return kExitUsage;
  }
  auto c = LoadOrReport(f);
  if (!c) return kExitUsage;
  absl::StatusOr<StageCostProfile> costs = ReadStageCosts(costs_path);
  if (!costs.ok()) {
    std::fprintf(stderr, "rl-vla3 plan: %s\n",
                 std::string(costs.status().message()).c_str());
    return kExitUsage;
  }
  PlanInputs in;
  in.costs = *costs;
  in.run = PlanRunShape(*c);
  std::optional<NodeOffer> offer = Offer(f, costs->cores);
  const auto seconds = Real(f, "--seconds", "120", 1, 36000);
  const auto goal = Real(f, "--goal-frames", "0", 0, 1e12);
  if (!offer || !seconds || !goal) return kExitUsage;
  in.offer = *offer;
  in.seconds = *seconds;
  in.run.policy.parameters = costs->policy.parameters;
  if (!f.Get("--table", "").empty()) {
    if (!f.Get("--out", "").empty()) {
      std::fprintf(stderr,
                   "rl-vla3 plan: --table prints a table; --out writes one "
                   "plan's CLUSTER.yaml: give one of them\n");
      return kExitUsage;
    }
    return ScaleTable(f, in);
  }
  const std::string own = f.Get("--forecast", "");
  if (!own.empty()) return ForecastOwn(f, in, *c, own);
  PlanGoal g;
  g.frames_per_s = *goal;
  // A CLUSTER.yaml is a split across processes: --out leaves out the roles
  // in one process (which `train` runs, not `up`).
  const bool cluster = !f.Get("--out", "").empty();
  const SplitSearch search = SearchSplits(in, Candidates(in, cluster), g);
  const std::vector<SplitForecast>& all = search.finalists;
  const SplitForecast* best = Best(all, g);
  if (best == nullptr) {
    std::fprintf(
        stderr, "rl-vla3 plan: no split of %zu tried fits the offer%s\n",
        search.others.size(), g.frames_per_s > 0 ? " and meets the goal" : "");
    return kExitFailure;
  }
  SplitForecast chosen = *best;
  ForecastSync(in, &chosen);
  std::printf("%s", FormatPlan(in, all, chosen).c_str());
  if (f.Get("--out", "").empty()) return kExitOk;
  return WriteCluster(f, in, chosen);
}

}  // namespace

Verb PlanVerb() {
  return {
      "plan",
      "a split of the roles over the nodes on offer, forecast from measured\n"
      "stage costs by a simulation of the runtime's queues (docs/planning.md)\n"
      "  --stage-costs FILE      what bench --stage-costs measured (required)\n"
      "  --nodes N               nodes on offer (default 1)\n"
      "  --cores N               cores per node (default: the profile's)\n"
      "  --gpus N                GPUs per node (default 0: CPU only)\n"
      "  --gpu-memory GIB        each GPU's memory (with --gpus)\n"
      "  --host-memory GIB       each node's memory (default: not checked)\n"
      "  --link-gbps B           bandwidth per GPU between nodes (default:\n"
      "                          the all-reduce rate the profile measured)\n"
      "  --goal-frames F         the fewest GPUs, then cores, making F env\n"
      "                          frames/s (default: the most samples/s)\n"
      "  --seconds S             simulated time per forecast (default 120)\n"
      "  --out CLUSTER.yaml      write the plan for rl-vla3 up (the best\n"
      "                          split across processes)\n"
      "  --image IMAGE           its image (default the release's)\n"
      "  --name NAME             its job name (default rl-vla3)\n"
      "  --table 8,64,256,1024   the best split at each GPU count instead\n"
      "  --forecast train|processes  only the config's own split, as train\n"
      "                          or up --local runs it\n"
      "  --json FILE             also the forecast (or the table) as JSON\n",
      {"--stage-costs", "--nodes", "--cores", "--gpus", "--gpu-memory",
       "--host-memory", "--link-gbps", "--goal-frames", "--seconds", "--out",
       "--image", "--name", "--table", "--forecast", "--json"},
      {},
      VerbPlan};
}

}  // namespace rlvla3
