#include "policies/torchscript_policy.h"

#include <torch/script.h>
#include <torch/torch.h>

#include "absl/strings/str_cat.h"
#include "policies/tiny_vla_policy.h"

namespace rlvla3 {

struct TorchScriptPolicy::Module {
  torch::jit::script::Module m;
};

TorchScriptPolicy::~TorchScriptPolicy() = default;

absl::StatusOr<std::unique_ptr<TorchScriptPolicy>> TorchScriptPolicy::Load(
    const std::string& path, int64_t bins) {
  std::unique_ptr<TorchScriptPolicy> p(new TorchScriptPolicy);
  p->bins_ = bins;
  p->module_ = std::make_unique<Module>();
  try {
    p->module_->m = torch::jit::load(path);
  } catch (const c10::Error& e) {
    return absl::InvalidArgumentError(absl::StrCat(
        path,
        ": not a loadable TorchScript module: ", e.what_without_backtrace()));
  }
  for (const char* method : {"act", "evaluate"}) {
    if (!p->module_->m.find_method(method).has_value()) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, ": TorchScript policy has no '", method,
          "' method (expected act(agentview, wrist, proprio, text, text_len, "
          "greedy) and "
          "evaluate(agentview, wrist, proprio, text, text_len, tokens))"));
    }
  }
  p->module_->m.eval();
  // The chunk length K, from a probe call with one blank observation.
  PolicyInput probe;
  probe.agentview = torch::zeros({1, 8, 8, 3}, torch::kByte);
  probe.wrist = torch::zeros({1, 8, 8, 3}, torch::kByte);
  probe.proprio = torch::zeros({1, 8});
  probe.text = torch::zeros({1, 1}, torch::kLong);
  probe.text_len = torch::ones({1}, torch::kLong);
  try {
    ActResult r = p->Act(probe, true);
    if (r.tokens.dim() != 3 || r.tokens.size(2) != 7) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": act() must return tokens of shape [B, K, 7]"));
    }
    p->chunk_ = static_cast<int>(r.tokens.size(1));
  } catch (const c10::Error& e) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": act() failed on a probe batch: ", e.what_without_backtrace()));
  }
  return p;
}

ActResult TorchScriptPolicy::Act(const PolicyInput& in, bool greedy) {
  torch::NoGradGuard no_grad;
  const uint64_t version = this->version();
  auto out = module_->m
                 .get_method("act")({in.agentview, in.wrist, in.proprio,
                                     in.text, in.text_len, greedy})
                 .toTuple();
  ActResult r;
  r.tokens = out->elements()[0].toTensor();
  r.log_probs = out->elements()[1].toTensor();
  r.values = out->elements()[2].toTensor();
  r.actions = TinyVLAPolicy::TokensToActions(r.tokens, bins_);
  r.version = version;
  return r;
}

EvalResult TorchScriptPolicy::Evaluate(const PolicyInput& in,
                                       const at::Tensor& tokens) {
  auto out = module_->m
                 .get_method("evaluate")({in.agentview, in.wrist, in.proprio,
                                          in.text, in.text_len, tokens})
                 .toTuple();
  EvalResult e;
  e.log_probs = out->elements()[0].toTensor();
  e.entropy = out->elements()[1].toTensor();
  e.values = out->elements()[2].toTensor();
  return e;
}

}  // namespace rlvla3
