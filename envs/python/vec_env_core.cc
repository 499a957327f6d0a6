#include "envs/python/vec_env_core.h"

#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace rlvla3 {

absl::StatusOr<std::unique_ptr<VecEnvCore>> VecEnvCore::Create(
    const EnvPoolOptions& options) {
  if (options.on_ready) {
    return absl::InvalidArgumentError(
        "VecEnvCore reads states with Recv: on_ready must be unset");
  }
  absl::StatusOr<std::unique_ptr<EnvPool>> pool = EnvPool::Create(options);
  if (!pool.ok()) return pool.status();
  return std::unique_ptr<VecEnvCore>(new VecEnvCore(std::move(*pool)));
}

VecEnvCore::VecEnvCore(std::unique_ptr<EnvPool> pool)
    : pool_(std::move(pool)),
      experts_(static_cast<size_t>(pool_->num_envs())),
      expert_episode_(static_cast<size_t>(pool_->num_envs()), 0),
      seen_(static_cast<size_t>(pool_->num_envs()), 0) {
  const EnvOptions& e = pool_->options().env;
  cameras_ = static_cast<int>(e.cameras.size());
  camera_bytes_ = static_cast<size_t>(e.image_height) *
                  static_cast<size_t>(e.image_width) * 3;
}

VecEnvCore::~VecEnvCore() { pool_->Close(); }

absl::Status VecEnvCore::Recv(int min_envs, absl::Duration timeout,
                              std::vector<int>* ids) {
  return pool_->Recv(min_envs, timeout, ids);
}

void VecEnvCore::Gather(absl::Span<const int> ids,
                        const StateBatch& out) const {
  const size_t frame = camera_bytes_ * static_cast<size_t>(cameras_);
  for (size_t i = 0; i < ids.size(); ++i) {
    const EnvState& s = pool_->state(ids[i]);
    const bool fault = !s.fault.ok();
    uint8_t* images = out.images + i * frame;
    // A faulted env's observation breaks the contract: zeros, never read.
    if (fault || s.obs == nullptr || s.obs->images.size() != frame) {
      std::memset(images, 0, frame);
    } else {
      std::memcpy(images, s.obs->images.data(), frame);
    }
    if (fault || s.obs == nullptr) {
      std::memset(out.proprio + i * kProprioDim, 0,
                  sizeof(float) * kProprioDim);
    } else {
      std::memcpy(out.proprio + i * kProprioDim, s.obs->proprio,
                  sizeof(float) * kProprioDim);
    }
    out.reward[i] = s.result.reward;
    out.terminated[i] = s.result.done;
    out.truncated[i] = s.result.truncated && !s.result.done;
    out.env_id[i] = s.env_id;
    out.elapsed_step[i] = s.step;
    out.init_id[i] = s.init_id;
    out.episode_id[i] = s.episode_id;
    out.fault[i] = fault;
    out.invalid_action[i] = !s.error.ok();
  }
}

absl::Status VecEnvCore::CheckIds(absl::Span<const int> ids) {
  absl::Status status = absl::OkStatus();
  size_t marked = 0;
  for (; marked < ids.size(); ++marked) {
    const int id = ids[marked];
    if (id < 0 || id >= num_envs()) {
      status = absl::InvalidArgumentError(
          absl::StrCat("env id ", id, " is not in [0, ", num_envs(), ")"));
      break;
    }
    if (seen_[static_cast<size_t>(id)] != 0) {
      status = absl::InvalidArgumentError(
          absl::StrCat("env id ", id, " is listed twice: one action per env"));
      break;
    }
    seen_[static_cast<size_t>(id)] = 1;
  }
  // Clears only what this call marked: no allocation, no O(num_envs) sweep.
  for (size_t i = 0; i < marked; ++i) seen_[static_cast<size_t>(ids[i])] = 0;
  return status;
}

absl::Status VecEnvCore::Send(absl::Span<const int> ids,
                              absl::Span<const float> actions,
                              absl::Span<const int> init_ids) {
  if (actions.size() != ids.size() * kActionDim) {
    return absl::InvalidArgumentError(absl::StrCat(
        "actions hold ", actions.size(), " floats; ", ids.size(), " envs need ",
        ids.size() * kActionDim, " (", kActionDim, " each)"));
  }
  for (size_t i = 0; i < actions.size(); ++i) {
    if (!std::isfinite(actions[i])) {
      return absl::InvalidArgumentError(
          absl::StrCat("action ", i % kActionDim, " of env ",
                       ids[i / kActionDim], " is not finite"));
    }
  }
  if (!init_ids.empty() && init_ids.size() != ids.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        init_ids.size(), " initial states for ", ids.size(), " envs"));
  }
  if (absl::Status s = CheckIds(ids); !s.ok()) return s;
  for (size_t i = 0; i < init_ids.size(); ++i) {
    if (init_ids[i] < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "initial state ", init_ids[i], " of env ", ids[i], " is negative"));
    }
  }
  for (size_t i = 0; i < init_ids.size(); ++i)
    pool_->SetNextReset(ids[i], init_ids[i]);
  return pool_->Send(ids, actions);
}

absl::StatusOr<ScriptedExpert*> VecEnvCore::ExpertOf(int env_id) {
  const ManipulationEnv* env = pool_->manipulation_env(env_id);
  if (env == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("env ", env_id, " has no scripted expert (a toy env)"));
  }
  std::optional<ScriptedExpert>& e = experts_[static_cast<size_t>(env_id)];
  if (!e) {
    absl::StatusOr<ScriptedExpert> made = ScriptedExpert::Create(env->task());
    if (!made.ok()) return made.status();
    e.emplace(std::move(*made));
    e->Reset();
  }
  return &*e;
}

absl::Status VecEnvCore::ExpertActions(absl::Span<const int> ids,
                                       absl::Span<float> actions) {
  if (actions.size() != ids.size() * kActionDim) {
    return absl::InvalidArgumentError("one 7-D action per env id");
  }
  for (size_t i = 0; i < ids.size(); ++i) {
    const int id = ids[i];
    if (id < 0 || id >= num_envs()) {
      return absl::InvalidArgumentError(
          absl::StrCat("env id ", id, " is not in [0, ", num_envs(), ")"));
    }
    absl::StatusOr<ScriptedExpert*> e = ExpertOf(id);
    if (!e.ok()) return e.status();
    const EnvState& s = pool_->state(id);
    uint64_t& episode = expert_episode_[static_cast<size_t>(id)];
    if (s.episode_id != episode || s.step == 0) {
      (*e)->Reset();
      episode = s.episode_id;
    }
    (*e)->Act(*pool_->manipulation_env(id), actions.data() + i * kActionDim);
  }
  return absl::OkStatus();
}

std::string VecEnvCore::instruction(int env_id) const {
  const EnvState& s = pool_->state(env_id);
  if (s.obs == nullptr || s.obs->instruction == nullptr) return "";
  return *s.obs->instruction;
}

}  // namespace rlvla3
