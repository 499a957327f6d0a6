// File: policies/trainable_policy.h
// -----------------------------------------------------------------------------
// TrainablePolicy: what the learner, the engine and SFT need from a policy
// beyond acting: its parameters in optimizer groups, critic values, a frozen
// copy for the inference server, train/eval mode, temperature control and a
// checkpoint that loads back. TinyVLA (TinyVLAPolicy) and a user's scripted
// module (TorchScriptPolicy) both implement it, so the learner never knows
// which one it trains. LoadPolicyCheckpoint reads either kind's checkpoint.
//
// Example:
//   absl::StatusOr<PolicyCheckpoint> ck = LoadPolicyCheckpoint("runs/x/ck");
//   TrainablePolicy::ParameterGroups g = ck->policy->Parameters();
//   std::shared_ptr<Policy> frozen = ck->policy->Snapshot(/*version=*/3);
//   ck->policy->Save("runs/x/ck2", ck->tokenizer, /*version=*/4);
// -----------------------------------------------------------------------------
#ifndef RLVLA3_POLICIES_TRAINABLE_POLICY_H_
#define RLVLA3_POLICIES_TRAINABLE_POLICY_H_

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "policies/policy.h"
#include "policies/policy_interface.h"
#include "policies/text_tokenizer.h"

namespace rlvla3 {

class TrainablePolicy : public Policy {
 public:
  // The weights' version (Policy): set by whoever updates them.
  uint64_t version() const final {
    return version_.load(std::memory_order_acquire);
  }
  void set_version(uint64_t v) { version_.store(v, std::memory_order_release); }
  // The trainable parameters, each in exactly one group.
  struct ParameterGroups {
    std::vector<at::Tensor> weights;       // the policy's own weights
    std::vector<at::Tensor> value;         // the critic head (own rate)
    std::vector<at::Tensor> action_scale;  // sampling temperatures, if any
  };
  virtual ParameterGroups Parameters() = 0;
  // Critic values [B] of the observations, without autograd.
  virtual at::Tensor Values(const PolicyInput& in) = 0;
  virtual void SetTraining(bool training) = 0;
  // Moves every parameter and buffer to `device` (policies/device.h);
  // Act and Evaluate then expect their inputs there (text_len on the host).
  virtual void To(const at::Device& device) = 0;
  // Casts every floating-point parameter and buffer to `dtype`: a serving
  // copy in bf16 (policies/serving_weights.h). Unimplemented where the
  // policy is served only in its own precision.
  virtual absl::Status ToDtype(at::ScalarType dtype) = 0;
  virtual at::Device device() const = 0;
  // A deep copy with gradients off, reporting `version`: the inference
  // server's snapshot, unaffected by later optimizer steps.
  virtual std::shared_ptr<TrainablePolicy> Snapshot(uint64_t version) = 0;
  // Instruction tokens the policy reads per observation.
  virtual int64_t max_text_len() const = 0;
  // Sets every action dimension's sampling temperature (Unimplemented where
  // the policy has no such parameter).
  virtual absl::Status SetActionTemperature(double temperature) = 0;
  // What a weight update carries. `kind()` names the architecture on the
  // wire ("tiny_vla", "torchscript"); State() is every parameter and buffer by
  // dotted name, in a fixed order, sharing storage with the policy (detached);
  // LoadState copies `state` in: every name must match one of ours with the
  // same shape and dtype and every one of ours must be given, else
  // InvalidArgument naming the first mismatch (nothing partial is kept
  // meaningful: load into a Snapshot, publish only on OK).
  using NamedTensors = std::vector<std::pair<std::string, at::Tensor>>;
  virtual const char* kind() const = 0;
  virtual NamedTensors State() = 0;
  absl::Status LoadState(const NamedTensors& state);
  // Writes a checkpoint folder that LoadPolicyCheckpoint reads back.
  virtual absl::Status Save(const std::string& dir,
                            const TextTokenizer& tokenizer,
                            uint64_t version) = 0;
  // The interface the policy declares (policies/policy_interface.h);
  // nullopt for one of TinyVLA's fixed shape, whose image size is the run's.
  virtual std::optional<PolicyInterface> declared_interface() const {
    return std::nullopt;
  }

 protected:
  explicit TrainablePolicy(uint64_t version = 0) : version_(version) {}

 private:
  std::atomic<uint64_t> version_;
};

struct PolicyCheckpoint {
  std::shared_ptr<TrainablePolicy> policy;
  TextTokenizer tokenizer;
  uint64_t version = 0;
};

// A TinyVLA checkpoint (model.safetensors + model.json) or a TorchScript one
// (policy.pt + policy.json), whichever `dir` holds.
absl::StatusOr<PolicyCheckpoint> LoadPolicyCheckpoint(const std::string& dir);

}  // namespace rlvla3

#endif  // RLVLA3_POLICIES_TRAINABLE_POLICY_H_
