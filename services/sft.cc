#include "services/sft.h"

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
#include "policies/image_augment.h"
#include "policies/tiny_vla_policy.h"
#include "services/config_bridge.h"

namespace rlvla3 {
namespace {

using Clock = std::chrono::steady_clock;

double Since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

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

}  // namespace

absl::StatusOr<std::vector<TaskSpec>> SftTasks(const Config& c) {
  return ResolveTaskList(c.sft.tasks, "sft.tasks");
}

absl::StatusOr<DemoSet> CollectDemonstrations(
    const Config& c, const std::vector<TaskSpec>& tasks) {
  const int n_tasks = static_cast<int>(tasks.size());
  EnvPoolOptions po;
  for (const auto& t : tasks) po.tasks.push_back(t.name);
  // Task files resolve by path; built-in names by name.
  for (size_t i = 0; i < tasks.size(); ++i) {
    if (FindTask(tasks[i].name) == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          "sft: task files are not supported for demo collection yet: ",
          tasks[i].name));
    }
  }
  const int per_task =
      static_cast<int>(std::max<int64_t>(1, c.env.num_envs / n_tasks));
  po.num_envs = per_task * n_tasks;
  po.num_threads = static_cast<int>(c.threads.env_workers);
  po.seed = static_cast<uint64_t>(c.run.seed);
  po.env = EnvOptionsFromConfig(c);
  po.lp_num_threads = static_cast<int>(c.threads.lp_num_threads);
  absl::StatusOr<std::unique_ptr<EnvPool>> pool = EnvPool::Create(po);
  if (!pool.ok()) return pool.status();
  EnvPool& p = **pool;

  DemoSet d;
  d.width = po.env.image_width;
  d.height = po.env.image_height;
  d.chunk = static_cast<int>(c.policy.chunk);
  for (const auto& t : tasks) {
    d.task_names.push_back(t.name);
    d.instructions.push_back(t.instruction);
  }
  struct Episode {
    std::vector<uint8_t> agentview, wrist;
    std::vector<float> proprio, actions;
    int steps = 0;
  };
  std::vector<Episode> episodes(static_cast<size_t>(po.num_envs));
  std::vector<ScriptedExpert> experts;
  for (int i = 0; i < po.num_envs; ++i) {
    absl::StatusOr<ScriptedExpert> e = ScriptedExpert::Create(p.env(i).task());
    if (!e.ok()) return e.status();
    experts.push_back(*e);
  }
  // DART (Laskey et al. 2017): the env executes a noisy copy of the expert's
  // action while the demo records the clean one, so the demos visit the
  // states a slightly-off policy reaches and show how to recover from them.
  // The gripper command (last dimension) is never perturbed.
  std::vector<std::mt19937_64> noise_rng;
  for (int i = 0; i < po.num_envs; ++i)
    noise_rng.emplace_back(static_cast<uint64_t>(c.run.seed) + i);
  std::normal_distribution<float> unit_normal(0.0f, 1.0f);
  const float noise_std = static_cast<float>(c.sft.demo_noise);
  std::vector<int> have(static_cast<size_t>(n_tasks), 0);
  const ActionTokenizer act_tok;
  auto done = [&] {
    return std::all_of(have.begin(), have.end(),
                       [&](int h) { return h >= c.sft.demos_per_task; });
  };
  std::vector<int> ready, send;
  std::vector<float> actions;
  while (!done()) {
    ready.clear();
    if (absl::Status s = p.Recv(1, absl::Seconds(60), &ready); !s.ok())
      return s;
    send.clear();
    actions.clear();
    for (int id : ready) {
      const EnvState& s = p.state(id);
      const int task = id % n_tasks;
      Episode& ep = episodes[static_cast<size_t>(id)];
      float a[kActionDim] = {};
      if (s.result.done || s.result.truncated) {
        ++d.attempts;
        if (s.result.success && have[task] < c.sft.demos_per_task) {
          ++have[task];
          ++d.episodes;
          for (int t = 0; t < ep.steps; ++t) {
            d.task.push_back(task);
            for (int k = 0; k < d.chunk; ++k) {
              const int src = std::min(t + k, ep.steps - 1);
              for (int j = 0; j < kActionDim; ++j) {
                d.action_tokens.push_back(
                    act_tok.Encode(ep.actions[src * kActionDim + j]));
              }
            }
          }
          d.agentview.insert(d.agentview.end(), ep.agentview.begin(),
                             ep.agentview.end());
          d.wrist.insert(d.wrist.end(), ep.wrist.begin(), ep.wrist.end());
          d.proprio.insert(d.proprio.end(), ep.proprio.begin(),
                           ep.proprio.end());
        }
        ep = Episode{};
      } else {
        if (s.step == 0) {
          ep = Episode{};
          experts[static_cast<size_t>(id)].Reset();
        }
        experts[static_cast<size_t>(id)].Act(p.env(id), a);
        ep.agentview.insert(ep.agentview.end(), s.obs->agentview.begin(),
                            s.obs->agentview.end());
        ep.wrist.insert(ep.wrist.end(), s.obs->wrist.begin(),
                        s.obs->wrist.end());
        ep.proprio.insert(ep.proprio.end(), s.obs->proprio,
                          s.obs->proprio + kProprioDim);
        ep.actions.insert(ep.actions.end(), a, a + kActionDim);
        ++ep.steps;
        if (noise_std > 0) {
          std::mt19937_64& rng = noise_rng[static_cast<size_t>(id)];
          for (int j = 0; j + 1 < kActionDim; ++j)
            a[j] = std::clamp(a[j] + noise_std * unit_normal(rng), -1.0f, 1.0f);
        }
      }
      send.push_back(id);
      actions.insert(actions.end(), a, a + kActionDim);
    }
    if (absl::Status s = p.Send(send, actions); !s.ok()) return s;
  }
  return d;
}

absl::StatusOr<std::vector<TaskSuccess>> EvaluatePolicy(
    Policy& policy, const TextTokenizer& tokenizer, const Config& c,
    const std::vector<TaskSpec>& tasks, int episodes, bool sampled,
    int first_init) {
  if (sampled) torch::manual_seed(static_cast<uint64_t>(c.run.seed));
  const EnvOptions opts = EnvOptionsFromConfig(c);
  absl::StatusOr<std::unique_ptr<EglContext>> gl =
      EglContext::Create(opts.render_backend);
  if (!gl.ok()) return gl.status();
  std::vector<std::string> instructions;
  struct Job {
    std::unique_ptr<ManipulationEnv> env;
    int task;
    bool finished = false;
    bool success = false;
  };
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
          ManipulationEnv::Create(*model, opts,
                                  static_cast<uint64_t>(c.run.seed), e, shared);
      if (!env.ok()) return env.status();
      (*env)->Reset(first_init + e);
      jobs.push_back(Job{*std::move(env), static_cast<int>(t)});
    }
  }
  at::Tensor text, lens;
  EncodeInstructionTable(instructions, tokenizer, c.policy.max_text_len, &text,
                         &lens);
  const int execute =
      static_cast<int>(std::min<int64_t>(c.sft.execute_steps, policy.chunk()));
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
  std::vector<TaskSuccess> out(tasks.size());
  for (size_t t = 0; t < tasks.size(); ++t) out[t].task = tasks[t].name;
  for (const auto& j : jobs) {
    ++out[static_cast<size_t>(j.task)].episodes;
    out[static_cast<size_t>(j.task)].successes += j.success;
  }
  return out;
}

absl::StatusOr<SftResult> RunSft(
    const Config& c, const std::string& run_dir,
    const std::function<void(const std::string&)>& progress) {
  torch::manual_seed(static_cast<uint64_t>(c.run.seed));
  absl::StatusOr<std::vector<TaskSpec>> tasks = SftTasks(c);
  if (!tasks.ok()) return tasks.status();
  SftResult result;

  auto t0 = Clock::now();
  progress(
      absl::StrFormat("sft: collecting %d expert demos for each of %d tasks",
                      c.sft.demos_per_task, tasks->size()));
  absl::StatusOr<DemoSet> demos = CollectDemonstrations(c, *tasks);
  if (!demos.ok()) return demos.status();
  result.collect_s = Since(t0);
  result.demo_samples = static_cast<int64_t>(demos->size());
  result.demo_episodes = demos->episodes;
  spdlog::info(
      "sft: {} demo episodes ({} samples, {} expert attempts) in {:.1f} s",
      demos->episodes, demos->size(), demos->attempts, result.collect_s);

  std::vector<std::string> instructions = demos->instructions;
  TextTokenizer tok = TextTokenizer::Build(instructions);
  TinyVLA net(TinyVLAOptionsFromConfig(c, tok.size()));
  TinyVLAPolicy policy(net, 0);
  for (const auto& p : net->parameters()) result.parameters += p.numel();
  torch::optim::AdamW opt(
      net->parameters(),
      torch::optim::AdamWOptions(c.sft.lr).weight_decay(c.sft.weight_decay));

  // The dataset as tensors over the DemoSet's memory (no copies).
  const int64_t N = static_cast<int64_t>(demos->size()), H = demos->height,
                W = demos->width;
  const int64_t K = demos->chunk;
  at::Tensor all_a =
      torch::from_blob(demos->agentview.data(), {N, H, W, 3}, torch::kByte);
  at::Tensor all_w =
      torch::from_blob(demos->wrist.data(), {N, H, W, 3}, torch::kByte);
  at::Tensor all_p =
      torch::from_blob(demos->proprio.data(), {N, kProprioDim}, torch::kFloat);
  at::Tensor all_t =
      torch::from_blob(demos->task.data(), {N}, torch::kInt).to(torch::kLong);
  at::Tensor all_y = torch::from_blob(demos->action_tokens.data(),
                                      {N, K, kActionDim}, torch::kLong);
  at::Tensor text, lens;
  EncodeInstructionTable(instructions, tok, c.policy.max_text_len, &text,
                         &lens);

  // Row t: the target distribution for expert bin t (Gaussian over bins).
  const int64_t bins = net->options().bins();
  at::Tensor grid = torch::arange(bins, torch::kFloat);
  at::Tensor soft_labels = torch::eye(bins);
  if (c.sft.label_sigma_bins > 0) {
    const double s2 = 2.0 * c.sft.label_sigma_bins * c.sft.label_sigma_bins;
    soft_labels =
        torch::exp(-(grid.unsqueeze(1) - grid.unsqueeze(0)).pow(2) / s2);
    soft_labels = soft_labels / soft_labels.sum(1, /*keepdim=*/true);
  }

  t0 = Clock::now();
  const int64_t B = std::min<int64_t>(c.sft.batch_size, N);
  const int64_t steps_per_epoch = std::max<int64_t>(1, N / B);
  const int64_t total_steps = steps_per_epoch * c.sft.epochs;
  double loss_ema = 0;
  auto last_report = Clock::now();
  bool over_budget = false;
  std::mt19937_64 augment_rng(static_cast<uint64_t>(c.run.seed));
  net->train();
  for (int64_t epoch = 0; epoch < c.sft.epochs && !over_budget; ++epoch) {
    at::Tensor perm = torch::randperm(N, torch::kLong);
    for (int64_t s = 0; s < steps_per_epoch; ++s) {
      at::Tensor idx = perm.narrow(0, s * B, B);
      PolicyInput in;
      in.agentview = RandomShift(all_a.index_select(0, idx),
                                 c.sft.augment_shift_px, &augment_rng);
      in.wrist = RandomShift(all_w.index_select(0, idx), c.sft.augment_shift_px,
                             &augment_rng);
      in.proprio = all_p.index_select(0, idx);
      at::Tensor task = all_t.index_select(0, idx);
      in.text = text.index_select(0, task);
      in.text_len = lens.index_select(0, task);
      // Cross-entropy against the expert's bins, softened over neighbouring
      // bins (bins are ordinal: a near miss is better than a far one).
      at::Tensor logp =
          torch::log_softmax(net->forward(in, /*packed=*/true).logits, -1);
      at::Tensor target =
          soft_labels.index_select(0, all_y.index_select(0, idx).flatten())
              .view(logp.sizes());
      at::Tensor loss = -(target * logp).sum(-1).mean();
      opt.zero_grad();
      loss.backward();
      opt.step();
      ++result.optimizer_steps;
      // One host read per report, not per step.
      if (Since(last_report) > c.metrics.interval_s ||
          result.optimizer_steps == total_steps) {
        loss_ema = loss.item<double>();
        const double elapsed = Since(t0);
        const double rate =
            static_cast<double>(result.optimizer_steps * B) / elapsed;
        const double eta =
            static_cast<double>(total_steps - result.optimizer_steps) * B /
            rate;
        progress(
            absl::StrFormat("sft epoch %d/%d step %d/%d | loss %.3f nats/dim | "
                            "%.0f samples/s | ETA %.0f s",
                            epoch + 1, c.sft.epochs, result.optimizer_steps,
                            total_steps, loss_ema, rate, eta));
        last_report = Clock::now();
      }
      if (Since(t0) > c.sft.time_budget_s) {
        over_budget = true;
        spdlog::warn("sft: time budget of {:.0f} s reached after {} steps",
                     c.sft.time_budget_s, result.optimizer_steps);
        break;
      }
    }
  }
  result.train_s = Since(t0);
  result.final_loss = loss_ema;
  result.samples_per_s =
      static_cast<double>(result.optimizer_steps * B) / result.train_s;
  policy.set_version(static_cast<uint64_t>(result.optimizer_steps));
  net->eval();

  result.checkpoint =
      c.sft.checkpoint.empty() ? run_dir + "/checkpoint" : c.sft.checkpoint;
  if (absl::Status s =
          SaveCheckpoint(result.checkpoint, net, tok, policy.version());
      !s.ok()) {
    return s;
  }
  if (c.sft.eval_episodes > 0) {
    t0 = Clock::now();
    progress(absl::StrFormat("sft: evaluating %d episodes per task",
                             c.sft.eval_episodes));
    absl::StatusOr<std::vector<TaskSuccess>> ev = EvaluatePolicy(
        policy, tok, c, *tasks, static_cast<int>(c.sft.eval_episodes),
        /*sampled=*/false);
    if (!ev.ok()) return ev.status();
    result.eval = *ev;
    result.eval_s = Since(t0);
    double sum = 0;
    for (const auto& t : result.eval)
      sum += double(t.successes) / std::max(1, t.episodes);
    result.mean_success = result.eval.empty() ? 0 : sum / result.eval.size();
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
