// EvaluatePolicy (services/runs/sft.h): rollouts of a policy from seeded
// initial states, success per task.
#include <torch/torch.h>

#include <algorithm>
#include <cstring>

#include "envs/egl_context.h"
#include "policies/instruction_encoder.h"
#include "services/runs/sft.h"

namespace rlvla3 {
namespace {

// Copies observations into a PolicyInput (one memcpy per observation's
// cameras).
PolicyInput InputFromObservations(const std::vector<const Observation*>& obs,
                                  const std::vector<int64_t>& task_of,
                                  const at::Tensor& text,
                                  const at::Tensor& lens, int w, int h) {
  const int64_t B = static_cast<int64_t>(obs.size());
  PolicyInput in;
  const size_t img = static_cast<size_t>(w) * h * 3;
  const size_t frame = obs.front()->images.size();  // C x img
  const int64_t C = static_cast<int64_t>(frame / img);
  in.images = torch::empty({B, C, h, w, 3}, torch::kByte);
  in.proprio = torch::empty({B, kProprioDim});
  for (int64_t b = 0; b < B; ++b) {
    std::memcpy(in.images.data_ptr<uint8_t>() + b * frame,
                obs[b]->images.data(), frame);
    std::memcpy(in.proprio.data_ptr<float>() + b * kProprioDim, obs[b]->proprio,
                sizeof(float) * kProprioDim);
  }
  at::Tensor idx = torch::tensor(task_of, torch::kLong);
  in.text = text.index_select(0, idx);
  in.text_len = lens.index_select(0, idx);
  return in;
}

// One evaluation episode.
struct EvalJob {
  std::unique_ptr<ManipulationEnv> env;
  int task;
  bool finished = false;
  bool success = false;
};

// Each task's episodes and successes, in the tasks' order.
std::vector<TaskSuccess> Tally(const std::vector<EvalJob>& jobs,
                               const std::vector<TaskSpec>& tasks) {
  std::vector<TaskSuccess> out(tasks.size());
  for (size_t t = 0; t < tasks.size(); ++t) out[t].task = tasks[t].name;
  for (const EvalJob& j : jobs) {
    TaskSuccess& t = out[static_cast<size_t>(j.task)];
    ++t.episodes;
    t.successes += j.success;
    t.outcomes.push_back(j.success);
  }
  return out;
}

// The instructions as `policy` reads them (text [T, L], lens [T]).
absl::Status InstructionTable(const TrainablePolicy& policy,
                              const TextTokenizer& words,
                              const std::vector<std::string>& instructions,
                              int64_t max_len, at::Tensor* text,
                              at::Tensor* lens) {
  absl::StatusOr<InstructionEncoder> encoder =
      InstructionEncoder::Of(policy.declared_interface(), max_len, words);
  if (!encoder.ok()) return encoder.status();
  return encoder->EncodeTable(instructions, text, lens);
}

}  // namespace

absl::StatusOr<std::vector<TaskSuccess>> EvaluatePolicy(
    TrainablePolicy& policy, const TextTokenizer& tokenizer,
    const EvalOptions& o, const std::vector<TaskSpec>& tasks, int episodes,
    bool sampled, int first_init, int execute_steps) {
  if (sampled) torch::manual_seed(o.seed);
  const EnvOptions& opts = o.env;
  absl::StatusOr<std::unique_ptr<EglContext>> gl =
      EglContext::Create(opts.render_backend);
  if (!gl.ok()) return gl.status();
  std::vector<std::string> instructions;
  using Job = EvalJob;
  std::vector<Job> jobs;
  for (size_t t = 0; t < tasks.size(); ++t) {
    instructions.push_back(tasks[t].instruction);
    absl::StatusOr<std::shared_ptr<const TaskModel>> model =
        TaskModel::Create(tasks[t], opts);
    if (!model.ok()) return model.status();
    absl::StatusOr<std::unique_ptr<Renderer>> r = Renderer::Create(
        (*model)->model(), opts.image_width, opts.image_height);
    if (!r.ok()) return r.status();
    std::shared_ptr<Renderer> shared = *std::move(r);
    for (int e = 0; e < episodes; ++e) {
      absl::StatusOr<std::unique_ptr<ManipulationEnv>> env =
          ManipulationEnv::Create(*model, opts, o.seed, e, shared);
      if (!env.ok()) return env.status();
      (*env)->Reset(first_init + e);
      jobs.push_back(Job{*std::move(env), static_cast<int>(t)});
    }
  }
  at::Tensor text, lens;
  if (absl::Status s = InstructionTable(policy, tokenizer, instructions,
                                        o.max_text_len, &text, &lens);
      !s.ok()) {
    return s;
  }
  const int execute = static_cast<int>(std::min<int64_t>(
      execute_steps > 0 ? execute_steps : o.execute_steps, policy.chunk()));
  for (;;) {
    std::vector<const Observation*> obs;
    std::vector<int64_t> task_of;
    std::vector<Job*> active;
    for (auto& j : jobs) {
      if (j.finished) continue;
      active.push_back(&j);
      obs.push_back(&j.env->observation());
      task_of.push_back(j.task);
    }
    if (active.empty()) break;
    PolicyInput in = InputFromObservations(obs, task_of, text, lens,
                                           opts.image_width, opts.image_height);
    ActResult r = policy.Act(in, /*greedy=*/!sampled);
    const at::Tensor acts = r.actions.contiguous();
    const float* a = acts.data_ptr<float>();
    const int64_t K = acts.size(1);
    for (size_t b = 0; b < active.size(); ++b) {
      for (int k = 0; k < execute && !active[b]->finished; ++k) {
        // The next decision reads the images of the last executed step only.
        if (k + 1 < execute) active[b]->env->SkipImagesOnNextStep();
        absl::StatusOr<StepResult> s = active[b]->env->Step(
            absl::MakeConstSpan(a + (b * K + k) * kActionDim, kActionDim));
        if (!s.ok()) return s.status();
        if (s->done || s->truncated) {
          active[b]->finished = true;
          active[b]->success = s->success;
        }
      }
    }
  }
  return Tally(jobs, tasks);
}

}  // namespace rlvla3
