// File: policies/torchscript_policy.h
// -----------------------------------------------------------------------------
// A user's own policy, exported from PyTorch with torch.jit.script, used
// exactly like TinyVLA. The module must define two methods (see
// scripts/export_torchscript_policy.py for a complete example):
//
//   act(agentview: uint8[B,H,W,3], wrist: uint8[B,H,W,3], proprio: f32[B,8],
//       text: i64[B,L], text_len: i64[B], greedy: bool)
//       -> (tokens: i64[B,K,7], log_probs: f32[B,K], values: f32[B])
//   evaluate(agentview, wrist, proprio, text, text_len, tokens: i64[B,K,7])
//       -> (log_probs: f32[B,K], entropy: f32[B,K], values: f32[B])
//
// Tokens are bins in [0, 256) per action dimension; actions are bin centres.
// Loading fails with a clear error if a method is missing.
//
// It trains like TinyVLA: evaluate() must be differentiable (autograd runs
// through the scripted code); parameters named value_head.* form the value
// group, all others the weights. A checkpoint is the folder's policy.pt
// (the module with its trained weights) and policy.json (version, tokenizer,
// text length).
//
// Example:
//   absl::StatusOr<std::unique_ptr<TorchScriptPolicy>> p =
//       TorchScriptPolicy::Load("my_policy.pt", /*bins=*/256,
//                               /*max_text_len=*/16);
//   ActResult a = (*p)->Act(input, false);
// -----------------------------------------------------------------------------
#ifndef RLVLA3_POLICIES_TORCHSCRIPT_POLICY_H_
#define RLVLA3_POLICIES_TORCHSCRIPT_POLICY_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "policies/trainable_policy.h"

namespace rlvla3 {

class TorchScriptPolicy final : public TrainablePolicy {
 public:
  static absl::StatusOr<std::unique_ptr<TorchScriptPolicy>> Load(
      const std::string& path, int64_t bins = 256, int64_t max_text_len = 16);
  // A checkpoint folder written by Save.
  static absl::StatusOr<PolicyCheckpoint> LoadCheckpoint(
      const std::string& dir);
  ~TorchScriptPolicy() override;

  ActResult Act(const PolicyInput& in, bool greedy) override;
  EvalResult Evaluate(const PolicyInput& in, const at::Tensor& tokens) override;
  int chunk() const override { return chunk_; }

  ParameterGroups Parameters() override;
  at::Tensor Values(const PolicyInput& in) override;
  void SetTraining(bool training) override;
  void To(const at::Device& device) override;
  absl::Status ToDtype(at::ScalarType dtype) override;
  at::Device device() const override;
  std::shared_ptr<TrainablePolicy> Snapshot(uint64_t version) override;
  const char* kind() const override { return "torchscript"; }
  NamedTensors State() override;
  int64_t max_text_len() const override { return max_text_len_; }
  absl::Status SetActionTemperature(double temperature) override;
  absl::Status Save(const std::string& dir, const TextTokenizer& tokenizer,
                    uint64_t version) override;

 private:
  struct Module;
  TorchScriptPolicy() = default;
  std::unique_ptr<Module> module_;
  int64_t bins_ = 256;
  int chunk_ = 1;
  int64_t max_text_len_ = 16;
  at::Device device_{at::kCPU};
};

}  // namespace rlvla3

#endif  // RLVLA3_POLICIES_TORCHSCRIPT_POLICY_H_
