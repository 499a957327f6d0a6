#include "policies/torchscript_policy.h"

#include <torch/script.h>
#include <torch/torch.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "policies/device.h"
#include "policies/instruction_encoder.h"
#include "policies/tiny_vla_policy.h"
#include "runtime/text_file.h"

namespace rlvla3 {

struct TorchScriptPolicy::Module {
  torch::jit::script::Module m;
};

TorchScriptPolicy::~TorchScriptPolicy() = default;

namespace {

// A <stem>.interface.json larger than this is not a declaration.
constexpr uint64_t kMaxManifestBytes = uint64_t{1} << 20;

// <stem>.interface.json beside <stem>.pt.
std::string ManifestPath(const std::string& pt) {
  const std::filesystem::path p(pt);
  return (p.parent_path() / (p.stem().string() + ".interface.json")).string();
}

// A SentencePiece model named relative to the declaration: relative to the
// folder of the .pt (where its manifest lies too).
void ResolveModel(const std::string& pt, PolicyInterface* i) {
  std::string& model = i->instruction.model;
  if (model.empty() || std::filesystem::path(model).is_absolute()) return;
  model = (std::filesystem::path(pt).parent_path() / model)
              .lexically_normal()
              .string();
}

// The declaration of module `m` loaded from `path`: its manifest, its
// interface() method, or both when they agree.
absl::StatusOr<std::optional<PolicyInterface>> DeclarationOf(
    torch::jit::script::Module& m, const std::string& path) {
  std::optional<PolicyInterface> from_file, from_method;
  const std::string manifest = ManifestPath(path);
  std::error_code ec;
  if (std::filesystem::exists(manifest, ec)) {
    absl::StatusOr<std::string> text =
        ReadBoundedFile(manifest, kMaxManifestBytes);
    if (!text.ok()) return text.status();
    absl::StatusOr<PolicyInterface> i = ParsePolicyInterface(*text, manifest);
    if (!i.ok()) return i.status();
    ResolveModel(path, &*i);
    from_file = *std::move(i);
  }
  const std::string method_origin = path + ": interface()";
  if (m.find_method("interface").has_value()) {
    std::string text;
    try {
      text = m.get_method("interface")({}).toStringRef();
    } catch (const c10::Error& e) {
      return absl::InvalidArgumentError(absl::StrCat(
          method_origin,
          ": failed or returned no str: ", e.what_without_backtrace()));
    }
    absl::StatusOr<PolicyInterface> i =
        ParsePolicyInterface(text, method_origin);
    if (!i.ok()) return i.status();
    ResolveModel(path, &*i);
    from_method = *std::move(i);
  }
  // The manifest names where the tokenizer lies now (a checkpoint copies it
  // beside itself); the method may still name where it lay at export.
  if (from_file && from_method && !from_file->instruction.model.empty() &&
      !from_method->instruction.model.empty()) {
    from_method->instruction.model = from_file->instruction.model;
  }
  if (from_file && from_method && !(*from_file == *from_method)) {
    return absl::InvalidArgumentError(absl::StrCat(
        manifest, " and ", method_origin,
        " declare different interfaces (keep one, or make them equal): ",
        PolicyInterfaceJson(*from_file), " vs ",
        PolicyInterfaceJson(*from_method)));
  }
  return from_method ? from_method : from_file;
}

// Camera c of the batch, [B, H, W, 3] contiguous (a module may view it).
at::Tensor Camera(const PolicyInput& in, int64_t c) {
  return in.images.select(1, c).contiguous();
}

}  // namespace

absl::StatusOr<std::optional<PolicyInterface>>
TorchScriptPolicy::ReadDeclaration(const std::string& path) {
  torch::jit::script::Module m;
  try {
    m = torch::jit::load(path);
  } catch (const c10::Error& e) {
    return absl::InvalidArgumentError(absl::StrCat(
        path,
        ": not a loadable TorchScript module: ", e.what_without_backtrace()));
  }
  return DeclarationOf(m, path);
}

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
  absl::StatusOr<std::optional<PolicyInterface>> declared =
      DeclarationOf(p->module_->m, path);
  if (!declared.ok()) return declared.status();
  if (declared->has_value()) {
    if (absl::Status s = p->Declare(**declared, path); !s.ok()) return s;
  } else {
    for (const char* method : {"act", "evaluate"}) {
      if (!p->module_->m.find_method(method).has_value()) {
        return absl::InvalidArgumentError(absl::StrCat(
            path, ": TorchScript policy has no '", method,
            "' method (expected act(agentview, wrist, proprio, text, "
            "text_len, greedy) and evaluate(agentview, wrist, proprio, text, "
            "text_len, tokens), or a declared interface and heads())"));
      }
    }
  }
  p->module_->m.eval();
  if (absl::Status s = p->Probe(path); !s.ok()) return s;
  return p;
}

absl::Status TorchScriptPolicy::Declare(const PolicyInterface& declared,
                                        const std::string& path) {
  if (!module_->m.find_method("heads").has_value()) {
    return absl::InvalidArgumentError(absl::StrCat(
        path,
        ": declares its interface but has no 'heads' method (expected "
        "heads(images, proprio, text, text_len) -> (params, values))"));
  }
  absl::StatusOr<std::unique_ptr<ActionHead>> head =
      MakeActionHead(declared.action);
  if (!head.ok()) return head.status();
  // The tokenizer it ships must load now, not when the run starts.
  if (absl::StatusOr<InstructionEncoder> e =
          InstructionEncoder::Make(declared.instruction, TextTokenizer());
      !e.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": instruction.model: ", e.status().message()));
  }
  source_dir_ = std::filesystem::path(path).parent_path().string();
  head_ = *std::move(head);
  interface_ = declared;
  chunk_ = static_cast<int>(declared.chunk);
  max_text_len_ = declared.instruction.max_len;
  return absl::OkStatus();
}

void TorchScriptPolicy::Heads(const std::vector<at::Tensor>& images,
                              const PolicyInput& in, at::Tensor* params,
                              at::Tensor* values) {
  auto out =
      module_->m
          .get_method("heads")({c10::List<at::Tensor>(images),
                                in.proprio.narrow(1, 0, interface_->proprio),
                                in.text, ToDevice(in.text_len, device_)})
          .toTuple();
  *params = out->elements()[0].toTensor();
  *values = out->elements()[1].toTensor();
  if (temperature_ != 1.0 && head_ != nullptr) {
    *params = head_->Temper(*params, temperature_);
  }
}

std::vector<at::Tensor> TorchScriptPolicy::CameraImages(
    const PolicyInput& in) const {
  const int64_t C = static_cast<int64_t>(interface_->cameras.size());
  TORCH_CHECK(in.images.dim() == 5 && in.images.size(1) == C, "images ",
              in.images.sizes(), ": the policy declares ", C,
              " cameras ([B, C, H, W, 3] in its order)");
  std::vector<at::Tensor> images;
  for (int64_t c = 0; c < C; ++c) images.push_back(Camera(in, c));
  return images;
}

ActResult TorchScriptPolicy::Act(const PolicyInput& in, bool greedy) {
  torch::NoGradGuard no_grad;
  const uint64_t version = this->version();
  ActResult r;
  r.version = version;
  if (interface_) {
    at::Tensor params;
    Heads(CameraImages(in), in, &params, &r.values);
    head_->Sample(params, greedy, &r.tokens, &r.log_probs);
    r.actions = head_->ToControl(r.tokens);
    return r;
  }
  auto out =
      module_->m
          .get_method("act")({Camera(in, 0), Camera(in, 1), in.proprio, in.text,
                              ToDevice(in.text_len, device_), greedy})
          .toTuple();
  r.tokens = out->elements()[0].toTensor();
  r.log_probs = out->elements()[1].toTensor();
  r.values = out->elements()[2].toTensor();
  r.actions = TinyVLAPolicy::TokensToActions(r.tokens, bins_);
  return r;
}

EvalResult TorchScriptPolicy::Evaluate(const PolicyInput& in,
                                       const at::Tensor& tokens) {
  EvalResult e;
  if (interface_) {
    at::Tensor params;
    Heads(CameraImages(in), in, &params, &e.values);
    head_->Evaluate(params, tokens, &e.log_probs, &e.entropy);
    return e;
  }
  auto out = module_->m
                 .get_method("evaluate")(
                     {Camera(in, 0), Camera(in, 1), in.proprio, in.text,
                      ToDevice(in.text_len, device_), tokens})
                 .toTuple();
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
  if (interface_) {
    at::Tensor params, values;
    Heads(CameraImages(in), in, &params, &values);
    return values;
  }
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
  p->interface_ = interface_;
  p->head_ = head_;
  p->source_dir_ = source_dir_;
  p->temperature_ = temperature_;
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

absl::Status TorchScriptPolicy::SetActionTemperature(double temperature) {
  if (!interface_) {
    return absl::UnimplementedError(
        "a TorchScript policy without a declared interface samples at its own "
        "temperature (rl.init_action_temperature must be 0)");
  }
  if (!(temperature > 0) || !std::isfinite(temperature)) {
    return absl::InvalidArgumentError(
        absl::StrCat("temperature ", temperature, ": positive and finite"));
  }
  temperature_ = temperature;
  return absl::OkStatus();
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
  nlohmann::json side = {{"format", kFormat},
                         {"policy_version", version},
                         {"max_text_len", max_text_len_},
                         {"tokenizer", {{"words", tokenizer.words()}}}};
  // Bins only where the policy has them: an undeclared module's, or a
  // declared bins head's (a Gaussian head has none).
  if (!interface_ || interface_->action.kind == ActionKind::kBins) {
    side["bins"] = bins_;
  }
  if (interface_) {
    side["action_temperature"] = temperature_;
    if (absl::Status s = SaveDeclaration(dir); !s.ok()) return s;
  }
  return WriteTextFile(dir + "/policy.json", side.dump(2) + "\n");
}

// policy.interface.json, with a SentencePiece model beside the policy copied
// in at the same relative path (one elsewhere stays named by its path).
absl::Status TorchScriptPolicy::SaveDeclaration(const std::string& dir) const {
  PolicyInterface saved = *interface_;
  std::string& model = saved.instruction.model;
  if (!model.empty()) {
    std::error_code abs_ec;
    const std::filesystem::path rel =
        std::filesystem::absolute(model, abs_ec)
            .lexically_normal()
            .lexically_relative(std::filesystem::absolute(source_dir_, abs_ec)
                                    .lexically_normal());
    if (!rel.empty() && *rel.begin() != "..") {
      const std::filesystem::path to = std::filesystem::path(dir) / rel;
      std::error_code ec;
      std::filesystem::create_directories(to.parent_path(), ec);
      if (!ec && std::filesystem::absolute(model, ec) !=
                     std::filesystem::absolute(to, ec)) {
        std::filesystem::copy_file(
            model, to, std::filesystem::copy_options::overwrite_existing, ec);
      }
      if (ec) {
        return absl::InternalError(absl::StrCat(
            "cannot copy ", model, " to ", to.string(), ": ", ec.message()));
      }
      model = rel.string();
    }
  }
  return WriteTextFile(dir + "/policy.interface.json",
                       PolicyInterfaceJson(saved));
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
        Load(dir + "/policy.pt",
             side.contains("bins") ? side.at("bins").get<int64_t>() : 256,
             side.at("max_text_len").get<int64_t>());
    if (!p.ok()) return p.status();
    (*p)->set_version(c.version);
    // A declared policy samples at the temperature it was trained at.
    if (side.contains("action_temperature")) {
      if (absl::Status s = (*p)->SetActionTemperature(
              side.at("action_temperature").get<double>());
          !s.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat(json_path, ": action_temperature: ", s.message()));
      }
    }
    c.policy = std::shared_ptr<TrainablePolicy>(std::move(*p));
  } catch (const nlohmann::json::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(json_path, ": ", e.what()));
  }
  return c;
}

}  // namespace rlvla3
