#include "services/cli.h"

#include <spdlog/spdlog.h>
#include <torch/torch.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "envs/egl_context.h"
#include "policies/checkpoint.h"
#include "policies/tiny_vla_policy.h"
#include "policies/trainable_policy.h"
#include "runtime/config.h"
#include "runtime/logging.h"
#include "runtime/metrics_writer.h"
#include "runtime/report_html.h"
#include "runtime/text_file.h"
#include "runtime/thread_budget.h"
#include "services/bench.h"
#include "services/config_bridge.h"
#include "services/engine_config.h"
#include "services/expert_eval.h"
#include "services/kube/kube_verbs.h"
#include "services/local_cluster.h"
#include "services/selfcheck.h"
#include "services/serve.h"
#include "services/sft.h"
#include "services/train.h"
#include "services/visualize.h"

namespace rlvla3 {
namespace {

constexpr int kExitOk = 0;
constexpr int kExitFailure = 1;
constexpr int kExitUsage = 2;

constexpr char kUsage[] =
    "usage: rl-vla3 <verb> [--config FILE] [--set key=value ...] [verb flags]\n"
    "verbs:\n"
    "  config         print the resolved config (defaults, file, overrides)\n"
    "  selfcheck      runtime self-check (queues, batcher, codec, LibTorch)\n"
    "  render         --task NAME|FILE.yaml [--init K] [--out frame.png]\n"
    "                 both camera views of one initial state\n"
    "  rollout-video  --task NAME|FILE.yaml [--policy expert|random] [--init "
    "K]\n"
    "                 [--out run.gif|run.mp4]  record one episode\n"
    "  expert-eval    [--task NAME]... [--episodes N]\n"
    "                 scripted-expert success rate per task\n"
    "  sft            behaviour cloning of TinyVLA from the scripted experts\n"
    "  eval           --checkpoint DIR [--episodes N] [--task NAME]...\n"
    "                 [--actions greedy|sampled] [--first-init K]\n"
    "                 a checkpoint's success rate per task\n"
    "  train          [--mode sync|async] [--init-checkpoint DIR]\n"
    "  serve ROLE     one role as a gRPC service (learner|inference|rollout)\n"
    "  up --local     every role as a process on this machine; down --local\n"
    "  up CLUSTER.yaml  the job on Kubernetes ([--dry-run]); down, status "
    "CLUSTER.yaml\n"
    "  status         health, version and throughput of every role\n"
    "                 RL post-training: env pool, inference actors, learner\n"
    "  bench          --config FILE [--duration SECONDS] [--json PATH]\n"
    "                 each stage alone, then sync vs async side by side\n"
    "  version        print the version\n"
    "  help           this text; `rl-vla3 VERB --help`: the verb's flags\n";

// `rl-vla3 VERB --help`: what the verb does and every flag it takes.
struct VerbHelp {
  const char* verb;
  const char* text;
};
constexpr char kCommonFlags[] =
    "  --config FILE     YAML config (defaults for every key not in it)\n"
    "  --set KEY=VALUE   override one config key (repeatable); `rl-vla3 "
    "config`\n"
    "                    prints every key with its resolved value\n"
    "  -h, --help        this text\n";
constexpr VerbHelp kVerbHelp[] = {
    {"config",
     "print the resolved config (defaults <- file <- --set) as YAML\n"},
    {"selfcheck",
     "runtime self-check: the queues, the dynamic batcher, the tensor codec "
     "and\nLibTorch, with simulated envs (selfcheck.* keys)\n"},
    {"render",
     "both camera views of one initial state as a PNG\n"
     "  --task NAME|FILE.yaml   a suite task or a task file\n"
     "  --init K                initial state (default 0)\n"
     "  --out PATH              output image (default frame.png)\n"},
    {"rollout-video",
     "record one episode as a GIF or MP4\n"
     "  --task NAME|FILE.yaml   a suite task or a task file\n"
     "  --policy expert|random  who acts (default expert)\n"
     "  --init K                initial state (default 0)\n"
     "  --out PATH              run.gif or run.mp4\n"},
    {"expert-eval",
     "the scripted experts' success rate per task\n"
     "  --task NAME             a task (repeatable; default all)\n"
     "  --episodes N            episodes per task (default 10)\n"},
    {"sft",
     "behaviour cloning of TinyVLA from scripted-expert demonstrations "
     "(sft.* keys);\nwrites <run.out_dir>/<run.name>/checkpoint\n"},
    {"eval",
     "a checkpoint's success rate per task (TinyVLA or TorchScript)\n"
     "  --checkpoint DIR        checkpoint folder (required)\n"
     "  --episodes N            episodes per task (default 10)\n"
     "  --first-init K          first initial state (default 0; training "
     "uses 0..49)\n"
     "  --task NAME             a task (repeatable; default sft.tasks)\n"
     "  --actions greedy|sampled  how tokens are chosen (default greedy)\n"},
    {"train",
     "RL post-training: rollout worker, inference server and learner "
     "(rl.* keys);\nwrites metrics, checkpoints and report.html to the run "
     "folder\n"
     "  --mode sync|async       run.mode (default async)\n"
     "  --init-checkpoint DIR   start from this checkpoint "
     "(rl.init_checkpoint)\n"
     "  a TorchScript policy: --set policy.kind=torchscript --set "
     "policy.path=M.pt\n"},
    {"bench",
     "each stage alone, then sync vs async side by side on the same config\n"
     "  --duration SECONDS      per mode (default 60)\n"
     "  --json PATH             figures as JSON (default "
     "<run folder>/bench.json)\n"
     "  --placement processes   also run async as separate processes (up\n"
     "                          --local) in the same table (default: process;\n"
     "                          sync runs in one process only)\n"},
    {"serve",
     "ROLE: run one role as its own gRPC service (learner | inference |\n"
     "rollout); prints \"ROLE: serving on HOST:PORT\" when ready\n"
     "  --listen HOST:PORT   where to serve (default 127.0.0.1:0: any port)\n"
     "  --learner HOST:PORT  the learner (inference, rollout); rollout: its\n"
     "                       ranks A[,B...], segments spread across them\n"
     "  --inference A[,B]    inference servers; envs are sharded (rollout)\n"
     "  --worker W           this rollout worker's index (< "
     "cluster.rollout_workers)\n"
     "  --duration S         stop after S seconds (default: until signalled)\n"
     "  token: cluster.token_file, else env RLVLA3_TOKEN (never logged)\n"},
    {"up",
     "--local: start every role of the run as a process on this machine\n"
     "(1 learner, cluster.inference_servers, cluster.rollout_workers), wait\n"
     "until all are healthy, print one progress line per metrics interval,\n"
     "restart inference/rollout processes that exit; Ctrl-C stops them all\n"
     "  --local              every role on this machine\n"
     "  --duration S         stop after S seconds (default: until stopped)\n"
     "  logs: RUN_DIR/logs/ROLE.log\n"
     "up CLUSTER.yaml: the job on Kubernetes (docs/kubernetes.md): kubectl\n"
     "apply of its objects, then progress until every pod is ready\n"
     "  --dry-run            print the manifests (token redacted), no kubectl\n"
     "  --timeout S          wait S seconds for readiness (default 600)\n"},
    {"down",
     "--local: stop the run that `up --local` started (same config)\n"
     "down CLUSTER.yaml [--delete-data]: delete the job's Kubernetes objects\n"
     "(the checkpoint volume only with --delete-data; never the namespace)\n"},
    {"status",
     "health, policy version and throughput of every role of the run (the\n"
     "addresses the config lays out), then the learner's roster: every role\n"
     "that sends heartbeats, a role silent past cluster.role_timeout_s\n"
     "flagged SILENT; exit 1 unless all are SERVING and none is silent\n"
     "  --learner HOST:PORT  a run started elsewhere: its learner and "
     "roster\n"
     "status CLUSTER.yaml: the job's pods on Kubernetes per role (ready,\n"
     "restarts, phases); exit 1 unless all are ready\n"},
    {"version", "print the version\n"},
};

// Prints `verb`'s help; false if there is no such verb.
bool PrintVerbHelp(const std::string& verb) {
  for (const VerbHelp& h : kVerbHelp) {
    if (verb != h.verb) continue;
    std::printf("usage: rl-vla3 %s [flags]\n%s%s", h.verb, h.text,
                kCommonFlags);
    return true;
  }
  return false;
}

// The flags every verb shares, plus the verb's own (`extra`, by flag name).
struct CommonFlags {
  std::string config_path;
  std::vector<std::string> overrides;
  std::vector<std::pair<std::string, std::string>> extra;

  // Every value given for `flag`, in order.
  std::vector<std::string> All(const std::string& flag) const {
    std::vector<std::string> v;
    for (const auto& [k, val] : extra) {
      if (k == flag) v.push_back(val);
    }
    return v;
  }
  // The last value given for `flag`, or `fallback`.
  std::string Get(const std::string& flag, const std::string& fallback) const {
    auto v = All(flag);
    return v.empty() ? fallback : v.back();
  }
};

// Parses --config FILE / --config=FILE, --set k=v / --set=k=v, and the flags
// named in `verb_flags` (each takes one value, as --flag V or --flag=V).
std::optional<CommonFlags> ParseFlags(
    const std::vector<std::string>& args, size_t first,
    const std::vector<std::string>& verb_flags = {}) {
  CommonFlags f;
  std::vector<std::string> flags = {"--config", "--set"};
  flags.insert(flags.end(), verb_flags.begin(), verb_flags.end());
  for (size_t i = first; i < args.size(); ++i) {
    const std::string& a = args[i];
    const std::string* matched = nullptr;
    for (const auto& flag : flags) {
      if (a == flag || absl::StartsWith(a, flag + "=")) matched = &flag;
    }
    if (matched == nullptr) {
      std::fprintf(stderr, "rl-vla3: unknown argument '%s'\n%s", a.c_str(),
                   kUsage);
      return std::nullopt;
    }
    std::string value;
    if (a == *matched) {
      if (i + 1 >= args.size()) {
        std::fprintf(stderr, "rl-vla3: %s needs a value\n", matched->c_str());
        return std::nullopt;
      }
      value = args[++i];
    } else {
      value = a.substr(matched->size() + 1);
    }
    if (*matched == "--config") {
      f.config_path = value;
    } else if (*matched == "--set") {
      f.overrides.push_back(value);
    } else {
      f.extra.emplace_back(*matched, value);
    }
  }
  return f;
}

// Loads the config or prints its one-line error; nullopt means exit 2.
std::optional<Config> LoadOrReport(const CommonFlags& f) {
  absl::StatusOr<Config> c = LoadConfig(f.config_path, f.overrides);
  if (!c.ok()) {
    std::fprintf(stderr, "rl-vla3: config error: %s\n",
                 std::string(c.status().message()).c_str());
    return std::nullopt;
  }
  // The only place thread counts are applied: LibTorch's pools, and
  // llvmpipe's render threads (Mesa reads LP_NUM_THREADS only from the
  // environment, when the first GL context is made: set here, before any).
  if (absl::Status s = ApplyThreadBudget(c->threads); !s.ok()) {
    std::fprintf(stderr, "rl-vla3: %s\n", std::string(s.message()).c_str());
    return std::nullopt;
  }
  ConfigureSoftwareRasterizer(static_cast<int>(c->threads.lp_num_threads));
  return *std::move(c);
}

int VerbConfig(const CommonFlags& f) {
  auto c = LoadOrReport(f);
  if (!c) return kExitUsage;
  std::fputs(ConfigToYaml(*c).c_str(), stdout);
  return kExitOk;
}

int VerbSelfCheck(const CommonFlags& f) {
  auto c = LoadOrReport(f);
  if (!c) return kExitUsage;
  InitLogging(c->run.log_level);
  spdlog::info(
      "self-check: {} envs x {} steps, {} inference actor(s), B_max {}, T_max "
      "{} ms",
      c->selfcheck.num_envs, c->selfcheck.steps_per_env,
      c->threads.inference_actors, c->batcher.max_batch,
      c->batcher.max_wait_ms);
  MetricsRegistry metrics;
  ProgressLine progress(stderr, ProgressLine::ParseMode(c->metrics.progress),
                        absl::Seconds(c->metrics.interval_s * 5));
  const double total =
      static_cast<double>(c->selfcheck.num_envs * c->selfcheck.steps_per_env);
  auto tick = [&](const MetricsSnapshot& s) {
    progress.Update(absl::StrFormat(
        "[selfcheck %5.1fs] frames %6.0f/%.0f | env frames/s %7.0f | wait for "
        "action p50 %.2f ms | "
        "busy env %3.0f%% inference %3.0f%% | request queue %3.0f",
        s.elapsed_s, s.Get("env_frames"), total, s.Get("env_frames_per_s"),
        s.Get("wait_for_action_ms.p50"), s.Get("env_step.busy_pct"),
        s.Get("inference.busy_pct"), s.Get("request_queue_depth")));
  };
  absl::StatusOr<SelfCheckReport> r = RunSelfCheck(*c, &metrics, tick);
  progress.Finish();
  if (!r.ok()) {
    spdlog::error("self-check failed: {}", r.status().ToString());
    return kExitFailure;
  }
  std::printf("%s\n", FormatSelfCheckReport(*r).c_str());
  return r->ok() ? kExitOk : kExitFailure;
}

// Parses a positive integer flag value; nullopt (after a message) if invalid.
std::optional<int> PositiveInt(const std::string& flag,
                               const std::string& text) {
  int v = 0;
  if (!absl::SimpleAtoi(text, &v) || v < 1) {
    std::fprintf(stderr, "rl-vla3: %s = \"%s\": expected a positive integer\n",
                 flag.c_str(), text.c_str());
    return std::nullopt;
  }
  return v;
}

int VerbExpertEval(const CommonFlags& f) {
  auto c = LoadOrReport(f);
  if (!c) return kExitUsage;
  InitLogging(c->run.log_level);
  auto episodes = PositiveInt("--episodes", f.Get("--episodes", "50"));
  if (!episodes) return kExitUsage;
  const auto start = absl::Now();
  absl::StatusOr<std::vector<ExpertTaskResult>> r =
      EvaluateExperts(f.All("--task"), *episodes, EnvOptionsFromConfig(*c),
                      static_cast<int>(c->threads.env_workers));
  if (!r.ok()) {
    spdlog::error("expert-eval: {}", r.status().ToString());
    return absl::IsNotFound(r.status()) ? kExitUsage : kExitFailure;
  }
  std::printf("%s", FormatExpertResults(*r).c_str());
  std::printf("scripted experts, %d seeded initial states per task, %.1f s\n",
              *episodes, absl::ToDoubleSeconds(absl::Now() - start));
  return kExitOk;
}

// What render and rollout-video share: config, logging, --task/--init/--out.
struct TaskVerb {
  Config config;
  std::string task;
  int init = 0;
  std::string out;
};

std::optional<TaskVerb> ParseTaskVerb(const CommonFlags& f, const char* verb,
                                      const std::string& default_out) {
  auto c = LoadOrReport(f);
  if (!c) return std::nullopt;
  InitLogging(c->run.log_level);
  TaskVerb v{*c, f.Get("--task", ""), 0, f.Get("--out", default_out)};
  const std::string init = f.Get("--init", "0");
  if (!absl::SimpleAtoi(init, &v.init) || v.init < 0) {
    std::fprintf(stderr, "rl-vla3: --init = \"%s\": expected an integer >= 0\n",
                 init.c_str());
    return std::nullopt;
  }
  if (v.task.empty()) {
    std::fprintf(stderr, "rl-vla3: %s needs --task NAME\n", verb);
    return std::nullopt;
  }
  return v;
}

int VerbRender(const CommonFlags& f) {
  auto v = ParseTaskVerb(f, "render", "frame.png");
  if (!v) return kExitUsage;
  absl::Status s = RenderInitialState(v->task, v->init,
                                      EnvOptionsFromConfig(v->config), v->out);
  if (!s.ok()) {
    spdlog::error("render: {}", s.ToString());
    return absl::IsNotFound(s) ? kExitUsage : kExitFailure;
  }
  std::printf(
      "wrote %s (agentview | wrist, %dx%d each; also *_agentview.png, "
      "*_wrist.png) for task %s, initial state %d\n",
      v->out.c_str(), static_cast<int>(v->config.env.image_width),
      static_cast<int>(v->config.env.image_height), v->task.c_str(), v->init);
  return kExitOk;
}

int VerbRolloutVideo(const CommonFlags& f) {
  auto v = ParseTaskVerb(f, "rollout-video", "run.gif");
  if (!v) return kExitUsage;
  absl::StatusOr<RolloutSummary> r =
      RecordRollout(v->task, f.Get("--policy", "expert"), v->init,
                    EnvOptionsFromConfig(v->config), v->out);
  if (!r.ok()) {
    spdlog::error("rollout-video: {}", r.status().ToString());
    return absl::IsNotFound(r.status()) || absl::IsInvalidArgument(r.status())
               ? kExitUsage
               : kExitFailure;
  }
  std::printf("wrote %s: %d steps, %s, %d frames\n", v->out.c_str(), r->steps,
              r->success ? "success" : "no success", r->frames);
  return kExitOk;
}

// The run folder <run.out_dir>/<run.name>, created, with the resolved config.
absl::StatusOr<std::string> MakeRunDir(const Config& c) {
  const std::string dir = c.run.out_dir + "/" + c.run.name;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return absl::UnavailableError(absl::StrCat(dir, ": ", ec.message()));
  if (absl::Status s = WriteTextFile(dir + "/config.yaml", ConfigToYaml(c));
      !s.ok())
    return s;
  return dir;
}

int VerbSft(const CommonFlags& f) {
  auto c = LoadOrReport(f);
  if (!c) return kExitUsage;
  InitLogging(c->run.log_level);
  absl::StatusOr<std::string> dir = MakeRunDir(*c);
  if (!dir.ok()) {
    spdlog::error("sft: {}", dir.status().ToString());
    return kExitFailure;
  }
  ProgressLine progress(stderr, ProgressLine::ParseMode(c->metrics.progress),
                        absl::Seconds(c->metrics.interval_s * 10));
  absl::StatusOr<SftResult> r =
      RunSft(*c, *dir, [&](const std::string& line) { progress.Update(line); });
  progress.Finish();
  if (!r.ok()) {
    spdlog::error("sft: {}", r.status().ToString());
    return kExitFailure;
  }
  const std::string summary = FormatSftResult(*r);
  std::printf("%s", summary.c_str());
  std::ofstream(*dir + "/sft_summary.txt") << summary;
  return kExitOk;
}

int VerbEval(const CommonFlags& f) {
  auto c = LoadOrReport(f);
  if (!c) return kExitUsage;
  InitLogging(c->run.log_level);
  const std::string path = f.Get("--checkpoint", "");
  if (path.empty()) {
    std::fprintf(stderr, "rl-vla3: eval needs --checkpoint PATH\n");
    return kExitUsage;
  }
  auto episodes = PositiveInt("--episodes", f.Get("--episodes", "10"));
  if (!episodes) return kExitUsage;
  int first_init = 0;
  if (const std::string v = f.Get("--first-init", "0");
      !absl::SimpleAtoi(v, &first_init) || first_init < 0) {
    std::fprintf(stderr,
                 "rl-vla3: eval --first-init expects an integer >= 0, got "
                 "'%s'\n",
                 v.c_str());
    return kExitUsage;
  }
  const std::string actions = f.Get("--actions", "greedy");
  if (actions != "greedy" && actions != "sampled") {
    std::fprintf(
        stderr, "rl-vla3: eval --actions must be greedy or sampled, got '%s'\n",
        actions.c_str());
    return kExitUsage;
  }
  const bool sampled = actions == "sampled";
  absl::StatusOr<PolicyCheckpoint> ck = LoadPolicyCheckpoint(path);
  if (!ck.ok()) {
    spdlog::error("eval: {}", ck.status().ToString());
    return kExitUsage;
  }
  Config cfg = *c;
  cfg.policy.chunk = ck->policy->chunk();
  cfg.policy.max_text_len = ck->policy->max_text_len();
  if (!f.All("--task").empty())
    cfg.sft.tasks = absl::StrJoin(f.All("--task"), ",");
  absl::StatusOr<std::vector<TaskSpec>> tasks = SftTasks(cfg);
  if (!tasks.ok()) {
    spdlog::error("eval: {}", tasks.status().ToString());
    return kExitUsage;
  }
  ck->policy->SetTraining(false);
  Policy& policy = *ck->policy;
  const auto start = absl::Now();
  absl::StatusOr<std::vector<TaskSuccess>> r = EvaluatePolicy(
      policy, ck->tokenizer, cfg, *tasks, *episodes, sampled, first_init);
  if (!r.ok()) {
    spdlog::error("eval: {}", r.status().ToString());
    return kExitFailure;
  }
  std::printf("%s", FormatTaskSuccess(*r).c_str());
  std::printf(
      "checkpoint %s (policy version %llu), %s actions, %d episodes per task "
      "from initial states %d..%d, %.0f s\n",
      path.c_str(), static_cast<unsigned long long>(ck->version),
      sampled ? "sampled" : "greedy", *episodes, first_init,
      first_init + *episodes - 1, absl::ToDoubleSeconds(absl::Now() - start));
  return kExitOk;
}

// --mode and --init-checkpoint become run.mode / rl.init_checkpoint overrides.
std::optional<Config> LoadWithRunFlags(CommonFlags f) {
  const std::string mode = f.Get("--mode", "");
  if (!mode.empty()) f.overrides.push_back("run.mode=" + mode);
  const std::string init = f.Get("--init-checkpoint", "");
  if (!init.empty()) f.overrides.push_back("rl.init_checkpoint=" + init);
  return LoadOrReport(f);
}

int VerbTrain(const CommonFlags& f) {
  auto c = LoadWithRunFlags(f);
  if (!c) return kExitUsage;
  InitLogging(c->run.log_level);
  if (absl::Status s = CheckRoleDevices(*c, true, true); !s.ok()) {
    spdlog::error("train: {}", std::string(s.message()));
    return kExitUsage;
  }
  absl::StatusOr<std::string> dir = MakeRunDir(*c);
  if (!dir.ok()) {
    spdlog::error("train: {}", dir.status().ToString());
    return kExitFailure;
  }
  InstallStopSignalHandlers();
  absl::StatusOr<EngineRun> r = RunEngineOnce(*c, *dir, RunOptions{});
  if (!r.ok()) {
    spdlog::error("train: {}", r.status().ToString());
    return IsConfigError(r.status()) ? kExitUsage : kExitFailure;
  }
  Report report{absl::StrCat("rl-vla3 train: ", c->run.name, " (", c->run.mode,
                             ", ", c->rl.algorithm, ")"),
                RunReportSections({&*r})};
  const std::string summary = FormatTrainSummary(*r);
  report.sections.insert(report.sections.begin(),
                         ReportSection{"Summary", summary, {}, {}, {}});
  const std::string report_path = *dir + "/report.html";
  if (absl::Status s = WriteReportHtml(report, report_path); !s.ok()) {
    spdlog::error("train: {}", s.ToString());
    return kExitFailure;
  }
  std::printf("%sreport: %s\n", summary.c_str(), report_path.c_str());
  std::ofstream(*dir + "/summary.txt") << summary;
  return kExitOk;
}

int VerbServe(const std::string& role, const CommonFlags& f) {
  auto c = LoadOrReport(f);
  if (!c) return kExitUsage;
  InitLogging(c->run.log_level);
  ServeFlags s;
  s.role = role;
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

// The network options of a run's clients (the shared token, if any).
std::optional<NetOptions> ClientNet(const Config& c) {
  absl::StatusOr<NetOptions> net = NetOptionsFromConfig(c);
  if (!net.ok()) {
    std::fprintf(stderr, "rl-vla3: %s\n", net.status().ToString().c_str());
    return std::nullopt;
  }
  return *net;
}

int VerbUpDown(const std::string& verb, bool local, const CommonFlags& f) {
  if (!local) {
    std::fprintf(stderr,
                 "rl-vla3 %s: give --local (every role as a process on this "
                 "machine) or a CLUSTER.yaml (Kubernetes)\n",
                 verb.c_str());
    return kExitUsage;
  }
  auto c = LoadOrReport(f);
  if (!c) return kExitUsage;
  InitLogging(c->run.log_level);
  const std::string run_dir = c->run.out_dir + "/" + c->run.name;
  if (verb == "down") return RunDownLocal(run_dir);
  absl::StatusOr<std::string> dir = MakeRunDir(*c);
  auto net = ClientNet(*c);
  if (!dir.ok() || !net) {
    if (!dir.ok()) spdlog::error("up: {}", dir.status().ToString());
    return kExitFailure;
  }
  UpLocalOptions o;
  char self[4096];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n <= 0) {
    spdlog::error("up: cannot find the rl-vla3 executable (/proc/self/exe)");
    return kExitFailure;
  }
  o.binary.assign(self, static_cast<size_t>(n));
  o.config_path = *dir + "/config.yaml";
  o.run_dir = *dir;
  o.layout = LayoutFromConfig(c->cluster);
  o.interval_s = c->metrics.interval_s;
  o.role_timeout_s = c->cluster.role_timeout_s;
  o.collective_timeout_s = c->cluster.collective_timeout_s;
  o.net = *net;
  if (!absl::SimpleAtod(f.Get("--duration", "0"), &o.duration_s)) {
    std::fprintf(stderr, "rl-vla3 up: --duration takes seconds\n");
    return kExitUsage;
  }
  return RunUpLocal(o);
}

int VerbStatus(const CommonFlags& f) {
  auto c = LoadOrReport(f);
  if (!c) return kExitUsage;
  auto net = ClientNet(*c);
  if (!net) return kExitFailure;
  ClusterLayout layout = LayoutFromConfig(c->cluster);
  // A run started elsewhere (by hand, Kubernetes): its learner's roster.
  if (const std::string learner = f.Get("--learner", ""); !learner.empty()) {
    layout = ClusterLayout{learner, {}, {}};
  }
  return RunStatus(layout, *net);
}

int VerbBench(const CommonFlags& f) {
  auto c = LoadWithRunFlags(f);
  if (!c) return kExitUsage;
  double duration = 60;
  const std::string d = f.Get("--duration", "60");
  if (!absl::SimpleAtod(d, &duration) || duration <= 0) {
    std::fprintf(stderr, "rl-vla3: --duration expects seconds > 0, got '%s'\n",
                 d.c_str());
    return kExitUsage;
  }
  InitLogging(c->run.log_level);
  absl::StatusOr<std::string> dir = MakeRunDir(*c);
  if (!dir.ok()) {
    spdlog::error("bench: {}", dir.status().ToString());
    return kExitFailure;
  }
  InstallStopSignalHandlers();
  const std::string config_name =
      f.config_path.empty() ? "(defaults)" : f.config_path;
  BenchPlacement placement;
  const std::string where = f.Get("--placement", "process");
  if (where == "processes") {
    char self[4096];
    const ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n <= 0) {
      spdlog::error("bench: cannot find the rl-vla3 executable");
      return kExitFailure;
    }
    placement.processes = true;
    placement.binary.assign(self, static_cast<size_t>(n));
  } else if (where != "process") {
    std::fprintf(stderr,
                 "rl-vla3: --placement expects process or processes, got "
                 "'%s'\n",
                 where.c_str());
    return kExitUsage;
  }
  absl::StatusOr<BenchResult> r =
      RunBench(*c, config_name, *dir, duration, placement);
  if (!r.ok()) {
    spdlog::error("bench: {}", r.status().ToString());
    return kExitFailure;
  }
  const std::string table = FormatBenchTable(*r);
  const std::string json_path = f.Get("--json", *dir + "/bench.json");
  for (const auto& [path, text] :
       {std::pair<std::string, std::string>{json_path, BenchJson(*r)},
        {*dir + "/bench.txt", table}}) {
    if (absl::Status s = WriteTextFile(path, text); !s.ok()) {
      spdlog::error("bench: {}", s.ToString());
      return kExitFailure;
    }
  }
  const std::string report = *dir + "/report.html";
  if (absl::Status s = WriteReportHtml(BenchReport(*r), report); !s.ok()) {
    spdlog::error("bench: {}", s.ToString());
    return kExitFailure;
  }
  std::printf("%s\njson: %s\nreport: %s\n", table.c_str(), json_path.c_str(),
              report.c_str());
  return kExitOk;
}

}  // namespace

int RunCli(const std::vector<std::string>& args) {
  if (args.empty() || args[0] == "help" || args[0] == "--help" ||
      args[0] == "-h") {
    std::fputs(kUsage, args.empty() ? stderr : stdout);
    return args.empty() ? kExitUsage : kExitOk;
  }
  const std::string& verb = args[0];
  for (size_t i = 1; i < args.size(); ++i) {
    if (args[i] == "--help" || args[i] == "-h") {
      if (PrintVerbHelp(verb)) return kExitOk;
      std::fprintf(stderr, "rl-vla3: unknown verb '%s'\n%s", verb.c_str(),
                   kUsage);
      return kExitUsage;
    }
  }
  if (verb == "version" || verb == "--version") {
    std::printf("rl-vla3 %s\n", RLVLA3_VERSION);
    return kExitOk;
  }
  if (verb == "sft") {
    auto flags = ParseFlags(args, 1);
    return flags ? VerbSft(*flags) : kExitUsage;
  }
  if (verb == "eval") {
    auto flags = ParseFlags(
        args, 1,
        {"--checkpoint", "--episodes", "--task", "--actions", "--first-init"});
    return flags ? VerbEval(*flags) : kExitUsage;
  }
  if (verb == "train") {
    auto flags = ParseFlags(args, 1, {"--mode", "--init-checkpoint"});
    return flags ? VerbTrain(*flags) : kExitUsage;
  }
  if (verb == "bench") {
    auto flags =
        ParseFlags(args, 1, {"--mode", "--duration", "--json", "--placement"});
    return flags ? VerbBench(*flags) : kExitUsage;
  }
  if (verb == "serve") {
    if (args.size() < 2 || args[1].rfind("--", 0) == 0) {
      std::fprintf(stderr,
                   "rl-vla3: serve needs a role: learner, inference or "
                   "rollout\n");
      return kExitUsage;
    }
    auto flags = ParseFlags(
        args, 2,
        {"--listen", "--learner", "--inference", "--worker", "--duration"});
    return flags ? VerbServe(args[1], *flags) : kExitUsage;
  }
  // up|down|status CLUSTER.yaml: the job on Kubernetes (services/kube).
  if (kube::IsKubeInvocation(args)) return kube::RunKubeCli(args);
  if (verb == "up" || verb == "down") {
    std::vector<std::string> rest;
    bool local = false;
    for (const std::string& a : args) {
      if (a == "--local") {
        local = true;
      } else {
        rest.push_back(a);
      }
    }
    auto flags = ParseFlags(rest, 1, {"--duration"});
    return flags ? VerbUpDown(verb, local, *flags) : kExitUsage;
  }
  if (verb == "status") {
    auto flags = ParseFlags(args, 1, {"--learner"});
    return flags ? VerbStatus(*flags) : kExitUsage;
  }
  if (verb == "render") {
    auto flags = ParseFlags(args, 1, {"--task", "--init", "--out"});
    return flags ? VerbRender(*flags) : kExitUsage;
  }
  if (verb == "rollout-video") {
    auto flags = ParseFlags(args, 1, {"--task", "--init", "--out", "--policy"});
    return flags ? VerbRolloutVideo(*flags) : kExitUsage;
  }
  if (verb == "expert-eval") {
    auto flags = ParseFlags(args, 1, {"--task", "--episodes"});
    return flags ? VerbExpertEval(*flags) : kExitUsage;
  }
  auto flags = ParseFlags(args, 1);
  if (!flags) return kExitUsage;
  if (verb == "config") return VerbConfig(*flags);
  if (verb == "selfcheck") return VerbSelfCheck(*flags);

  std::fprintf(stderr, "rl-vla3: unknown verb '%s'\n%s", verb.c_str(), kUsage);
  return kExitUsage;
}

}  // namespace rlvla3
