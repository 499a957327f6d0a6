// File: policies/torchscript_policy.h
// -----------------------------------------------------------------------------
// A user's own policy, exported from PyTorch with torch.jit.script. Two
// contracts (scripts/export_torchscript_policy.py exports both):
//
// Declared (docs/policies.md): the policy declares its interface
// (policies/policy_interface.h) in a method `interface() -> str` returning
// the JSON, or in `<stem>.interface.json` beside `<stem>.pt` (both present:
// they must agree), and has one network method
//
//   heads(images: List[uint8[B,H,W,3]] in the declared cameras' order,
//         proprio: f32[B,P], text: i64[B,L], text_len: i64[B])
//       -> (params: f32[B,K,W], values: f32[B])
//
// where W is the action head's width (policies/action_head.h: the bins'
// logits, or Gaussian means then log-stds). rl-vla3 samples, scores
// (log-prob, entropy) and maps actions onto the controller itself, so the
// RL math is the closed form whatever the network. Loading probes heads()
// with one blank observation of the declared shapes and refuses output of
// any other shape, naming the field.
//
// Undeclared (v1, TinyVLA's shape): two methods
//
//   act(agentview: uint8[B,H,W,3], wrist: uint8[B,H,W,3], proprio: f32[B,8],
//       text: i64[B,L], text_len: i64[B], greedy: bool)
//       -> (tokens: i64[B,K,7], log_probs: f32[B,K], values: f32[B])
//   evaluate(agentview, wrist, proprio, text, text_len, tokens: i64[B,K,7])
//       -> (log_probs: f32[B,K], entropy: f32[B,K], values: f32[B])
//
// with tokens bins in [0, 256) per dimension; actions are bin centres.
//
// Either trains like TinyVLA: autograd runs through the scripted code;
// parameters named value_head.* form the value group, all others the
// weights. A checkpoint is the folder's policy.pt (the module with its
// trained weights), policy.json (version, tokenizer, text length) and, for a
// declared policy, policy.interface.json.
//
// Example:
//   absl::StatusOr<std::unique_ptr<TorchScriptPolicy>> p =
//       TorchScriptPolicy::Load("my_policy.pt", /*bins=*/256,
//                               /*max_text_len=*/16);
//   ActResult a = (*p)->Act(input, false);
//   std::optional<PolicyInterface> i = (*p)->declared_interface();
// -----------------------------------------------------------------------------
#ifndef RLVLA3_POLICIES_TORCHSCRIPT_POLICY_H_
#define RLVLA3_POLICIES_TORCHSCRIPT_POLICY_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "policies/action_head.h"
#include "policies/policy_interface.h"
#include "policies/trainable_policy.h"

namespace rlvla3 {

class TorchScriptPolicy final : public TrainablePolicy {
 public:
  // `bins` and `max_text_len` apply to an undeclared (v1) module only.
  static absl::StatusOr<std::unique_ptr<TorchScriptPolicy>> Load(
      const std::string& path, int64_t bins = 256, int64_t max_text_len = 16);
  // The interface the module at `path` declares (its interface() method or
  // <stem>.interface.json), nullopt for an undeclared one; errors name the
  // file and the field, or both sources where they disagree.
  static absl::StatusOr<std::optional<PolicyInterface>> ReadDeclaration(
      const std::string& path);
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
  std::optional<PolicyInterface> declared_interface() const override {
    return interface_;
  }

 private:
  struct Module;
  TorchScriptPolicy() = default;
  absl::Status Declare(const PolicyInterface& declared,
                       const std::string& path);
  absl::Status Probe(const std::string& path);
  // heads() on `images` (declared order) and `in`'s other inputs: params
  // [B, K, W] and values [B].
  void Heads(const std::vector<at::Tensor>& images, const PolicyInput& in,
             at::Tensor* params, at::Tensor* values);
  // `in`'s images in the declared cameras' order.
  std::vector<at::Tensor> CameraImages(const PolicyInput& in) const;
  std::unique_ptr<Module> module_;
  std::optional<PolicyInterface> interface_;
  std::shared_ptr<const ActionHead> head_;  // set with interface_
  std::string source_dir_;    // the .pt's folder (a declared model's base)
  double temperature_ = 1.0;  // SetActionTemperature (declared only)
  absl::Status SaveDeclaration(const std::string& dir) const;
  int64_t bins_ = 256;
  int chunk_ = 1;
  int64_t max_text_len_ = 16;
  at::Device device_{at::kCPU};
};

}  // namespace rlvla3

#endif  // RLVLA3_POLICIES_TORCHSCRIPT_POLICY_H_
