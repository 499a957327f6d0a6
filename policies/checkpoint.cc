#include "policies/checkpoint.h"

#include <torch/torch.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "policies/safetensors.h"

namespace rlvla3 {
namespace {

constexpr char kFormat[] = "rl-vla3/tinyvla/v1";

nlohmann::json OptionsToJson(const TinyVLAOptions& o) {
  return {{"vocab_size", o.vocab_size()},
          {"max_text_len", o.max_text_len()},
          {"d_model", o.d_model()},
          {"heads", o.heads()},
          {"layers", o.layers()},
          {"mlp_ratio", o.mlp_ratio()},
          {"patch", o.patch()},
          {"stem_channels", o.stem_channels()},
          {"grid", o.grid()},
          {"chunk", o.chunk()},
          {"bins", o.bins()},
          {"action_dim", o.action_dim()},
          {"proprio_dim", o.proprio_dim()},
          {"value_detach", o.value_detach()}};
}

TinyVLAOptions OptionsFromJson(const nlohmann::json& j) {
  TinyVLAOptions o;
  o.vocab_size(j.at("vocab_size").get<int64_t>());
  o.max_text_len(j.at("max_text_len").get<int64_t>());
  o.d_model(j.at("d_model").get<int64_t>());
  o.heads(j.at("heads").get<int64_t>());
  o.layers(j.at("layers").get<int64_t>());
  o.mlp_ratio(j.at("mlp_ratio").get<int64_t>());
  o.patch(j.at("patch").get<int64_t>());
  o.stem_channels(j.at("stem_channels").get<int64_t>());
  o.grid(j.at("grid").get<int64_t>());
  o.chunk(j.at("chunk").get<int64_t>());
  o.bins(j.at("bins").get<int64_t>());
  o.action_dim(j.at("action_dim").get<int64_t>());
  o.proprio_dim(j.at("proprio_dim").get<int64_t>());
  o.value_detach(j.value("value_detach", true));
  return o;
}

}  // namespace

absl::Status SaveCheckpoint(const std::string& dir, TinyVLA& net,
                            const TextTokenizer& tokenizer, uint64_t version) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return absl::UnavailableError(absl::StrCat(dir, ": ", ec.message()));
  std::vector<std::pair<std::string, at::Tensor>> tensors;
  for (const auto& p : net->named_parameters())
    tensors.emplace_back(p.key(), p.value());
  for (const auto& b : net->named_buffers())
    tensors.emplace_back(b.key(), b.value());
  if (absl::Status s = WriteSafetensors(
          dir + "/model.safetensors", tensors,
          {{"format", kFormat}, {"version", std::to_string(version)}});
      !s.ok()) {
    return s;
  }
  nlohmann::json side = {{"format", kFormat},
                         {"policy_version", version},
                         {"options", OptionsToJson(net->options())},
                         {"tokenizer", {{"words", tokenizer.words()}}}};
  std::ofstream out(dir + "/model.json", std::ios::trunc);
  out << side.dump(2) << "\n";
  out.close();
  if (!out)
    return absl::UnavailableError(
        absl::StrCat("cannot write ", dir, "/model.json"));
  return absl::OkStatus();
}

absl::StatusOr<LoadedCheckpoint> LoadCheckpoint(const std::string& dir) {
  const std::string json_path = dir + "/model.json";
  std::ifstream in(json_path);
  if (!in)
    return absl::NotFoundError(absl::StrCat(json_path, ": cannot open file"));
  std::stringstream ss;
  ss << in.rdbuf();
  nlohmann::json side =
      nlohmann::json::parse(ss.str(), nullptr, /*allow_exceptions=*/false);
  if (side.is_discarded())
    return absl::InvalidArgumentError(absl::StrCat(json_path, ": not JSON"));
  LoadedCheckpoint c;
  try {
    if (side.at("format").get<std::string>() != kFormat) {
      return absl::InvalidArgumentError(
          absl::StrCat(json_path, ": format is not ", kFormat));
    }
    c.version = side.at("policy_version").get<uint64_t>();
    absl::StatusOr<TextTokenizer> tok = TextTokenizer::FromWords(
        side.at("tokenizer").at("words").get<std::vector<std::string>>());
    if (!tok.ok())
      return absl::InvalidArgumentError(
          absl::StrCat(json_path, ": ", tok.status().message()));
    c.tokenizer = *std::move(tok);
    c.net = TinyVLA(OptionsFromJson(side.at("options")));
  } catch (const nlohmann::json::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(json_path, ": ", e.what()));
  }
  const std::string weights_path = dir + "/model.safetensors";
  absl::StatusOr<SafetensorsFile> f = ReadSafetensors(weights_path);
  if (!f.ok()) return f.status();
  std::map<std::string, at::Tensor> own;
  for (const auto& p : c.net->named_parameters()) own[p.key()] = p.value();
  for (const auto& b : c.net->named_buffers()) own[b.key()] = b.value();
  std::set<std::string> seen;
  torch::NoGradGuard no_grad;
  for (const auto& [name, t] : f->tensors) {
    auto it = own.find(name);
    if (it == own.end()) {
      return absl::InvalidArgumentError(absl::StrCat(
          weights_path, ": tensor ", name, " is not a parameter of TinyVLA"));
    }
    if (it->second.sizes() != t.sizes() ||
        it->second.scalar_type() != t.scalar_type()) {
      return absl::InvalidArgumentError(
          absl::StrCat(weights_path, ": tensor ", name,
                       " does not match the parameter's shape"));
    }
    it->second.copy_(t);
    seen.insert(name);
  }
  for (const auto& [name, t] : own) {
    if (seen.count(name) == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(weights_path, ": parameter ", name, " missing"));
    }
  }
  return c;
}

}  // namespace rlvla3
