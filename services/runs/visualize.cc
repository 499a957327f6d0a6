#include "services/runs/visualize.h"

#include <cstdio>
#include <random>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "envs/egl_context.h"
#include "envs/image_io.h"
#include "envs/scripted_expert.h"
#include "envs/task_file.h"

namespace rlvla3 {
namespace {

constexpr int kGifDelayCs = 5;  // 20 Hz control -> 5 centiseconds per frame

struct Session {
  std::unique_ptr<EglContext> gl;
  std::shared_ptr<const TaskModel> task;
  std::unique_ptr<ManipulationEnv> env;
};

absl::StatusOr<Session> Open(const std::string& name, EnvOptions options) {
  absl::StatusOr<TaskSpec> spec = ResolveTask(name);
  if (!spec.ok()) return spec.status();
  Session s;
  absl::StatusOr<std::unique_ptr<EglContext>> gl =
      EglContext::Create(options.render_backend);
  if (!gl.ok()) return gl.status();
  s.gl = *std::move(gl);
  options.render = true;
  absl::StatusOr<std::shared_ptr<const TaskModel>> task =
      TaskModel::Create(*spec, options);
  if (!task.ok()) return task.status();
  s.task = *task;
  absl::StatusOr<std::unique_ptr<ManipulationEnv>> env =
      ManipulationEnv::Create(s.task, options, 0, 0);
  if (!env.ok()) return env.status();
  s.env = *std::move(env);
  return s;
}

// The env's cameras left to right, in EnvOptions::cameras order.
void SideBySide(const ManipulationEnv& env, int w, int h,
                std::vector<uint8_t>* out) {
  const Observation& obs = env.observation();
  const size_t image = static_cast<size_t>(w) * h * 3;
  const size_t cameras = obs.images.size() / image;
  std::vector<const uint8_t*> images;
  for (size_t c = 0; c < cameras; ++c)
    images.push_back(obs.images.data() + c * image);
  ConcatHorizontal(images, std::vector<int>(cameras, w), h, out);
}

}  // namespace

absl::Status RenderInitialState(const std::string& task, int init_id,
                                EnvOptions options,
                                const std::string& out_png) {
  absl::StatusOr<Session> s = Open(task, options);
  if (!s.ok()) return s.status();
  s->env->Reset(init_id);
  std::vector<uint8_t> image;
  SideBySide(*s->env, options.image_width, options.image_height, &image);
  const int w = options.image_width, h = options.image_height;
  const int cameras = static_cast<int>(options.cameras.size());
  if (absl::Status st = WritePng(out_png, image.data(), cameras * w, h);
      !st.ok()) {
    return st;
  }
  // Each camera on its own too: <stem>_<camera>.png.
  const std::string stem = absl::EndsWith(out_png, ".png")
                               ? out_png.substr(0, out_png.size() - 4)
                               : out_png;
  const Observation& obs = s->env->observation();
  const size_t bytes = static_cast<size_t>(w) * h * 3;
  for (int c = 0; c < cameras; ++c) {
    if (absl::Status st =
            WritePng(absl::StrCat(stem, "_", options.cameras[c], ".png"),
                     obs.camera(c, bytes), w, h);
        !st.ok()) {
      return st;
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<RolloutSummary> RecordRollout(const std::string& task,
                                             const std::string& policy,
                                             int init_id, EnvOptions options,
                                             const std::string& out_path) {
  if (policy != "expert" && policy != "random") {
    return absl::InvalidArgumentError(
        absl::StrCat("--policy ", policy, ": expected expert or random"));
  }
  absl::StatusOr<Session> s = Open(task, options);
  if (!s.ok()) return s.status();
  absl::StatusOr<ScriptedExpert> expert = ScriptedExpert::Create(*s->task);
  if (!expert.ok()) return expert.status();
  const int w = static_cast<int>(options.cameras.size()) * options.image_width,
            h = options.image_height;
  const bool mp4 = absl::EndsWith(out_path, ".mp4");
  GifWriter gif;
  std::FILE* ffmpeg = nullptr;
  if (mp4) {
    const std::string cmd = absl::StrCat(
        "ffmpeg -loglevel error -y -f rawvideo -pix_fmt rgb24 -s ", w, "x", h,
        " -r 20 -i - -pix_fmt yuv420p '", out_path, "'");
    ffmpeg = popen(cmd.c_str(), "w");
    if (ffmpeg == nullptr) return absl::UnavailableError("cannot start ffmpeg");
  } else if (absl::Status st = gif.Open(out_path, w, h, kGifDelayCs);
             !st.ok()) {
    return st;
  }
  std::vector<uint8_t> frame;
  auto emit = [&]() -> absl::Status {
    SideBySide(*s->env, options.image_width, options.image_height, &frame);
    if (mp4) {
      return std::fwrite(frame.data(), 1, frame.size(), ffmpeg) == frame.size()
                 ? absl::OkStatus()
                 : absl::UnavailableError(
                       "ffmpeg stopped reading (is it installed?)");
    }
    return gif.AddFrame(frame.data());
  };
  s->env->Reset(init_id);
  expert->Reset();
  std::mt19937 rng(static_cast<uint32_t>(init_id));
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  RolloutSummary summary;
  if (absl::Status st = emit(); !st.ok()) return st;
  float action[kActionDim];
  for (;;) {
    if (policy == "expert") {
      expert->Act(*s->env, action);
    } else {
      for (float& a : action) a = uniform(rng);
    }
    absl::StatusOr<StepResult> r = s->env->Step(action);
    if (!r.ok()) return r.status();
    if (absl::Status st = emit(); !st.ok()) return st;
    ++summary.steps;
    if (r->done || r->truncated) {
      summary.success = r->success;
      break;
    }
  }
  // Hold the last frame for a second so the outcome is visible.
  for (int i = 0; i < 20; ++i) {
    if (absl::Status st = emit(); !st.ok()) return st;
  }
  summary.frames = summary.steps + 21;
  if (mp4) {
    if (pclose(ffmpeg) != 0)
      return absl::UnavailableError("ffmpeg failed (is it installed?)");
  } else if (absl::Status st = gif.Close(); !st.ok()) {
    return st;
  }
  return summary;
}

}  // namespace rlvla3
