// File: services/learner/learner_core.h
// -----------------------------------------------------------------------------
// LearnerCore: the learner's algorithm, without threads. Segments stream in
// (Add), are checked for staleness (dropped, and counted, beyond the lag
// bound: the backstop behind admission control), get their advantages (GAE
// for PPO, group-normalised success for GRPO once a group of G episodes from
// one initial state is complete), and become ready samples. TrainMicroBatch
// runs forward/backward on the next micro-batch and accumulates gradients;
// once the global batch's units (samples for PPO, episodes for GRPO) are all
// trained, Step takes exactly one optimizer step, or skips it if the loss or
// a gradient is NaN/Inf (logged and counted: the weights stay untouched).
// Leftover samples carry over to the next global batch.
//
// It is three parts along the seams of the data: SampleIntake
// (sample_intake.h: segments in, advantages, GRPO groups, ready samples),
// ShardedOptimizer (sharded_optimizer.h: gradients, the ZeRO-1 AdamW,
// data-parallel agreement, the optimizer's checkpoint shards) and the update
// itself, here: learner_core.cc (the micro-batch loss, Step), ppo_epochs.cc
// (the multi-pass update), learner_staging.cc (micro-batches onto the
// device) and kl_adaptive_lr.h (the weights' KL-adaptive learning rate).
//
// Example:
//   LearnerCore learner(policy, text, text_len, options, /*version=*/0);
//   learner.Add({segment});
//   while (learner.CanTrain()) learner.TrainMicroBatch();
//   if (learner.ReadyToStep()) LearnerStepStats s = learner.Step();
//   for (RolloutSegment* done : learner.TakeConsumed()) pool.Release(done);
// -----------------------------------------------------------------------------
#ifndef RLVLA3_SERVICES_LEARNER_LEARNER_CORE_H_
#define RLVLA3_SERVICES_LEARNER_LEARNER_CORE_H_

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/types/span.h"
#include "policies/policy.h"
#include "policies/trainable_policy.h"
#include "runtime/channels/rollout_segment.h"
#include "services/learner/gradient_reducer.h"
#include "services/learner/kl_adaptive_lr.h"
#include "services/learner/ppo_loss.h"
#include "services/learner/sample_intake.h"
#include "services/learner/sharded_optimizer.h"

namespace rlvla3 {

// B observations from segment slots (segs[b], slots[b]) as a PolicyInput,
// instructions from the task table; with `tokens`, also the taken action
// tokens (int64 [B, K, A]). Host tensors, pinned when bound for a CUDA
// `device` (policies/device.h ToDevice sends them).
PolicyInput GatherFromSegments(absl::Span<RolloutSegment* const> segs,
                               absl::Span<const int> slots,
                               const at::Tensor& text,
                               const at::Tensor& text_len, at::Tensor* tokens,
                               const at::Device& device = at::kCPU);

struct LearnerOptions {
  std::string algorithm = "ppo";  // ppo | grpo
  PpoLossOptions loss;
  double gamma = 0.99, gae_lambda = 0.95;
  int micro_batch = 32;
  int64_t global_units = 128;  // per optimizer step: samples (PPO) or
                               // episodes (GRPO)
  int64_t max_policy_lag = 1;  // older samples are dropped
  int grpo_group_size = 4;
  // GRPO: a group whose episodes all got the same return carries no signal;
  // it is never trained (its segments go straight back) and it still counts
  // towards the global batch, so rollouts and the admission gate keep their
  // cadence. Dynamic sampling (DAPO; RLinf masks rather than resamples) also
  // rescales the update to the batch's informative episodes: the gradient
  // is a mean over the groups that carry signal, not diluted by silent ones.
  // A batch with no informative group takes no optimizer step: the weights,
  // the optimizer's moments and the learning rate stay as they were (the
  // version still advances: it is the rollouts' clock).
  bool dynamic_sampling = true;
  // GRPO refill (PPO epochs only): a global batch with fewer informative
  // groups than this is not trained yet; the version advances without a
  // weight change (the rollouts go on) and its informative groups carry
  // into the next global batch, at most refill_max_rounds times in a row
  // (then it trains what it has). 0: off.
  int min_informative_groups = 0;
  int refill_max_rounds = 4;
  // Anchor: adds ref_kl_coef x KL(current || reference) per action token
  // (k3 estimator on the taken tokens) to the loss, the reference being the
  // weights this learner started from (after SFT: the SFT policy). One
  // extra forward pass per micro-batch (no grad). 0: off.
  double ref_kl_coef = 0.0;
  // The PPO ratio per executed chunk step (true) or per decision (false:
  // one ratio of the decision's summed log-probs); ppo_loss.h.
  bool per_step_ratio = false;
  double lr = 1e-4, weight_decay = 0.0, max_grad_norm = 1.0;
  double value_lr = 1e-3;         // the value head's learning rate
  double action_scale_lr = 1e-2;  // the action log-temperatures' rate
  // PPO: advantages scaled by running moments over about one global batch
  // of arrived samples (a micro-batch alone is too small: with sparse
  // rewards it often holds no reward at all, and normalising it would turn
  // value noise into a full-size gradient).
  bool normalize_advantages = true;
  // Data-parallel: all-reduce gradient buckets while the step's last
  // backward pass still runs (GradientReducer::OverlapBegin).
  bool overlap_allreduce = true;
  int64_t critic_warmup_steps = 0;  // PPO: value loss only for these steps
  // Adaptive step size (as rsl_rl's PPO): after each update the
  // policy change is measured as KL(before || after) per action token (a
  // decision's KL over its executed steps x action dimensions) on the
  // update's largest micro-batch; the weights' rate is divided by
  // `lr_adapt_factor` when that KL exceeds 2 x target_kl and multiplied by it
  // below target_kl / 2, within [lr_min, lr_max]. 0 keeps `lr` fixed.
  double target_kl = 0.0;
  // Early stop (PPO epochs): a minibatch whose KL(prox || theta) per action
  // token, measured in its own forward pass, exceeds this is not stepped,
  // and the update ends there (0: off).
  double kl_stop = 0.0;
  // GRPO: the share of each episode's decisions trained, drawn at random,
  // and a cap per episode (0: none); SampleIntakeOptions.
  double train_decisions = 1.0;
  int max_train_decisions = 0;
  // GRPO: a group's return std is taken as at least this (advantages.h).
  double grpo_std_floor = 0.0;
  double lr_min = 1e-7, lr_max = 1e-3, lr_adapt_factor = 1.5;
  // PPO epochs: each global batch is trained for `ppo_epochs` passes, each
  // pass `minibatches` shuffled minibatches with one optimizer step each.
  // The proximal log-probs are recorded (no grad) as the samples arrive,
  // from the weights at the start of the update, so the clip acts from the
  // second minibatch on; advantages are normalised over the global batch.
  // 1 and 1 keep the streaming single pass (proximal = current policy).
  // The policy version advances once per global batch either way.
  int ppo_epochs = 2;
  int minibatches = 2;
  uint64_t shuffle_seed = 0;  // minibatch order
  // Where the policy trains (the core moves it there; its AdamW state is
  // made there), micro-batches staged through pinned host memory. `bf16`:
  // forward passes under bf16 autocast; weights, gradients and optimizer
  // state stay fp32.
  at::Device device{at::kCPU};
  bool bf16 = false;
  // Where MakeSnapshot's copies live: the local inference actors' device
  // (device-to-device on one GPU), or the learner's own.
  at::Device publish_device{at::kCPU};
  // Versions the run published and lost with a killed learner (strictly
  // between these two): segments tagged with one are dropped and counted
  // (lost_version_samples). Both 0: none.
  uint64_t lost_versions_after = 0, lost_versions_before = 0;
};

struct LearnerStepStats {
  uint64_t version = 0;  // after the step
  bool skipped = false;  // NaN/Inf: no update
  int64_t samples = 0;   // trained in this global batch
  double loss = 0, policy_loss = 0, value_loss = 0, entropy = 0;
  double clip_fraction = 0, approx_kl = 0, grad_norm = 0;
  double is_weight_min = 0, is_weight_mean = 0, is_weight_max = 0;
  double lag_min = 0, lag_mean = 0, lag_max = 0;
  // KL(before || after) of this step per action token (target_kl > 0 only)
  // and the weights' learning rate for the next step.
  double step_kl = 0, lr = 0;
  // KL(prox || theta) per action token over the update's trained samples
  // (each epoch's mean, then over epochs), and whether kl_stop ended it.
  double token_kl = 0;
  bool kl_stopped = false;
  // KL(current || reference) per action token (ref_kl_coef > 0 only).
  double ref_kl = 0;
  // GRPO refill: the batch was carried into the next one, not trained.
  bool deferred = false;
  // PPO epochs: ratio pi_theta / pi_prox over every trained sample, and the
  // clip fraction and approximate KL(prox || theta) of each epoch.
  int optimizer_steps = 0;  // minibatch steps taken in this update
  int backward_passes = 0;  // micro-batch backward passes (the update's cost)
  double ratio_min = 1, ratio_mean = 1, ratio_max = 1;
  std::vector<double> epoch_clip_fraction, epoch_approx_kl, epoch_token_kl;
  // GRPO: groups completed since the last update, and those whose returns
  // differed (the informative ones; the rest were not trained).
  int64_t groups = 0, informative_groups = 0;
};

class LearnerCore {
 public:
  // text [T, L] / text_len [T]: instruction tokens of each task row.
  // With a `reducer` of world size > 1 this core is one rank of a
  // data-parallel learner: options.global_units is its share of the global
  // batch, gradients are averaged over the ranks before each optimizer step
  // and a step is skipped on every rank if it is non-finite on any. The
  // reducer must outlive the core; null is one process alone.
  LearnerCore(std::shared_ptr<TrainablePolicy> policy, at::Tensor text,
              at::Tensor text_len, const LearnerOptions& options,
              uint64_t version, GradientReducer* reducer = nullptr);
  ~LearnerCore();

  // Takes ownership of the segments until TakeConsumed hands them back.
  // Segments over the lag bound are dropped (returned by TakeConsumed too).
  void Add(const std::vector<RolloutSegment*>& segments);
  bool CanTrain() const;     // ready samples, and the batch is not complete
  bool ReadyToStep() const;  // all of the global batch's units are trained
  void TrainMicroBatch();
  LearnerStepStats Step();
  // Segments whose samples are all trained (or that were dropped).
  std::vector<RolloutSegment*> TakeConsumed();
  // A deep copy of the network for inference, at the current version.
  std::shared_ptr<Policy> MakeSnapshot();
  // Data-parallel: every rank takes rank 0's parameters (call once, on every
  // rank, before training).
  absl::Status SyncParameters();
  // The first failed collective (a rank died or timed out): the group cannot
  // go on, and the step that hit it was skipped.
  absl::Status group_status() const { return optimizer_->status(); }
  // Checkpoints of the training state besides the weights (which the
  // policy's Save writes, on rank 0): this rank's shard of the optimizer
  // state, the version, the adapted learning rate (optimizer_shards.h). Load
  // on any number of ranks, after the weights of the same version
  // (`weights_version`: the learner's own version may be numbered above it,
  // resume_plan.h).
  absl::Status SaveTrainingState(const std::string& dir);
  absl::Status LoadTrainingState(const std::string& dir,
                                 uint64_t weights_version);
  int64_t steps_taken() const { return steps_taken_; }
  double learning_rate() const;

  uint64_t version() const { return version_; }
  // A version at or above `held` is already served (by another learner,
  // before a restart that lost its high-water mark): the version jumps to
  // held + 1 with the weights unchanged, and samples of the versions jumped
  // over are lost (counted). False when the version is above `held`.
  bool JumpAbove(uint64_t held);
  TrainablePolicy& policy() { return *policy_; }
  int64_t global_units() const { return options_.global_units; }
  int64_t ready_samples() const { return intake_.ready_samples(); }
  int64_t dropped_samples() const { return intake_.dropped_samples(); }
  // Of them, samples of versions a killed learner published and lost.
  int64_t lost_version_samples() const {
    return intake_.lost_version_samples();
  }
  // GRPO episodes dropped because their group could no longer complete in
  // time (a member lost with a dead rollout worker, or never admitted).
  int64_t expired_episodes() const { return intake_.expired_episodes(); }
  // Of dropped_samples, those that waited here past the lag bound.
  int64_t aged_out_samples() const { return intake_.aged_out_samples(); }
  int64_t skipped_steps() const { return skipped_steps_; }
  // GRPO: in incomplete groups.
  int64_t waiting_episodes() const { return intake_.waiting_episodes(); }
  // Units (samples for PPO, episode ends for GRPO) ready to train.
  int64_t ready_units() const { return intake_.ready_units(); }
  // Units of the current global batch trained so far (PPO's epochs: taken).
  int64_t batch_units_done() const { return units_trained_; }
  // Whether to train now: a full micro-batch is ready, or enough to finish
  // the current global batch.
  bool ShouldTrain() const;
  // Trained samples per policy lag (index = lag), over the whole run.
  const std::vector<int64_t>& lag_histogram() const { return lag_hist_; }
  // The advantage of sample `t` of a segment the learner holds (NaN if it
  // holds none such): for tests and inspection.
  float AdvantageOf(const RolloutSegment* s, int t) const {
    return intake_.AdvantageOf(s, t);
  }
  // Test hook: multiplies every micro-batch loss (NaN injects a bad step).
  void set_loss_scale_for_test(double s) { loss_scale_ = s; }

 private:
  using SampleRef = SampleIntake::SampleRef;
  // Loss statistics summed over micro-batches, kept as tensors so that an
  // update reads them from the device once.
  struct LossSums {
    enum Field {
      kLoss,
      kPolicy,
      kValue,
      kEntropy,
      kClipped,
      kBehavKl,
      kProxKl,
      kIsSum,
      kIsMin,
      kIsMax,
      kRatioSum,
      kRatioMin,
      kRatioMax,
      kProxKlSum,  // k3 of KL(prox || theta) in the clip's units, summed
      kTokens,     // the action tokens of the decisions
      kRefKl,      // k3 of KL(theta || reference) per step, summed
      kFields
    };
    at::Tensor v[kFields];
    int64_t samples = 0;  // the decisions added (known on the host)
    void Add(const PpoLossTerms& terms, const at::Tensor& loss);
    bool empty() const { return !v[kLoss].defined(); }
    at::Tensor Pack() const;  // [kFields]
  };
  // One micro-batch's learner inputs; advantages as stored (not normalised).
  struct MicroBatch {
    PolicyInput in;
    // behav: per decision [B]; behav_steps: per executed step [B, K].
    at::Tensor tokens, mask, behav, behav_steps, adv, ret, weight;
  };
  // The multi-pass update's constants (ppo_epochs.cc): minibatches per
  // epoch (the same on every rank), the global batch's advantage moments and
  // every collected sample's proximal log-prob, in batch_ order.
  struct EpochPlan {
    int minibatches = 1;
    double adv_mean = 0, adv_std = 1;
    at::Tensor prox;
  };

  // learner_core.cc: the update.
  // The policy's Evaluate under the configured precision; fp32 results.
  EvalResult Evaluate(const PolicyInput& in, const at::Tensor& tokens);
  PpoLossTerms Loss(const MicroBatch& mb, const EvalResult& e,
                    const at::Tensor& prox, const at::Tensor& adv);
  // The anchor's term: ref_kl_coef x KL(theta || reference) per token,
  // weighted as the policy loss; adds its sum to terms->ref_kl_sum.
  void AddReferenceKl(const MicroBatch& mb, const at::Tensor& steps,
                      PpoLossTerms* terms);
  bool multi_pass() const {
    return options_.ppo_epochs > 1 || options_.minibatches > 1;
  }
  bool distributed() const { return optimizer_->distributed(); }
  // After an update that changed the weights: the version advances, and with
  // target_kl the step's KL is measured and the learning rate adapted.
  void FinishUpdate(LearnerStepStats* st);
  // An update with nothing to train (every group uniform): the version
  // advances, nothing else moves.
  void AdvanceWithoutUpdate(LearnerStepStats* st);
  // GRPO refill: too few informative groups yet (min_informative_groups).
  bool ShouldRefill();
  // The version advances without a weight change; the batch's samples stay
  // for the next global batch (refill).
  void CarryOver(LearnerStepStats* st);
  // The dynamic-sampling rescale of this update's gradients.
  double InformativeScale() const;
  // The loss statistics as means over the trained (informative) samples.
  void ScaleLossStats(LearnerStepStats* st) const;
  // After an update (or a skipped one): the next global batch starts empty.
  void ResetGlobalBatch();
  // The GRPO group counts of this update, then reset.
  void TakeGroupCounts(LearnerStepStats* st);
  // KL(before || after) of the step just taken, per action token of the KL
  // probe (the update's largest micro-batch).
  double MeasureStepKl();

  // learner_staging.cc: micro-batches onto the learner's device.
  // V(s) of the slots (SampleIntake's bootstrap values), no grad.
  void BootstrapValues(const std::vector<SampleRef>& slots,
                       std::vector<float>* values);
  // The samples' inputs (and taken tokens) on the learner's device.
  PolicyInput Gather(const std::vector<SampleRef>& batch, at::Tensor* tokens);
  MicroBatch Prepare(const std::vector<SampleRef>& batch);
  void RecordLags(const std::vector<SampleRef>& batch);

  // ppo_epochs.cc: the multi-pass update.
  // The proximal log-probs of a micro-batch (no grad), kept for the update.
  void RecordProximal(const std::vector<SampleRef>& batch);
  LearnerStepStats StepEpochs();
  EpochPlan PlanEpochs(int64_t n);
  // The advantage moments over the whole global batch (every rank's).
  void GlobalAdvantageMoments(int64_t n, EpochPlan* plan);
  // The epochs' minibatch steps; false once a non-finite step aborts them.
  bool TrainEpochs(const EpochPlan& plan, std::vector<LossSums>* epoch_sums,
                   LearnerStepStats* st);
  // Forward/backward over the shuffled samples order[lo, hi): one
  // minibatch; returns its summed loss, its summed KL(prox || theta) and its
  // tokens, [3] (a tensor, no host read). With kl_stop, the first
  // micro-batch's KL is read from its forward before its backward (KlStops):
  // past the bound, st->kl_stopped is set and nothing is backpropagated.
  at::Tensor TrainMinibatch(const EpochPlan& plan,
                            const std::vector<int64_t>& order, int64_t lo,
                            int64_t hi, LossSums* sums, LearnerStepStats* st);
  // kl_stop's check on a micro-batch's terms (undefined: none here), agreed
  // by every rank.
  bool KlStops(const PpoLossTerms& first);
  static void SummarizeEpochs(const std::vector<LossSums>& epoch_sums,
                              int64_t n, int minibatches, LearnerStepStats* st);
  // Skip or finish the update, then hand back its samples' segments.
  void EndEpochs(bool completed, LearnerStepStats* st);

  std::shared_ptr<TrainablePolicy> policy_;
  std::shared_ptr<TrainablePolicy> reference_;  // ref_kl_coef > 0 only
  at::Tensor text_, text_len_;
  LearnerOptions options_;
  uint64_t version_;
  SampleIntake intake_;
  std::unique_ptr<ShardedOptimizer> optimizer_;  // once the policy is placed
  int64_t units_trained_ = 0;                    // in the current global batch
  // Of them, episodes of informative GRPO groups (PPO: every unit).
  int64_t informative_units_ = 0;
  double grad_scale_ = 1.0;  // applied by ClipGradients
  int64_t samples_trained_ = 0;
  int64_t skipped_steps_ = 0;
  int refills_ = 0;  // global batches carried into the current one
  double loss_scale_ = 1.0;
  int64_t steps_taken_ = 0;  // optimizer steps in this learner's life
  // The weights' current learning rate, and the last micro-batch to measure
  // the step's KL with (target_kl > 0 only).
  KlAdaptiveLr rate_;
  LossSums sums_;  // single pass: this global batch so far
  double lag_sum_ = 0, lag_min_ = 0, lag_max_ = 0;
  std::vector<int64_t> lag_hist_;
  // Multi-pass: the global batch being collected and its proximal log-probs
  // (one tensor per micro-batch, left where they were computed).
  std::vector<SampleRef> batch_;
  std::vector<at::Tensor> batch_prox_;
  std::mt19937_64 shuffle_rng_;
};

}  // namespace rlvla3

#endif  // RLVLA3_SERVICES_LEARNER_LEARNER_CORE_H_
