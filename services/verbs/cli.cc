#include "services/verbs/cli.h"

#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "services/kube/kube_verbs.h"
#include "services/verbs/verb.h"
#include "services/verbs/verbs.h"

namespace rlvla3 {
namespace {

constexpr char kUsage[] =
    "usage: rl-vla3 <verb> [--config FILE] [--set key=value ...] [verb flags]\n"
    "verbs:\n"
    "  config         print the resolved config (defaults, file, overrides)\n"
    "  selfcheck      runtime self-check (queues, batcher, codec, LibTorch)\n"
    "  render         --task NAME|FILE.yaml [--init K] [--out frame.png]\n"
    "                 the env.cameras views of one initial state\n"
    "  rollout-video  --task NAME|FILE.yaml [--policy expert|random] [--init "
    "K]\n"
    "                 [--out run.gif|run.mp4]  record one episode\n"
    "  expert-eval    [--task NAME]... [--episodes N]\n"
    "                 scripted-expert success rate per task\n"
    "  demos export   [--out DIR]  the experts' demonstrations as LIBERO/\n"
    "                 robomimic HDF5, one file per task\n"
    "  sft            supervised fine-tuning from demonstrations:\n"
    "                 the experts', or the files sft.demos names\n"
    "  eval           --checkpoint DIR [--episodes N] [--task NAME]...\n"
    "                 [--actions greedy|sampled] [--first-init K]\n"
    "                 a checkpoint's success rate per task\n"
    "  train          [--mode sync|async] [--init-checkpoint DIR]\n"
    "                 RL post-training: env pool, inference actors, learner\n"
    "  serve ROLE     one role as a gRPC service (learner|inference|rollout)\n"
    "  up --local     every role as a process on this machine; down --local\n"
    "  up CLUSTER.yaml  the job on Kubernetes ([--dry-run]); down, status "
    "CLUSTER.yaml\n"
    "  status         health, version and throughput of every role\n"
    "  bench          --config FILE [--duration SECONDS] [--json PATH]\n"
    "                 each stage alone, then sync vs async side by side\n"
    "  plan           --stage-costs FILE [--nodes N --cores C --gpus G ...]\n"
    "                 the split of the roles for the nodes on offer, forecast\n"
    "                 from measured stage costs; [--out CLUSTER.yaml]\n"
    "  version        print the version\n"
    "  help           this text; `rl-vla3 VERB --help`: the verb's flags\n";

constexpr char kCommonFlags[] =
    "  --config FILE     YAML config (defaults for every key not in it)\n"
    "  --set KEY=VALUE   override one config key (repeatable); `rl-vla3 "
    "config`\n"
    "                    prints every key with its resolved value\n"
    "  -h, --help        this text\n";
// The table `rl-vla3 VERB` dispatches on, in the order of the usage text.
std::vector<Verb> AllVerbs() {
  return {ConfigVerb(),     SelfCheckVerb(), RenderVerb(), RolloutVideoVerb(),
          ExpertEvalVerb(), DemosVerb(),     SftVerb(),    EvalVerb(),
          TrainVerb(),      BenchVerb(),     ServeVerb(),  UpVerb(),
          DownVerb(),       StatusVerb(),    PlanVerb()};
}

const Verb* FindVerb(const std::vector<Verb>& verbs, const std::string& name) {
  for (const Verb& v : verbs) {
    if (name == v.name) return &v;
  }
  return nullptr;
}

int UnknownVerb(const std::string& verb) {
  std::fprintf(stderr, "rl-vla3: unknown verb '%s'\n%s", verb.c_str(), kUsage);
  return kExitUsage;
}

// `rl-vla3 VERB --help`: what the verb does and every flag it takes.
int PrintVerbHelp(const Verb* v, const std::string& name) {
  if (name == "version" || name == "--version") {
    std::printf("usage: rl-vla3 version [flags]\nprint the version\n%s",
                kCommonFlags);
    return kExitOk;
  }
  if (v == nullptr) return UnknownVerb(name);
  std::printf("usage: rl-vla3 %s [flags]\n%s%s", v->name, v->help,
              kCommonFlags);
  return kExitOk;
}

bool AsksForHelp(const std::vector<std::string>& args) {
  for (size_t i = 1; i < args.size(); ++i) {
    if (args[i] == "--help" || args[i] == "-h") return true;
  }
  return false;
}

// A verb's escaped exception (a library's, on this thread) ends the verb
// with a message naming the verb and what it was given, and exit 1: never
// std::terminate's abort (exit 134). The verbs turn what they read into
// statuses at their doors; this is the net under them.
int RunGuarded(const Verb& verb, const VerbArgs& args) {
  std::string what;
  try {
    return verb.run(args);
  } catch (const std::exception& e) {
    what = e.what();
  } catch (...) {
    what = "an exception that is not a std::exception";
  }
  std::string given = args.operand;
  if (!args.config_path.empty()) {
    given += (given.empty() ? "" : " ") + ("--config " + args.config_path);
  }
  std::fprintf(stderr, "rl-vla3 %s%s%s: failed: %s\n", verb.name,
               given.empty() ? "" : " ", given.c_str(), what.c_str());
  return kExitFailure;
}

}  // namespace

int RunCli(const std::vector<std::string>& args) {
  if (args.empty() || args[0] == "help" || args[0] == "--help" ||
      args[0] == "-h") {
    std::fputs(kUsage, args.empty() ? stderr : stdout);
    return args.empty() ? kExitUsage : kExitOk;
  }
  const std::string& name = args[0];
  const std::vector<Verb> verbs = AllVerbs();
  const Verb* verb = FindVerb(verbs, name);
  if (AsksForHelp(args)) return PrintVerbHelp(verb, name);
  if (name == "version" || name == "--version") {
    std::printf("rl-vla3 %s\n", RLVLA3_VERSION);
    return kExitOk;
  }
  // up|down|status CLUSTER.yaml: the job on Kubernetes (services/kube).
  if (kube::IsKubeInvocation(args)) return kube::RunKubeCli(args);
  if (verb == nullptr) return UnknownVerb(name);
  size_t first = 1;
  std::string operand;
  if (verb->takes_operand) {
    if (args.size() < 2 || args[1].rfind("--", 0) == 0) {
      std::fputs(verb->operand_error, stderr);
      return kExitUsage;
    }
    operand = args[1];
    first = 2;
  }
  std::optional<VerbArgs> parsed = ParseVerbArgs(*verb, args, first, kUsage);
  if (!parsed) return kExitUsage;
  parsed->operand = operand;
  return RunGuarded(*verb, *parsed);
}

}  // namespace rlvla3
