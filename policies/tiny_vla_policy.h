// File: policies/tiny_vla_policy.h
// -----------------------------------------------------------------------------
// TinyVLAPolicy: the Policy interface over a TinyVLA network. Act runs the
// padded forward pass without autograd and samples (or takes the argmax of)
// each action dimension's 256 bins; Evaluate runs the packed forward pass (or
// the padded one, to compare) with autograd for the learner's loss.
//
// Example:
//   auto policy = std::make_shared<TinyVLAPolicy>(TinyVLA(opts),
//   /*version=*/0); ActResult a = policy->Act(input, /*greedy=*/false);
//   EvalResult e = policy->Evaluate(input, a.tokens);   // same log-probs
// -----------------------------------------------------------------------------
#ifndef RLVLA3_POLICIES_TINY_VLA_POLICY_H_
#define RLVLA3_POLICIES_TINY_VLA_POLICY_H_

#include <string>
#include <vector>

#include "policies/text_tokenizer.h"
#include "policies/tiny_vla.h"
#include "policies/trainable_policy.h"

namespace rlvla3 {

class TinyVLAPolicy final : public TrainablePolicy {
 public:
  TinyVLAPolicy(TinyVLA net, uint64_t version, bool packed_evaluate = true);

  ActResult Act(const PolicyInput& in, bool greedy) override;
  EvalResult Evaluate(const PolicyInput& in, const at::Tensor& tokens) override;
  int chunk() const override {
    return static_cast<int>(net_->options().chunk());
  }

  // TrainablePolicy. Groups: value_head.* (value), action_log_scale
  // (action_scale), everything else (weights).
  ParameterGroups Parameters() override;
  at::Tensor Values(const PolicyInput& in) override;
  void SetTraining(bool training) override;
  void To(const at::Device& device) override;
  absl::Status ToDtype(at::ScalarType dtype) override;
  at::Device device() const override;
  std::shared_ptr<TrainablePolicy> Snapshot(uint64_t version) override;
  const char* kind() const override { return "tiny_vla"; }
  NamedTensors State() override;
  int64_t max_text_len() const override {
    return net_->options().max_text_len();
  }
  absl::Status SetActionTemperature(double temperature) override;
  absl::Status Save(const std::string& dir, const TextTokenizer& tokenizer,
                    uint64_t version) override;

  TinyVLA& net() { return net_; }

  // Log-probs [B, K] and entropy [B, K] of `tokens` under `logits` [B, K, A,
  // bins].
  static void LogProbs(const at::Tensor& logits, const at::Tensor& tokens,
                       at::Tensor* log_probs, at::Tensor* entropy);
  // Bin centres in [-1, 1] of `tokens`.
  static at::Tensor TokensToActions(const at::Tensor& tokens, int64_t bins);

 private:
  TinyVLA net_;
  bool packed_evaluate_;
};

// Instruction token ids of each row of `instructions`, 0-padded:
// text int64 [T, max_len], lens int64 [T].
void EncodeInstructionTable(const std::vector<std::string>& instructions,
                            const TextTokenizer& tokenizer, int64_t max_len,
                            at::Tensor* text, at::Tensor* lens);

}  // namespace rlvla3

#endif  // RLVLA3_POLICIES_TINY_VLA_POLICY_H_
