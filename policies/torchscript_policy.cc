#include "policies/torchscript_policy.h"

#include <torch/script.h>
#include <torch/torch.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "policies/device.h"
#include "policies/tiny_vla_policy.h"

namespace rlvla3 {

struct TorchScriptPolicy::Module {
  torch::jit::script::Module m;
};

TorchScriptPolicy::~TorchScriptPolicy() = default;

absl::StatusOr<std::unique_ptr<TorchScriptPolicy>> TorchScriptPolicy::Load(
    const std::string& path, int64_t bins, int64_t max_text_len) {
  std::unique_ptr<TorchScriptPolicy> p(new TorchScriptPolicy);
  p->bins_ = bins;
  p->max_text_len_ = max_text_len;
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
  auto out =
      module_->m
          .get_method("act")({in.agentview, in.wrist, in.proprio, in.text,
                              ToDevice(in.text_len, device_), greedy})
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
  auto out =
      module_->m
          .get_method("evaluate")({in.agentview, in.wrist, in.proprio, in.text,
                                   ToDevice(in.text_len, device_), tokens})
          .toTuple();
  EvalResult e;
  e.log_probs = out->elements()[0].toTensor();
  e.entropy = out->elements()[1].toTensor();
  e.values = out->elements()[2].toTensor();
  return e;
}

namespace {
constexpr char kFormat[] = "rl-vla3/torchscript/v1";
}  // namespace

TrainablePolicy::ParameterGroups TorchScriptPolicy::Parameters() {
  ParameterGroups g;
  for (const auto& p : module_->m.named_parameters(/*recurse=*/true)) {
    if (!p.value.requires_grad()) continue;
    (absl::StartsWith(p.name, "value_head.") ? g.value : g.weights)
        .push_back(p.value);
  }
  return g;
}

at::Tensor TorchScriptPolicy::Values(const PolicyInput& in) {
  torch::NoGradGuard no_grad;
  const at::Tensor tokens =
      torch::zeros({in.proprio.size(0), chunk_, 7},
                   torch::TensorOptions(torch::kLong).device(device_));
  return Evaluate(in, tokens).values;
}

void TorchScriptPolicy::SetTraining(bool training) {
  module_->m.train(training);
}

void TorchScriptPolicy::To(const at::Device& device) {
  module_->m.to(device);
  device_ = device;
}

absl::Status TorchScriptPolicy::ToDtype(at::ScalarType dtype) {
  // A user's module may compute in its parameters' type in ways it never
  // meant for bf16: it is served as it is (under autocast where asked).
  return absl::UnimplementedError(
      absl::StrCat("a TorchScript policy is served in its own precision, not ",
                   c10::toString(dtype)));
}

at::Device TorchScriptPolicy::device() const { return device_; }

std::shared_ptr<TrainablePolicy> TorchScriptPolicy::Snapshot(uint64_t version) {
  std::shared_ptr<TorchScriptPolicy> p(new TorchScriptPolicy);
  p->module_ = std::make_unique<Module>();
  p->module_->m = module_->m.clone();
  p->module_->m.eval();
  for (at::Tensor t : p->module_->m.parameters()) t.set_requires_grad(false);
  p->bins_ = bins_;
  p->chunk_ = chunk_;
  p->max_text_len_ = max_text_len_;
  p->device_ = device_;
  p->set_version(version);
  return p;
}

TrainablePolicy::NamedTensors TorchScriptPolicy::State() {
  NamedTensors out;
  for (const auto& p : module_->m.named_parameters(/*recurse=*/true)) {
    out.emplace_back(p.name, p.value.detach());
  }
  for (const auto& b : module_->m.named_buffers(/*recurse=*/true)) {
    out.emplace_back(b.name, b.value.detach());
  }
  return out;
}

absl::Status TorchScriptPolicy::SetActionTemperature(double) {
  return absl::UnimplementedError(
      "a TorchScript policy samples at its own temperature "
      "(rl.init_action_temperature applies to TinyVLA only)");
}

absl::Status TorchScriptPolicy::Save(const std::string& dir,
                                     const TextTokenizer& tokenizer,
                                     uint64_t version) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    return absl::InternalError(
        absl::StrCat("cannot create ", dir, ": ", ec.message()));
  }
  try {
    module_->m.save(dir + "/policy.pt");
  } catch (const c10::Error& e) {
    return absl::InternalError(absl::StrCat(
        dir, "/policy.pt: write failed: ", e.what_without_backtrace()));
  }
  const nlohmann::json side = {{"format", kFormat},
                               {"policy_version", version},
                               {"max_text_len", max_text_len_},
                               {"bins", bins_},
                               {"tokenizer", {{"words", tokenizer.words()}}}};
  const std::string json_path = dir + "/policy.json";
  std::ofstream out(json_path, std::ios::trunc);
  out << side.dump(2) << "\n";
  out.flush();
  if (!out) return absl::InternalError(json_path + ": write failed");
  return absl::OkStatus();
}

absl::StatusOr<PolicyCheckpoint> TorchScriptPolicy::LoadCheckpoint(
    const std::string& dir) {
  const std::string json_path = dir + "/policy.json";
  std::ifstream in(json_path);
  if (!in) return absl::NotFoundError(json_path + ": cannot open file");
  std::stringstream ss;
  ss << in.rdbuf();
  const nlohmann::json side =
      nlohmann::json::parse(ss.str(), nullptr, /*allow_exceptions=*/false);
  if (side.is_discarded() || side.value("format", "") != kFormat) {
    return absl::InvalidArgumentError(
        absl::StrCat(json_path, ": not a ", kFormat, " sidecar"));
  }
  PolicyCheckpoint c;
  try {
    c.version = side.at("policy_version").get<uint64_t>();
    absl::StatusOr<TextTokenizer> tok = TextTokenizer::FromWords(
        side.at("tokenizer").at("words").get<std::vector<std::string>>());
    if (!tok.ok()) return tok.status();
    c.tokenizer = *std::move(tok);
    absl::StatusOr<std::unique_ptr<TorchScriptPolicy>> p =
        Load(dir + "/policy.pt", side.at("bins").get<int64_t>(),
             side.at("max_text_len").get<int64_t>());
    if (!p.ok()) return p.status();
    (*p)->set_version(c.version);
    c.policy = std::shared_ptr<TrainablePolicy>(std::move(*p));
  } catch (const nlohmann::json::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(json_path, ": ", e.what()));
  }
  return c;
}

}  // namespace rlvla3
