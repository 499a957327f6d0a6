// The demonstrations SFT clones: the scripted experts driving an env pool,
// their successful episodes kept (sft.* keys; DART noise optional).
#include <algorithm>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "envs/demos/demo_recording.h"
#include "envs/env_pool.h"
#include "envs/scripted_expert.h"
#include "envs/task.h"
#include "policies/action_tokenizer.h"
#include "services/runs/sft.h"

namespace rlvla3 {

int64_t DemoSet::MedianExpertSteps() const {
  int64_t longest = 0;
  for (size_t t = 0; t < task_names.size(); ++t) {
    std::vector<int32_t> steps;
    for (size_t e = 0; e < episode_steps.size(); ++e) {
      if (episode_task[e] == static_cast<int32_t>(t))
        steps.push_back(episode_steps[e]);
    }
    if (steps.empty()) continue;
    std::nth_element(steps.begin(), steps.begin() + steps.size() / 2,
                     steps.end());
    longest = std::max<int64_t>(longest, steps[steps.size() / 2]);
  }
  return longest;
}

namespace {

// One env per task slot (env id % tasks), as many as env.num_envs allows.
absl::StatusOr<EnvPoolOptions> DemoPoolOptions(
    const DemoOptions& o, const std::vector<TaskSpec>& tasks) {
  EnvPoolOptions po;
  po.tasks = tasks;
  const int n_tasks = static_cast<int>(tasks.size());
  const int per_task =
      static_cast<int>(std::max<int64_t>(1, o.num_envs / n_tasks));
  po.num_envs = per_task * n_tasks;
  po.num_threads = o.num_threads;
  po.seed = o.seed;
  po.env = o.env;
  po.lp_num_threads = o.lp_num_threads;
  return po;
}

// Drives every env of the pool with its task's scripted expert and keeps the
// successful episodes, up to sft.demos_per_task per task.
//
// DART (Laskey et al. 2017): the env executes a noisy copy of the expert's
// action while the demo records the clean one, so the demos visit the
// states a slightly-off policy reaches and show how to recover from them.
// The gripper command (last dimension) is never perturbed.
class DemoCollector {
 public:
  DemoCollector(const DemoOptions& o, const std::vector<TaskSpec>& tasks,
                EnvPool* pool)
      : o_(o),
        pool_(pool),
        n_tasks_(static_cast<int>(tasks.size())),
        noise_std_(static_cast<float>(o.noise)),
        episodes_(static_cast<size_t>(pool->num_envs())),
        have_(tasks.size(), 0) {
    const int64_t h = o.env.image_height, w = o.env.image_width;
    r_.env_name = "rl-vla3";
    r_.env_args = absl::StrCat(R"({"env_name": "rl-vla3", "type": 1, )",
                               R"("env_kwargs": {"camera_heights": )", h,
                               R"(, "camera_widths": )", w, "}}");
    // LIBERO's names: the wrist camera is eye_in_hand; others their own.
    for (const std::string& name : o.env.cameras) {
      r_.cameras.push_back({name == "wrist" ? "eye_in_hand" : name, h, w});
    }
    r_.proprio = {{"ee_pos", 3}, {"ee_ori", 3}, {"gripper_states", 2}};
    r_.action_size = kActionDim;
    for (const auto& t : tasks) {
      task_names_.push_back(t.name);
      instructions_.push_back(t.instruction);
    }
    for (int i = 0; i < pool->num_envs(); ++i)
      noise_rng_.emplace_back(o.seed + static_cast<uint64_t>(i));
  }

  absl::StatusOr<DemoRecording> Collect() {
    for (int i = 0; i < pool_->num_envs(); ++i) {
      const ManipulationEnv* env = pool_->manipulation_env(i);
      if (env == nullptr) {
        return absl::InvalidArgumentError(
            "sft: toy_reach has no scripted expert (train it from scratch)");
      }
      absl::StatusOr<ScriptedExpert> e = ScriptedExpert::Create(env->task());
      if (!e.ok()) return e.status();
      experts_.push_back(*e);
    }
    std::vector<int> ready, send;
    std::vector<float> actions;
    while (!Done()) {
      ready.clear();
      if (absl::Status s = pool_->Recv(1, absl::Seconds(60), &ready); !s.ok())
        return s;
      send.clear();
      actions.clear();
      for (int id : ready) {
        float a[kActionDim] = {};
        Step(id, a);
        send.push_back(id);
        actions.insert(actions.end(), a, a + kActionDim);
      }
      if (absl::Status s = pool_->Send(send, actions); !s.ok()) return s;
    }
    return std::move(r_);
  }

 private:
  struct Episode {
    std::vector<std::vector<uint8_t>> images;  // per camera [T, H, W, 3]
    std::vector<float> proprio, actions, rewards;
    int steps = 0;
    int init_id = 0;
  };

  bool Done() const {
    return std::all_of(have_.begin(), have_.end(),
                       [&](int h) { return h >= o_.demos_per_task; });
  }

  // Env `id` is ready: keep its ended episode if it succeeded, or record
  // its observation and the expert's action `a` (sent with DART noise).
  void Step(int id, float* a) {
    const EnvState& s = pool_->state(id);
    Episode& ep = episodes_[static_cast<size_t>(id)];
    // The reward of the step before (the action recorded last).
    if (ep.steps > 0 && s.step > 0) ep.rewards.push_back(s.result.reward);
    if (s.result.done || s.result.truncated) {
      const int task = id % n_tasks_;
      ++r_.attempts;
      ++r_.attempts_by_task[task_names_[static_cast<size_t>(task)]];
      if (s.result.success && have_[task] < o_.demos_per_task &&
          static_cast<int>(ep.rewards.size()) == ep.steps) {
        ++have_[task];
        Keep(ep, task);
      }
      ep = Episode{};
      return;
    }
    if (s.step == 0) {
      ep = Episode{};
      ep.init_id = s.init_id;
      experts_[static_cast<size_t>(id)].Reset();
    }
    experts_[static_cast<size_t>(id)].Act(*pool_->manipulation_env(id), a);
    // Observation images are [C, H, W, 3] in o.env.cameras' order.
    const size_t image = static_cast<size_t>(o_.env.image_height) *
                         static_cast<size_t>(o_.env.image_width) * 3;
    ep.images.resize(r_.cameras.size());
    for (size_t c = 0; c < r_.cameras.size(); ++c) {
      const uint8_t* frame = s.obs->camera(static_cast<int>(c), image);
      ep.images[c].insert(ep.images[c].end(), frame, frame + image);
    }
    ep.proprio.insert(ep.proprio.end(), s.obs->proprio,
                      s.obs->proprio + kProprioDim);
    ep.actions.insert(ep.actions.end(), a, a + kActionDim);
    ++ep.steps;
    if (noise_std_ > 0) {
      std::mt19937_64& rng = noise_rng_[static_cast<size_t>(id)];
      for (int j = 0; j + 1 < kActionDim; ++j)
        a[j] = std::clamp(a[j] + noise_std_ * unit_normal_(rng), -1.0f, 1.0f);
    }
  }

  // A successful episode into the recording, as the env saw it: its frames,
  // proprio split into LIBERO's entries, the experts' clean actions.
  void Keep(Episode& ep, int task) {
    DemoEpisode e;
    e.task = task_names_[static_cast<size_t>(task)];
    e.instruction = instructions_[static_cast<size_t>(task)];
    e.steps = ep.steps;
    e.init_id = ep.init_id;
    e.images = std::move(ep.images);
    e.proprio.resize(3);
    for (int t = 0; t < ep.steps; ++t) {
      const float* p = ep.proprio.data() + t * kProprioDim;
      e.proprio[0].insert(e.proprio[0].end(), p, p + 3);
      e.proprio[1].insert(e.proprio[1].end(), p + 3, p + 6);
      e.proprio[2].insert(e.proprio[2].end(), p + 6, p + kProprioDim);
    }
    e.actions = std::move(ep.actions);
    e.rewards = std::move(ep.rewards);
    e.dones.assign(static_cast<size_t>(ep.steps), 0);
    e.dones.back() = 1;
    r_.episodes.push_back(std::move(e));
  }

  const DemoOptions o_;
  EnvPool* pool_;
  const int n_tasks_;
  const float noise_std_;
  DemoRecording r_;
  std::vector<std::string> task_names_, instructions_;
  std::vector<Episode> episodes_;
  std::vector<ScriptedExpert> experts_;
  std::vector<std::mt19937_64> noise_rng_;
  std::normal_distribution<float> unit_normal_{0.0f, 1.0f};
  std::vector<int> have_;
};

}  // namespace

absl::StatusOr<DemoRecording> CollectDemoRecording(
    const DemoOptions& o, const std::vector<TaskSpec>& tasks) {
  absl::StatusOr<EnvPoolOptions> po = DemoPoolOptions(o, tasks);
  if (!po.ok()) return po.status();
  absl::StatusOr<std::unique_ptr<EnvPool>> pool = EnvPool::Create(*po);
  if (!pool.ok()) return pool.status();
  DemoCollector collector(o, tasks, pool->get());
  return collector.Collect();
}

absl::StatusOr<DemoSet> CollectDemonstrations(
    const DemoOptions& o, const std::vector<TaskSpec>& tasks) {
  absl::StatusOr<DemoRecording> r = CollectDemoRecording(o, tasks);
  if (!r.ok()) return r.status();
  return DemoSetFromRecording(*r, o.chunk, tasks, o.env.image_width,
                              o.env.image_height, o.env.cameras, "the experts");
}

}  // namespace rlvla3
