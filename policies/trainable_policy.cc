#include "policies/trainable_policy.h"

#include <filesystem>

#include "policies/checkpoint.h"
#include "policies/tiny_vla_policy.h"
#include "policies/torchscript_policy.h"

namespace rlvla3 {

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
