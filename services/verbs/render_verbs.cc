// `rl-vla3 render` and `rl-vla3 rollout-video`: a task's initial state as
// images; one episode as a video.
#include <cstdio>
#include <optional>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_join.h"
#include "runtime/logging.h"
#include "services/options/config_bridge.h"
#include "services/runs/visualize.h"
#include "services/verbs/verb.h"
#include "services/verbs/verbs.h"
#include "spdlog/spdlog.h"

namespace rlvla3 {
namespace {

// What render and rollout-video share: config, logging, --task/--init/--out.
struct TaskVerb {
  Config config;
  std::string task;
  int init = 0;
  std::string out;
};

std::optional<TaskVerb> ParseTaskVerb(const VerbArgs& f, const char* verb,
                                      const std::string& default_out) {
  auto c = LoadOrReport(f);
  if (!c) return std::nullopt;
  InitLogging(c->run.log_level, c->run.log_format);
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

int VerbRender(const VerbArgs& f) {
  auto v = ParseTaskVerb(f, "render", "frame.png");
  if (!v) return kExitUsage;
  absl::Status s = RenderInitialState(v->task, v->init,
                                      EnvOptionsFromConfig(v->config), v->out);
  if (!s.ok()) {
    spdlog::error("render: {}", s.ToString());
    return absl::IsNotFound(s) ? kExitUsage : kExitFailure;
  }
  std::printf(
      "wrote %s (%s side by side, %dx%d each; also *_<camera>.png) for task "
      "%s, initial state %d\n",
      v->out.c_str(), absl::StrJoin(EnvCameras(v->config.env), " | ").c_str(),
      static_cast<int>(v->config.env.image_width),
      static_cast<int>(v->config.env.image_height), v->task.c_str(), v->init);
  return kExitOk;
}

int VerbRolloutVideo(const VerbArgs& f) {
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

}  // namespace

Verb RenderVerb() {
  return {"render",
          "the cameras of env.cameras (agentview, wrist by default) of one "
          "initial state, side by side, as a PNG\n"
          "  --task NAME|FILE.yaml   a suite task or a task file\n"
          "  --init K                initial state (default 0)\n"
          "  --out PATH              output image (default frame.png)\n",
          {"--task", "--init", "--out"},
          {},
          VerbRender};
}

Verb RolloutVideoVerb() {
  return {"rollout-video",
          "record one episode as a GIF or MP4\n"
          "  --task NAME|FILE.yaml   a suite task or a task file\n"
          "  --policy expert|random  who acts (default expert)\n"
          "  --init K                initial state (default 0)\n"
          "  --out PATH              run.gif or run.mp4\n",
          {"--task", "--init", "--out", "--policy"},
          {},
          VerbRolloutVideo};
}

}  // namespace rlvla3
