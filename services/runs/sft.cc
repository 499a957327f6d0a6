#include "services/runs/sft.h"

#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cmath>
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
#include "policies/action_head.h"
#include "policies/action_tokenizer.h"
#include "policies/checkpoint.h"
#include "policies/checkpoint_context.h"
#include "policies/image_augment.h"
#include "policies/instruction_encoder.h"
#include "policies/tiny_vla_policy.h"
#include "policies/torchscript_policy.h"
#include "runtime/steady_clock.h"
#include "services/options/config_bridge.h"

namespace rlvla3 {
namespace {

using Clock = std::chrono::steady_clock;

// The demonstrations as tensors over the DemoSet's memory (no copies), and
// the instruction table (as the policy reads it).
struct SftData {
  int64_t n = 0;
  // The samples trained on, and those held out (a file's mask/valid).
  at::Tensor train, valid;
  at::Tensor images;  // uint8 [N, C, H, W, 3]
  at::Tensor proprio, task, action_tokens, actions, text, text_len;
};

absl::StatusOr<SftData> MakeSftData(DemoSet& demos,
                                    const InstructionEncoder& encoder) {
  SftData d;
  d.n = static_cast<int64_t>(demos.size());
  const int64_t N = d.n, H = demos.height, W = demos.width, K = demos.chunk;
  const int64_t C = static_cast<int64_t>(demos.cameras.size());
  d.images =
      torch::from_blob(demos.images.data(), {N, C, H, W, 3}, torch::kByte);
  d.proprio =
      torch::from_blob(demos.proprio.data(), {N, kProprioDim}, torch::kFloat);
  d.task =
      torch::from_blob(demos.task.data(), {N}, torch::kInt).to(torch::kLong);
  d.action_tokens = torch::from_blob(demos.action_tokens.data(),
                                     {N, K, kActionDim}, torch::kLong);
  d.actions =
      torch::from_blob(demos.actions.data(), {N, K, kActionDim}, torch::kFloat);
  if (absl::Status s =
          encoder.EncodeTable(demos.instructions, &d.text, &d.text_len);
      !s.ok()) {
    return s;
  }
  std::vector<int64_t> train, valid;
  for (int64_t i = 0; i < N; ++i) {
    const bool held = !demos.valid.empty() && demos.valid[i] != 0;
    (held ? valid : train).push_back(i);
  }
  if (train.empty()) {
    return absl::InvalidArgumentError(
        "every demo is in the validation split (mask/valid): none to train "
        "on");
  }
  d.train = torch::tensor(train, torch::kLong);
  d.valid = torch::tensor(valid, torch::kLong);
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

// The cloning loss of a minibatch `in` (samples `idx` of the data), in
// nats per action dimension.
using SftLoss =
    std::function<at::Tensor(const PolicyInput& in, const at::Tensor& idx)>;

// TinyVLA: the cross-entropy against the expert's bins, softened over
// neighbouring bins (bins are ordinal: a near miss is better than a far one).
SftLoss TinyVLALoss(TinyVLA net, const SftData& data, double sigma_bins) {
  const at::Tensor labels = SoftLabels(net->options().bins(), sigma_bins);
  return [net, &data, labels](const PolicyInput& in,
                              const at::Tensor& idx) mutable {
    at::Tensor logp =
        torch::log_softmax(net->forward(in, /*packed=*/true).logits, -1);
    at::Tensor target =
        labels
            .index_select(0, data.action_tokens.index_select(0, idx).flatten())
            .view(logp.sizes());
    return -(target * logp).sum(-1).mean();
  };
}

// A declared policy: the negative log-likelihood of the expert's actions
// under its own action head (policies/action_head.h), the controller's
// actions mapped into the policy's range and bins.
SftLoss DeclaredLoss(TrainablePolicy& policy, const ActionHead& head,
                     const SftData& data) {
  const at::Tensor targets = head.FromControl(data.actions);
  const double dims = static_cast<double>(head.space().size);
  return
      [&policy, targets, dims](const PolicyInput& in, const at::Tensor& idx) {
        const at::Tensor taken = targets.index_select(0, idx);
        return -policy.Evaluate(in, taken).log_probs.mean() / dims;
      };
}

// Behaviour cloning: AdamW on `loss`, epochs of random minibatches (images
// randomly shifted), until the epochs or sft.time_budget_s run out.
class SftTrainer {
 public:
  SftTrainer(const CloningOptions& o, TrainablePolicy& policy, SftLoss loss,
             const SftData& data,
             const std::function<void(const std::string&)>& progress)
      : o_(o),
        policy_(policy),
        loss_(std::move(loss)),
        data_(data),
        progress_(progress),
        opt_(AllParameters(policy),
             torch::optim::AdamWOptions(o.lr).weight_decay(o.weight_decay)),
        augment_rng_(o.seed),
        batch_(std::min<int64_t>(o.batch_size, data.train.numel())),
        steps_per_epoch_(std::max<int64_t>(1, data.train.numel() / batch_)),
        total_steps_(steps_per_epoch_ * o.epochs) {}

  void Train(SftResult* result) {
    const auto t0 = Clock::now();
    auto last_report = Clock::now();
    policy_.SetTraining(true);
    for (int64_t epoch = 0; epoch < o_.epochs; ++epoch) {
      const at::Tensor perm = data_.train.index_select(
          0, torch::randperm(data_.train.numel(), torch::kLong));
      for (int64_t s = 0; s < steps_per_epoch_; ++s) {
        const at::Tensor idx = perm.narrow(0, s * batch_, batch_);
        at::Tensor loss = loss_(Batch(idx), idx);
        opt_.zero_grad();
        loss.backward();
        opt_.step();
        ++result->optimizer_steps;
        // One host read per report, not per step.
        if (SecondsSince(last_report) > o_.report_every_s ||
            result->optimizer_steps == total_steps_) {
          result->final_loss = loss.item<double>();
          result->valid_loss = ValidationLoss();
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
  // TinyVLA's parameters in the order its module lists them (the same
  // optimizer as before the policy was generic); another policy's groups.
  static std::vector<at::Tensor> AllParameters(TrainablePolicy& policy) {
    if (auto* tiny = dynamic_cast<TinyVLAPolicy*>(&policy)) {
      return tiny->net()->parameters();
    }
    TrainablePolicy::ParameterGroups g = policy.Parameters();
    std::vector<at::Tensor> all = g.weights;
    all.insert(all.end(), g.value.begin(), g.value.end());
    all.insert(all.end(), g.action_scale.begin(), g.action_scale.end());
    return all;
  }

  // The loss over the held-out samples (no augmentation, no gradient, the
  // policy in eval mode); NaN when none is held out.
  double ValidationLoss() {
    const int64_t n = data_.valid.numel();
    if (n == 0) return std::nan("");
    torch::NoGradGuard no_grad;
    policy_.SetTraining(false);
    double sum = 0;
    for (int64_t at = 0; at < n; at += batch_) {
      const at::Tensor idx =
          data_.valid.narrow(0, at, std::min(batch_, n - at));
      sum += loss_(Batch(idx, /*augment=*/false), idx).item<double>() *
             static_cast<double>(idx.numel());
    }
    policy_.SetTraining(true);
    return sum / static_cast<double>(n);
  }

  PolicyInput Batch(const at::Tensor& idx, bool augment = true) {
    PolicyInput in;
    // Each camera shifted on its own, camera by camera.
    const at::Tensor images = data_.images.index_select(0, idx);
    std::vector<at::Tensor> shifted;
    for (int64_t c = 0; c < images.size(1); ++c) {
      shifted.push_back(RandomShift(images.select(1, c),
                                    augment ? o_.augment_shift_px : 0,
                                    &augment_rng_));
    }
    in.images = torch::stack(shifted, 1);
    in.proprio = data_.proprio.index_select(0, idx);
    at::Tensor task = data_.task.index_select(0, idx);
    in.text = data_.text.index_select(0, task);
    in.text_len = data_.text_len.index_select(0, task);
    return in;
  }

  void Report(int64_t epoch, const SftResult& r, double elapsed) {
    const double rate =
        static_cast<double>(r.optimizer_steps * batch_) / elapsed;
    const double eta =
        static_cast<double>(total_steps_ - r.optimizer_steps) * batch_ / rate;
    progress_(absl::StrFormat(
        "sft epoch %d/%d step %d/%d | loss %.3f nats/dim%s | %.0f samples/s | "
        "ETA %.0f s",
        epoch + 1, o_.epochs, r.optimizer_steps, total_steps_, r.final_loss,
        std::isnan(r.valid_loss)
            ? ""
            : absl::StrFormat(" (validation %.3f)", r.valid_loss),
        rate, eta));
  }

  void Finish(SftResult* result, Clock::time_point t0) {
    result->train_s = SecondsSince(t0);
    result->samples_per_s =
        static_cast<double>(result->optimizer_steps * batch_) / result->train_s;
    policy_.SetTraining(false);
  }

  const CloningOptions o_;
  TrainablePolicy& policy_;
  const SftLoss loss_;
  const SftData& data_;
  const std::function<void(const std::string&)>& progress_;
  torch::optim::AdamW opt_;
  std::mt19937_64 augment_rng_;
  const int64_t batch_, steps_per_epoch_, total_steps_;
};

// The trained policy's greedy success per task; the mean over tasks.
absl::Status EvaluateSft(const SftOptions& o, TrainablePolicy& policy,
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

// The policy SFT trains: the user's declared TorchScript module, or a new
// TinyVLA over the demos' vocabulary (seeded by RunSft's manual_seed).
absl::StatusOr<std::shared_ptr<TrainablePolicy>> SftPolicy(
    const SftOptions& o, const TextTokenizer& tok) {
  if (o.torchscript_path.empty()) {
    return std::make_shared<TinyVLAPolicy>(
        TinyVLA(TinyVLAOptions(o.policy).vocab_size(tok.size())), 0);
  }
  absl::StatusOr<std::unique_ptr<TorchScriptPolicy>> p =
      TorchScriptPolicy::Load(o.torchscript_path, /*bins=*/256,
                              o.policy.max_text_len());
  if (!p.ok()) return p.status();
  if (!(*p)->declared_interface()) {
    return absl::InvalidArgumentError(absl::StrCat(
        o.torchscript_path,
        ": SFT trains a policy that declares its interface (docs/policies.md); "
        "this module has act/evaluate only"));
  }
  return std::shared_ptr<TrainablePolicy>(*std::move(p));
}

// Trains `policy` on the demos with its loss; the result's figures.
absl::Status Clone(const SftOptions& o, TrainablePolicy& policy,
                   const TextTokenizer& tok, DemoSet& demos,
                   const std::function<void(const std::string&)>& progress,
                   SftResult* result) {
  const std::optional<PolicyInterface> declared = policy.declared_interface();
  absl::StatusOr<InstructionEncoder> encoder =
      InstructionEncoder::Of(declared, policy.max_text_len(), tok);
  if (!encoder.ok()) return encoder.status();
  absl::StatusOr<SftData> data = MakeSftData(demos, *encoder);
  if (!data.ok()) return data.status();
  const TrainablePolicy::ParameterGroups groups = policy.Parameters();
  for (const auto* g : {&groups.weights, &groups.value, &groups.action_scale}) {
    for (const at::Tensor& p : *g) result->parameters += p.numel();
  }
  std::unique_ptr<ActionHead> head;
  SftLoss loss;
  if (declared) {
    absl::StatusOr<std::unique_ptr<ActionHead>> h =
        MakeActionHead(declared->action);
    if (!h.ok()) return h.status();
    head = *std::move(h);
    loss = DeclaredLoss(policy, *head, *data);
  } else {
    loss = TinyVLALoss(dynamic_cast<TinyVLAPolicy&>(policy).net(), *data,
                       o.cloning.label_sigma_bins);
  }
  SftTrainer(o.cloning, policy, std::move(loss), *data, progress).Train(result);
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
                               o.demos.env.image_height, o.demos.env.cameras,
                               o.demo_read, o.demo_task);
  if (!demos.ok() && !o.demo_files.empty()) {
    // The user's files: FailedPrecondition, which the verb reports as the
    // config's (exit 2), as `rl-vla3 config` does.
    return absl::FailedPreconditionError(
        absl::StrCat("sft.demos: ", demos.status().message()));
  }
  if (!demos.ok()) return demos.status();
  result.collect_s = SecondsSince(t0);
  result.demo_samples = static_cast<int64_t>(demos->size());
  result.demo_episodes = demos->episodes;
  spdlog::info(
      "sft: {} demo episodes ({} samples, {} expert attempts; {} episodes "
      "held out for validation) in {:.1f} s",
      demos->episodes, demos->size(), demos->attempts, demos->valid_episodes,
      result.collect_s);
  result.valid_episodes = demos->valid_episodes;

  TextTokenizer tok = TextTokenizer::Build(demos->instructions);
  absl::StatusOr<std::shared_ptr<TrainablePolicy>> policy = SftPolicy(o, tok);
  if (!policy.ok()) return policy.status();
  result.policy_kind = (*policy)->kind();
  if (absl::Status s = Clone(o, **policy, tok, *demos, progress, &result);
      !s.ok()) {
    return s;
  }
  (*policy)->set_version(static_cast<uint64_t>(result.optimizer_steps));

  result.checkpoint =
      o.checkpoint.empty() ? run_dir + "/checkpoint" : o.checkpoint;
  if (absl::Status s =
          (*policy)->Save(result.checkpoint, tok, (*policy)->version());
      !s.ok()) {
    return s;
  }
  CheckpointContext context = o.context;
  context.expert_steps = demos->MedianExpertSteps();
  context.interface = (*policy)->declared_interface();
  spdlog::info("sft: the experts' median episode length {} steps",
               context.expert_steps);
  if (absl::Status s = WriteCheckpointContext(result.checkpoint, context);
      !s.ok()) {
    return s;
  }
  if (o.eval_episodes > 0) {
    progress(absl::StrFormat("sft: evaluating %d episodes per task",
                             o.eval_episodes));
    if (absl::Status s = EvaluateSft(o, **policy, tok, &result); !s.ok())
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
      "steps in %.0f s (%.0f samples/s, final loss %.3f nats/dim%s); %s "
      "%.2f M parameters; eval %.0f s\n"
      "mean success %.1f%%; checkpoint %s\n",
      r.demo_episodes, r.demo_samples, r.collect_s, r.optimizer_steps,
      r.train_s, r.samples_per_s, r.final_loss,
      std::isnan(r.valid_loss)
          ? ""
          : absl::StrFormat(", validation %.3f over %d held-out episodes",
                            r.valid_loss, r.valid_episodes),
      r.policy_kind == "tiny_vla" ? "TinyVLA" : r.policy_kind,
      r.parameters / 1e6, r.eval_s, 100 * r.mean_success, r.checkpoint);
  return out;
}

}  // namespace rlvla3
