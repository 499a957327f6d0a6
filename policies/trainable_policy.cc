#include "policies/trainable_policy.h"

#include <torch/torch.h>

#include <filesystem>
#include <unordered_map>

#include "absl/strings/str_cat.h"
#include "policies/checkpoint.h"
#include "policies/tiny_vla_policy.h"
#include "policies/torchscript_policy.h"

namespace rlvla3 {

absl::Status TrainablePolicy::LoadState(const NamedTensors& state) {
  NamedTensors ours = State();
  std::unordered_map<std::string, const at::Tensor*> given;
  for (const auto& [name, t] : state) given[name] = &t;
  if (given.size() != ours.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("weights: ", state.size(), " tensors given, the ", kind(),
                     " policy has ", ours.size()));
  }
  for (const auto& [name, t] : ours) {
    auto it = given.find(name);
    if (it == given.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("weights: no tensor '", name, "'"));
    }
    const at::Tensor& g = *it->second;
    if (g.sizes() != t.sizes() || g.scalar_type() != t.scalar_type()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "weights: '", name, "' is ", c10::str(g.sizes()), " ",
          c10::toString(g.scalar_type()), ", the policy's is ",
          c10::str(t.sizes()), " ", c10::toString(t.scalar_type())));
    }
  }
  torch::NoGradGuard no_grad;
  for (auto& [name, t] : ours) t.copy_(*given[name]);
  return absl::OkStatus();
}

absl::StatusOr<PolicyCheckpoint> LoadPolicyCheckpoint(const std::string& dir) {
  if (std::filesystem::exists(dir + "/policy.json")) {
    return TorchScriptPolicy::LoadCheckpoint(dir);
  }
  absl::StatusOr<LoadedCheckpoint> ck = rlvla3::LoadCheckpoint(dir);
  if (!ck.ok()) return ck.status();
  PolicyCheckpoint c;
  c.policy = std::make_shared<TinyVLAPolicy>(ck->net, ck->version);
  c.tokenizer = ck->tokenizer;
  c.version = ck->version;
  return c;
}

}  // namespace rlvla3
