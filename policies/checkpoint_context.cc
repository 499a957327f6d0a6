#include "policies/checkpoint_context.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "absl/strings/str_cat.h"

namespace rlvla3 {
namespace {

constexpr char kFormat[] = "rl-vla3/context/v1";

// The instruction model named by `dir`'s policy.interface.json (a
// TorchScript policy's saved declaration); NotFound when it has none.
absl::StatusOr<std::string> SavedTokenizerModel(const std::string& dir) {
  const std::string path = dir + "/policy.interface.json";
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(path);
  std::stringstream text;
  text << in.rdbuf();
  absl::StatusOr<PolicyInterface> i = ParsePolicyInterface(text.str(), path);
  if (!i.ok()) return i.status();
  return i->instruction.model;
}

}  // namespace

absl::Status WriteCheckpointContext(const std::string& dir,
                                    const CheckpointContext& c) {
  if (c.image_width <= 0) return absl::OkStatus();
  nlohmann::json j = {{"format", kFormat},
                      {"image_width", c.image_width},
                      {"image_height", c.image_height},
                      {"cameras", c.cameras},
                      {"chunk", c.chunk},
                      {"execute_steps", c.execute_steps},
                      {"tasks", c.tasks},
                      {"expert_steps", c.expert_steps}};
  if (c.interface) {
    PolicyInterface saved = *c.interface;
    // The tokenizer model the checkpoint loads: the declaration the policy
    // saved beside its weights names it (its own copy), not the path the
    // run was started with.
    if (!saved.instruction.model.empty()) {
      absl::StatusOr<std::string> model = SavedTokenizerModel(dir);
      if (model.ok()) saved.instruction.model = *std::move(model);
    }
    j["interface"] = nlohmann::json::parse(PolicyInterfaceJson(saved));
  }
  const std::string path = absl::StrCat(dir, "/", kCheckpointContextFile);
  std::ofstream out(path, std::ios::trunc);
  out << j.dump(2) << "\n";
  out.close();
  if (!out) return absl::UnavailableError(absl::StrCat("cannot write ", path));
  return absl::OkStatus();
}

absl::StatusOr<std::optional<CheckpointContext>> ReadCheckpointContext(
    const std::string& dir) {
  const std::string path = absl::StrCat(dir, "/", kCheckpointContextFile);
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return std::nullopt;
  std::ifstream in(path);
  if (!in) {
    return absl::UnavailableError(absl::StrCat(path, ": cannot open file"));
  }
  std::stringstream text;
  text << in.rdbuf();
  const nlohmann::json j =
      nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": not a JSON object"));
  }
  CheckpointContext c;
  try {
    if (j.at("format").get<std::string>() != kFormat) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": format is not ", kFormat));
    }
    c.image_width = j.at("image_width").get<int64_t>();
    c.image_height = j.at("image_height").get<int64_t>();
    c.cameras = j.at("cameras").get<std::vector<std::string>>();
    c.chunk = j.at("chunk").get<int64_t>();
    c.execute_steps = j.at("execute_steps").get<int64_t>();
    c.tasks = j.at("tasks").get<std::vector<std::string>>();
    // Absent in checkpoints written before it was recorded.
    c.expert_steps = j.value("expert_steps", int64_t{0});
    if (j.contains("interface")) {
      absl::StatusOr<PolicyInterface> i =
          ParsePolicyInterface(j.at("interface").dump(), path + " interface");
      if (!i.ok()) return i.status();
      c.interface = *std::move(i);
    }
  } catch (const nlohmann::json::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", e.what()));
  }
  if (c.image_width <= 0 || c.image_height <= 0 || c.chunk <= 0 ||
      c.execute_steps <= 0 || c.expert_steps < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(path,
                     ": image size, chunk and execute_steps must be positive, "
                     "expert_steps not negative"));
  }
  return c;
}

}  // namespace rlvla3
