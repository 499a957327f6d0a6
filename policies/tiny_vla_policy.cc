#include "policies/tiny_vla_policy.h"

#include <torch/torch.h>

#include <cmath>

#include "absl/strings/match.h"
#include "policies/checkpoint.h"

namespace rlvla3 {

TinyVLAPolicy::TinyVLAPolicy(TinyVLA net, uint64_t version,
                             bool packed_evaluate)
    : TrainablePolicy(version),
      net_(std::move(net)),
      packed_evaluate_(packed_evaluate) {}

void TinyVLAPolicy::LogProbs(const at::Tensor& logits, const at::Tensor& tokens,
                             at::Tensor* log_probs, at::Tensor* entropy) {
  at::Tensor logp = torch::log_softmax(logits, -1);  // [B, K, A, bins]
  if (log_probs != nullptr) {
    *log_probs =
        logp.gather(-1, tokens.unsqueeze(-1)).squeeze(-1).sum(-1);  // [B, K]
  }
  if (entropy != nullptr) *entropy = -(logp.exp() * logp).sum(-1).sum(-1);
}

at::Tensor TinyVLAPolicy::TokensToActions(const at::Tensor& tokens,
                                          int64_t bins) {
  return tokens.to(at::kFloat)
      .add(0.5)
      .mul(2.0 / static_cast<double>(bins))
      .sub(1.0);
}

TrainablePolicy::ParameterGroups TinyVLAPolicy::Parameters() {
  ParameterGroups g;
  for (const auto& p : net_->named_parameters()) {
    if (absl::StartsWith(p.key(), "value_head.")) {
      g.value.push_back(p.value());
    } else if (p.key() == "action_log_scale") {
      g.action_scale.push_back(p.value());
    } else {
      g.weights.push_back(p.value());
    }
  }
  return g;
}

at::Tensor TinyVLAPolicy::Values(const PolicyInput& in) {
  torch::NoGradGuard no_grad;
  return net_->forward(in, /*packed=*/true).values;
}

void TinyVLAPolicy::SetTraining(bool training) { net_->train(training); }

void TinyVLAPolicy::To(const at::Device& device) { net_->to(device); }

absl::Status TinyVLAPolicy::ToDtype(at::ScalarType dtype) {
  net_->to(dtype);  // floating-point parameters and buffers only
  return absl::OkStatus();
}

at::Device TinyVLAPolicy::device() const {
  return net_->parameters().front().device();
}

std::shared_ptr<TrainablePolicy> TinyVLAPolicy::Snapshot(uint64_t version) {
  auto copy = std::dynamic_pointer_cast<TinyVLAImpl>(net_->clone());
  copy->eval();
  for (auto& p : copy->parameters()) p.set_requires_grad(false);
  return std::make_shared<TinyVLAPolicy>(TinyVLA(copy), version,
                                         packed_evaluate_);
}

TrainablePolicy::NamedTensors TinyVLAPolicy::State() {
  NamedTensors out;
  for (const auto& p : net_->named_parameters()) {
    out.emplace_back(p.key(), p.value().detach());
  }
  for (const auto& b : net_->named_buffers()) {
    out.emplace_back(b.key(), b.value().detach());
  }
  return out;
}

absl::Status TinyVLAPolicy::SetActionTemperature(double temperature) {
  if (!(temperature > 0)) {
    return absl::InvalidArgumentError("action temperature must be > 0");
  }
  torch::NoGradGuard no_grad;
  net_->named_parameters()["action_log_scale"].fill_(-std::log(temperature));
  return absl::OkStatus();
}

absl::Status TinyVLAPolicy::Save(const std::string& dir,
                                 const TextTokenizer& tokenizer,
                                 uint64_t version) {
  return SaveCheckpoint(dir, net_, tokenizer, version);
}

ActResult TinyVLAPolicy::Act(const PolicyInput& in, bool greedy) {
  torch::NoGradGuard no_grad;
  const uint64_t version = this->version();
  TinyVLAOutput out = net_->forward(in, /*packed=*/false);
  const auto sizes = out.logits.sizes();
  ActResult r;
  if (greedy) {
    r.tokens = out.logits.argmax(-1);
  } else {
    at::Tensor probs = torch::softmax(out.logits, -1).reshape({-1, sizes[3]});
    r.tokens =
        torch::multinomial(probs, 1).view({sizes[0], sizes[1], sizes[2]});
  }
  LogProbs(out.logits, r.tokens, &r.log_probs, nullptr);
  r.actions = TokensToActions(r.tokens, sizes[3]);
  r.values = out.values;
  r.version = version;
  return r;
}

EvalResult TinyVLAPolicy::Evaluate(const PolicyInput& in,
                                   const at::Tensor& tokens) {
  TinyVLAOutput out = net_->forward(in, packed_evaluate_);
  EvalResult e;
  LogProbs(out.logits, tokens, &e.log_probs, &e.entropy);
  e.values = out.values;
  return e;
}

void EncodeInstructionTable(const std::vector<std::string>& instructions,
                            const TextTokenizer& tokenizer, int64_t max_len,
                            at::Tensor* text, at::Tensor* lens) {
  const int64_t T = static_cast<int64_t>(instructions.size());
  *text = torch::zeros({T, max_len}, torch::kLong);
  *lens = torch::zeros({T}, torch::kLong);
  for (int64_t t = 0; t < T; ++t) {
    const std::vector<int64_t> ids =
        tokenizer.Encode(instructions[t], static_cast<size_t>(max_len));
    for (size_t j = 0; j < ids.size(); ++j) {
      text->data_ptr<int64_t>()[t * max_len + static_cast<int64_t>(j)] = ids[j];
    }
    lens->data_ptr<int64_t>()[t] = static_cast<int64_t>(ids.size());
  }
}

}  // namespace rlvla3
