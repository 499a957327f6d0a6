#include "envs/manipulation_env.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "runtime/steady_clock.h"

namespace rlvla3 {

namespace {

constexpr int kSettleSteps =
    100;  // physics steps after placing objects (0.2 s)
constexpr double kDropHeight = 0.002;  // m above the rest height when placing

}  // namespace

absl::StatusOr<std::shared_ptr<const TaskModel>> TaskModel::Create(
    const TaskSpec& task, const EnvOptions& options) {
  SceneSpec scene;
  scene.objects = task.objects;
  scene.extra_worldbody = task.extra_worldbody;
  scene.image_width = options.image_width;
  scene.image_height = options.image_height;
  absl::StatusOr<MjModelPtr> model = LoadModelFromString(
      BuildSceneXml(scene), absl::StrCat(task.name, ".xml"));
  if (!model.ok()) return model.status();
  absl::StatusOr<ArmController> c =
      ArmController::Create(model->get(), options.controller);
  if (!c.ok()) return c.status();
  absl::StatusOr<GoalChecker> g = GoalChecker::Create(model->get(), task);
  if (!g.ok()) return g.status();
  std::shared_ptr<TaskModel> t(
      new TaskModel(task, *std::move(model), *c, *std::move(g)));
  const mjModel* m = t->model();
  for (const auto& p : task.placements) {
    const int j = mj_name2id(m, mjOBJ_JOINT, (p.object + "_joint").c_str());
    if (j < 0)
      return absl::InvalidArgumentError(
          absl::StrCat(task.name, ": no object ", p.object));
    t->object_qpos_.push_back(m->jnt_qposadr[j]);
  }
  const int drawer = mj_name2id(m, mjOBJ_JOINT, "drawer_slide");
  t->drawer_qpos_ = drawer >= 0 ? m->jnt_qposadr[drawer] : -1;
  t->goal_body_ = task.goal.empty()
                      ? -1
                      : mj_name2id(m, mjOBJ_BODY, task.goal[0].a.c_str());
  if (options.progress_reward > 0) {
    absl::StatusOr<TaskProgress> p =
        TaskProgress::Create(m, task, t->controller().eef_site());
    if (!p.ok()) return p.status();
    t->progress_ = *std::move(p);
  }
  return std::shared_ptr<const TaskModel>(std::move(t));
}

absl::StatusOr<std::vector<int>> TaskModel::CameraIds(
    const std::vector<std::string>& names) const {
  const mjModel* m = model();
  std::vector<int> ids;
  for (const std::string& name : names) {
    const int id = Renderer::CameraId(m, name.c_str());
    if (id < 0) {
      std::vector<std::string> has;
      for (int c = 0; c < m->ncam; ++c) {
        has.push_back(mj_id2name(m, mjOBJ_CAMERA, c));
      }
      return absl::InvalidArgumentError(absl::StrCat(
          "task ", task_.name, " has no camera '", name,
          "' (its scene has: ", absl::StrJoin(has, ", "),
          "; a task file adds one with a <camera> in its scene_mjcf)"));
    }
    ids.push_back(id);
  }
  return ids;
}

absl::StatusOr<std::unique_ptr<ManipulationEnv>> ManipulationEnv::Create(
    std::shared_ptr<const TaskModel> task, const EnvOptions& options,
    uint64_t seed, int env_id, std::shared_ptr<Renderer> renderer) {
  absl::StatusOr<MjDataPtr> data = MakeData(task->model());
  if (!data.ok()) return data.status();
  std::unique_ptr<ManipulationEnv> env(new ManipulationEnv(
      std::move(task), options, *std::move(data), seed, env_id));
  if (options.render) {
    if (renderer == nullptr) {
      absl::StatusOr<std::unique_ptr<Renderer>> r = Renderer::Create(
          env->model(), options.image_width, options.image_height);
      if (!r.ok()) return r.status();
      renderer = *std::move(r);
    }
    env->renderer_ = std::move(renderer);
    absl::StatusOr<std::vector<int>> ids =
        env->task_->CameraIds(options.cameras);
    if (!ids.ok()) return ids.status();
    env->cameras_ = *std::move(ids);
  }
  env->Reset();
  return env;
}

ManipulationEnv::ManipulationEnv(std::shared_ptr<const TaskModel> task,
                                 const EnvOptions& o, MjDataPtr data,
                                 uint64_t seed, int env_id)
    : task_(std::move(task)),
      options_(o),
      data_(std::move(data)),
      rng_(seed + static_cast<uint64_t>(env_id)),
      env_id_(env_id) {
  const size_t image = static_cast<size_t>(o.image_width) * o.image_height * 3;
  obs_.images.assign(image * o.cameras.size(), 0);
  obs_.instruction = &task_->task().instruction;
}

void ManipulationEnv::Reset() {
  const uint64_t count =
      static_cast<uint64_t>(std::max(1, options_.init_count));
  Reset(options_.init_first + static_cast<int>(rng_() % count));
}

void ManipulationEnv::Reset(int init_id) {
  const int64_t began = SteadyNowNs();
  const mjModel* m = model();
  mjData* d = data_.get();
  mj_resetData(m, d);
  init_id_ = init_id;
  const InitialState s = SampleInitialState(task_->task(), init_id);
  const auto& adr = task_->object_qpos();
  for (size_t i = 0; i < s.poses.size() && i < adr.size(); ++i) {
    mjtNum* q = d->qpos + adr[i];
    q[0] = s.poses[i].x;
    q[1] = s.poses[i].y;
    // The body's own height in the scene (its resting height), 2 mm above.
    q[2] = m->qpos0[adr[i] + 2] + kDropHeight;
    q[3] = std::cos(s.poses[i].yaw / 2);
    q[4] = 0;
    q[5] = 0;
    q[6] = std::sin(s.poses[i].yaw / 2);
  }
  if (task_->drawer_qpos() >= 0) {
    d->qpos[task_->drawer_qpos()] =
        s.drawer_open * SceneGeometry::kDrawerTravel;
  }
  task_->controller().ResetToHome(m, d);
  for (int i = 0; i < kSettleSteps; ++i) {
    task_->controller().Compensate(m, d);
    mj_step(m, d);
  }
  mj_forward(m, d);
  if (const TaskProgress* p = task_->progress(); p != nullptr) {
    progress_start_ = p->Begin(m, d);
    potential_ = p->Potential(m, d, progress_start_);
  }
  step_ = 0;
  if (episode_started_) ++episode_;
  episode_started_ = true;
  Observe(began);
}

bool ManipulationEnv::Unstable() const {
  const mjModel* m = model();
  const mjData* d = data_.get();
  for (int i = 0; i < m->nq; ++i) {
    if (!std::isfinite(d->qpos[i])) return true;
  }
  for (int i = 0; i < m->nv; ++i) {
    if (!std::isfinite(d->qvel[i])) return true;
  }
  return d->warning[mjWARN_BADQACC].number > 0 ||
         d->warning[mjWARN_BADQPOS].number > 0 ||
         d->warning[mjWARN_BADQVEL].number > 0;
}

absl::StatusOr<StepResult> ManipulationEnv::Step(
    absl::Span<const float> action) {
  if (action.size() != kActionDim) {
    return absl::InvalidArgumentError(
        absl::StrCat("env ", env_id_, ": action has ", action.size(),
                     " values, expected ", kActionDim));
  }
  for (size_t i = 0; i < action.size(); ++i) {
    if (!std::isfinite(action[i])) {
      return absl::InvalidArgumentError(
          absl::StrCat("env ", env_id_, ": action[", i, "] is ", action[i]));
    }
  }
  const int64_t began = SteadyNowNs();
  const bool skip_images = skip_images_;
  skip_images_ = false;
  const mjModel* m = model();
  mjData* d = data_.get();
  const ArmController& arm = task_->controller();
  arm.SetAction(m, d, action.data());
  for (int i = 0; i < options_.physics_substeps; ++i) {
    arm.Compensate(m, d);
    mj_step(m, d);
  }
  ++step_;
  StepResult r;
  if (Unstable()) {
    r.truncated = true;
    r.unstable = true;
    phases_ = StepPhases{(SteadyNowNs() - began) / 1e6, 0, 0};
    return r;
  }
  mj_forward(m, d);  // positions and sensors of the new state
  r.success = task_->goal().Satisfied(m, d);
  r.done = r.success;
  const int horizon = options_.max_episode_steps > 0
                          ? options_.max_episode_steps
                          : task_->task().max_steps;
  r.truncated = !r.done && step_ >= horizon;
  r.reward = r.success ? 1.0f : 0.0f;
  if (const TaskProgress* p = task_->progress(); p != nullptr) {
    // Shaping by a potential: the goal reached is the top of the scale.
    const double now = r.success ? 1.0 : p->Potential(m, d, progress_start_);
    r.reward +=
        static_cast<float>(options_.progress_reward * (now - potential_));
    potential_ = now;
  }
  if (options_.shaped_reward && !r.success && task_->goal_body() >= 0) {
    const mjtNum* a = d->xpos + 3 * task_->goal_body();
    const mjtNum* e = d->site_xpos + 3 * arm.eef_site();
    r.reward = -0.1f * static_cast<float>(
                           std::hypot(a[0] - e[0], a[1] - e[1], a[2] - e[2]));
  }
  Observe(began, !skip_images || r.done || r.truncated);
  return r;
}

void ManipulationEnv::Observe(int64_t began_ns, bool images) {
  mjData* d = data_.get();
  double pos[3], quat[4], rotvec[3], fingers[2];
  task_->controller().EefPose(d, pos, quat);
  mju_quat2Vel(rotvec, quat, 1.0);
  task_->controller().FingerPositions(d, fingers);
  for (int i = 0; i < 3; ++i) {
    obs_.proprio[i] = static_cast<float>(pos[i]);
    obs_.proprio[3 + i] = static_cast<float>(rotvec[i]);
  }
  obs_.proprio[6] = static_cast<float>(fingers[0]);
  obs_.proprio[7] = static_cast<float>(fingers[1]);
  phases_ = StepPhases{(SteadyNowNs() - began_ns) / 1e6, 0, 0};
  if (renderer_ && images) {
    RenderTimes t;
    const size_t image =
        static_cast<size_t>(options_.image_width) * options_.image_height * 3;
    for (size_t c = 0; c < cameras_.size(); ++c) {
      renderer_->Draw(model(), d, cameras_[c], obs_.images.data() + c * image,
                      &t);
    }
    if (options_.readback != Readback::kBatched) renderer_->Flush(&t);
    phases_.render_ms = t.render_ns / 1e6;
    phases_.readback_ms = t.readback_ns / 1e6;
  }
}

}  // namespace rlvla3
