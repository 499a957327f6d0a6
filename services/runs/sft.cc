#include "services/runs/sft.h"

#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "envs/egl_context.h"
#include "envs/env_pool.h"
#include "envs/scripted_expert.h"
#include "envs/task_file.h"
#include "policies/action_tokenizer.h"
#include "policies/checkpoint.h"
#include "policies/checkpoint_context.h"
#include "policies/image_augment.h"
#include "policies/instruction_encoder.h"
#include "policies/tiny_vla_policy.h"
#include "runtime/steady_clock.h"
#include "services/options/config_bridge.h"

namespace rlvla3 {
namespace {

using Clock = std::chrono::steady_clock;

// Copies observations into a PolicyInput (one memcpy per image).
PolicyInput InputFromObservations(const std::vector<const Observation*>& obs,
                                  const std::vector<int64_t>& task_of,
                                  const at::Tensor& text,
                                  const at::Tensor& lens, int w, int h) {
  const int64_t B = static_cast<int64_t>(obs.size());
  PolicyInput in;
  in.agentview = torch::empty({B, h, w, 3}, torch::kByte);
  in.wrist = torch::empty({B, h, w, 3}, torch::kByte);
  in.proprio = torch::empty({B, kProprioDim});
  const size_t img = static_cast<size_t>(w) * h * 3;
  for (int64_t b = 0; b < B; ++b) {
    std::memcpy(in.agentview.data_ptr<uint8_t>() + b * img,
                obs[b]->agentview.data(), img);
    std::memcpy(in.wrist.data_ptr<uint8_t>() + b * img, obs[b]->wrist.data(),
                img);
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

namespace {

// The demonstrations as tensors over the DemoSet's memory (no copies), and
// the instruction table.
struct SftData {
  int64_t n = 0;
  at::Tensor agentview, wrist, proprio, task, action_tokens, text, text_len;
};

SftData MakeSftData(DemoSet& demos, const TextTokenizer& tok,
                    int64_t max_text_len) {
  SftData d;
  d.n = static_cast<int64_t>(demos.size());
  const int64_t N = d.n, H = demos.height, W = demos.width, K = demos.chunk;
  d.agentview =
      torch::from_blob(demos.agentview.data(), {N, H, W, 3}, torch::kByte);
  d.wrist = torch::from_blob(demos.wrist.data(), {N, H, W, 3}, torch::kByte);
  d.proprio =
      torch::from_blob(demos.proprio.data(), {N, kProprioDim}, torch::kFloat);
  d.task =
      torch::from_blob(demos.task.data(), {N}, torch::kInt).to(torch::kLong);
  d.action_tokens = torch::from_blob(demos.action_tokens.data(),
                                     {N, K, kActionDim}, torch::kLong);
  EncodeInstructionTable(demos.instructions, tok, max_text_len, &d.text,
                         &d.text_len);
  return d;
}

// Row t: the target distribution for expert bin t (Gaussian over bins; the
// identity when sigma is 0).
at::Tensor SoftLabels(int64_t bins, double sigma_bins) {
  if (sigma_bins <= 0) return torch::eye(bins);
  at::Tensor grid = torch::arange(bins, torch::kFloat);
  const double s2 = 2.0 * sigma_bins * sigma_bins;
  at::Tensor labels =
      torch::exp(-(grid.unsqueeze(1) - grid.unsqueeze(0)).pow(2) / s2);
  return labels / labels.sum(1, /*keepdim=*/true);
}

// Behaviour cloning: AdamW on the soft cross-entropy against the expert's
// bins, epochs of random minibatches (images randomly shifted), until the
// epochs or sft.time_budget_s run out.
class SftTrainer {
 public:
  SftTrainer(const CloningOptions& o, TinyVLA net, const SftData& data,
             const std::function<void(const std::string&)>& progress)
      : o_(o),
        net_(std::move(net)),
        data_(data),
        progress_(progress),
        opt_(net_->parameters(),
             torch::optim::AdamWOptions(o.lr).weight_decay(o.weight_decay)),
        soft_labels_(SoftLabels(net_->options().bins(), o.label_sigma_bins)),
        augment_rng_(o.seed),
        batch_(std::min<int64_t>(o.batch_size, data.n)),
        steps_per_epoch_(std::max<int64_t>(1, data.n / batch_)),
        total_steps_(steps_per_epoch_ * o.epochs) {}

  void Train(SftResult* result) {
    const auto t0 = Clock::now();
    auto last_report = Clock::now();
    net_->train();
    for (int64_t epoch = 0; epoch < o_.epochs; ++epoch) {
      at::Tensor perm = torch::randperm(data_.n, torch::kLong);
      for (int64_t s = 0; s < steps_per_epoch_; ++s) {
        at::Tensor loss = Loss(perm.narrow(0, s * batch_, batch_));
        opt_.zero_grad();
        loss.backward();
        opt_.step();
        ++result->optimizer_steps;
        // One host read per report, not per step.
        if (SecondsSince(last_report) > o_.report_every_s ||
            result->optimizer_steps == total_steps_) {
          result->final_loss = loss.item<double>();
          Report(epoch, *result, SecondsSince(t0));
          last_report = Clock::now();
        }
        if (SecondsSince(t0) > o_.time_budget_s) {
          spdlog::warn("sft: time budget of {:.0f} s reached after {} steps",
                       o_.time_budget_s, result->optimizer_steps);
          return Finish(result, t0);
        }
      }
    }
    Finish(result, t0);
  }

 private:
  // Cross-entropy against the expert's bins, softened over neighbouring
  // bins (bins are ordinal: a near miss is better than a far one).
  at::Tensor Loss(const at::Tensor& idx) {
    PolicyInput in;
    in.agentview = RandomShift(data_.agentview.index_select(0, idx),
                               o_.augment_shift_px, &augment_rng_);
    in.wrist = RandomShift(data_.wrist.index_select(0, idx),
                           o_.augment_shift_px, &augment_rng_);
    in.proprio = data_.proprio.index_select(0, idx);
    at::Tensor task = data_.task.index_select(0, idx);
    in.text = data_.text.index_select(0, task);
    in.text_len = data_.text_len.index_select(0, task);
    at::Tensor logp =
        torch::log_softmax(net_->forward(in, /*packed=*/true).logits, -1);
    at::Tensor target =
        soft_labels_
            .index_select(0, data_.action_tokens.index_select(0, idx).flatten())
            .view(logp.sizes());
    return -(target * logp).sum(-1).mean();
  }

  void Report(int64_t epoch, const SftResult& r, double elapsed) {
    const double rate =
        static_cast<double>(r.optimizer_steps * batch_) / elapsed;
    const double eta =
        static_cast<double>(total_steps_ - r.optimizer_steps) * batch_ / rate;
    progress_(
        absl::StrFormat("sft epoch %d/%d step %d/%d | loss %.3f nats/dim | "
                        "%.0f samples/s | ETA %.0f s",
                        epoch + 1, o_.epochs, r.optimizer_steps, total_steps_,
                        r.final_loss, rate, eta));
  }

  void Finish(SftResult* result, Clock::time_point t0) {
    result->train_s = SecondsSince(t0);
    result->samples_per_s =
        static_cast<double>(result->optimizer_steps * batch_) / result->train_s;
    net_->eval();
  }

  const CloningOptions o_;
  TinyVLA net_;
  const SftData& data_;
  const std::function<void(const std::string&)>& progress_;
  torch::optim::AdamW opt_;
  at::Tensor soft_labels_;
  std::mt19937_64 augment_rng_;
  const int64_t batch_, steps_per_epoch_, total_steps_;
};

// The trained policy's greedy success per task; the mean over tasks.
absl::Status EvaluateSft(const SftOptions& o, TinyVLAPolicy& policy,
                         const TextTokenizer& tok, SftResult* result) {
  const auto t0 = Clock::now();
  absl::StatusOr<std::vector<TaskSuccess>> ev =
      EvaluatePolicy(policy, tok, o.eval, o.tasks,
                     static_cast<int>(o.eval_episodes), /*sampled=*/false);
  if (!ev.ok()) return ev.status();
  result->eval = *ev;
  result->eval_s = SecondsSince(t0);
  double sum = 0;
  for (const auto& t : result->eval)
    sum += double(t.successes) / std::max(1, t.episodes);
  result->mean_success = result->eval.empty() ? 0 : sum / result->eval.size();
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<SftResult> RunSft(
    const SftOptions& o, const std::string& run_dir,
    const std::function<void(const std::string&)>& progress) {
  torch::manual_seed(o.seed);
  SftResult result;
  const auto t0 = Clock::now();
  progress(o.demo_files.empty()
               ? absl::StrFormat(
                     "sft: collecting %d expert demos for each of %d tasks",
                     o.demos.demos_per_task, o.tasks.size())
               : absl::StrFormat("sft: reading the demos of %d file(s)",
                                 o.demo_files.size()));
  absl::StatusOr<DemoSet> demos =
      o.demo_files.empty()
          ? CollectDemonstrations(o.demos, o.tasks)
          : ReadDemonstrations(o.demo_files, o.demos.chunk, o.tasks,
                               o.demos.env.image_width,
                               o.demos.env.image_height);
  if (!demos.ok()) return demos.status();
  result.collect_s = SecondsSince(t0);
  result.demo_samples = static_cast<int64_t>(demos->size());
  result.demo_episodes = demos->episodes;
  spdlog::info(
      "sft: {} demo episodes ({} samples, {} expert attempts) in {:.1f} s",
      demos->episodes, demos->size(), demos->attempts, result.collect_s);

  TextTokenizer tok = TextTokenizer::Build(demos->instructions);
  TinyVLA net(TinyVLAOptions(o.policy).vocab_size(tok.size()));
  TinyVLAPolicy policy(net, 0);
  for (const auto& p : net->parameters()) result.parameters += p.numel();
  const SftData data = MakeSftData(*demos, tok, o.policy.max_text_len());
  SftTrainer(o.cloning, net, data, progress).Train(&result);
  policy.set_version(static_cast<uint64_t>(result.optimizer_steps));

  result.checkpoint =
      o.checkpoint.empty() ? run_dir + "/checkpoint" : o.checkpoint;
  if (absl::Status s =
          SaveCheckpoint(result.checkpoint, net, tok, policy.version());
      !s.ok()) {
    return s;
  }
  CheckpointContext context = o.context;
  context.expert_steps = demos->MedianExpertSteps();
  spdlog::info("sft: the experts' median episode length {} steps",
               context.expert_steps);
  if (absl::Status s = WriteCheckpointContext(result.checkpoint, context);
      !s.ok()) {
    return s;
  }
  if (o.eval_episodes > 0) {
    progress(absl::StrFormat("sft: evaluating %d episodes per task",
                             o.eval_episodes));
    if (absl::Status s = EvaluateSft(o, policy, tok, &result); !s.ok())
      return s;
  }
  return result;
}

std::string FormatTaskSuccess(const std::vector<TaskSuccess>& s) {
  std::string out =
      absl::StrFormat("%-34s %9s %9s\n", "task", "success", "episodes");
  double sum = 0;
  for (const auto& t : s) {
    const double rate = double(t.successes) / std::max(1, t.episodes);
    sum += rate;
    absl::StrAppendFormat(&out, "%-34s %8.0f%% %9d\n", t.task, 100 * rate,
                          t.episodes);
  }
  absl::StrAppendFormat(&out, "%-34s %8.1f%%\n", "mean",
                        s.empty() ? 0.0 : 100 * sum / s.size());
  return out;
}

std::string FormatSftResult(const SftResult& r) {
  std::string out = FormatTaskSuccess(r.eval);
  absl::StrAppendFormat(
      &out,
      "SFT: %d demo episodes (%d samples) collected in %.0f s; %d optimizer "
      "steps in %.0f s (%.0f samples/s, final loss %.3f nats/dim); TinyVLA "
      "%.2f M parameters; eval %.0f s\n"
      "mean success %.1f%%; checkpoint %s\n",
      r.demo_episodes, r.demo_samples, r.collect_s, r.optimizer_steps,
      r.train_s, r.samples_per_s, r.final_loss, r.parameters / 1e6, r.eval_s,
      100 * r.mean_success, r.checkpoint);
  return out;
}

}  // namespace rlvla3
