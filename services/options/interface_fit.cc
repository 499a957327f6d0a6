#include "services/options/interface_fit.h"

#include <spdlog/spdlog.h>

#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "envs/sim_env.h"
#include "policies/torchscript_policy.h"
#include "runtime/config_schema.h"

namespace rlvla3 {
namespace {

// What the envs and rollouts carry that the declaration cannot change.
absl::Status CheckWhatTheEnvsGive(const PolicyInterface& p,
                                  const std::string& origin) {
  for (size_t i = 0; i < p.cameras.size(); ++i) {
    if (p.cameras[i].height != p.cameras[0].height ||
        p.cameras[i].width != p.cameras[0].width) {
      return ConfigError{
          origin, absl::StrCat("cameras[", i, "]"),
          absl::StrCat(p.cameras[i].height, "x", p.cameras[i].width),
          absl::StrCat(p.cameras[0].height, "x", p.cameras[0].width,
                       " like cameras[0]: the envs render "
                       "every camera at env.image_height x "
                       "env.image_width")}
          .ToStatus();
    }
  }
  if (p.proprio != 0 && p.proprio != kProprioDim) {
    return ConfigError{origin, "proprio", absl::StrCat(p.proprio),
                       absl::StrCat("0 (none) or ", kProprioDim,
                                    ", the proprio the envs give (ee_pos 3, "
                                    "ee_ori 3, gripper_states 2)")}
        .ToStatus();
  }
  if (p.action.size != kActionDim) {
    return ConfigError{origin, "action.size", absl::StrCat(p.action.size),
                       absl::StrCat(kActionDim,
                                    ", the envs' controller (dx dy dz, droll "
                                    "dpitch dyaw, gripper)")}
        .ToStatus();
  }
  return absl::OkStatus();
}

// env.cameras: the declared cameras, in the declared order (whether each
// scene has them is the env's check, where a task file's cameras are known).
absl::Status FitCameras(const PolicyInterface& p, const std::string& origin,
                        Config* c, std::vector<std::string>* adopted) {
  const std::vector<std::string> names = DeclaredCameraNames(p);
  if (EnvCameras(c->env) == names) return absl::OkStatus();
  const std::string declared = absl::StrJoin(names, ",");
  if (c->given.count("env.cameras") > 0) {
    return ConfigError{c->OriginOf("env.cameras"), "env.cameras",
                       c->env.cameras,
                       absl::StrCat(declared, ", the cameras policy ", origin,
                                    " declares, in its order; leave the key "
                                    "out to take them")}
        .ToStatus();
  }
  c->env.cameras = declared;
  adopted->push_back("env.cameras=" + declared);
  return absl::OkStatus();
}

}  // namespace

std::vector<std::string> DeclaredCameraNames(const PolicyInterface& p) {
  std::vector<std::string> names;
  for (const CameraSpec& cam : p.cameras) names.push_back(cam.name);
  return names;
}

absl::Status FitConfigToInterface(const PolicyInterface& p,
                                  const std::string& origin, Config* c) {
  if (absl::Status s = CheckWhatTheEnvsGive(p, origin); !s.ok()) return s;
  std::vector<std::string> adopted;
  if (absl::Status s = FitCameras(p, origin, c, &adopted); !s.ok()) return s;
  const CameraSpec& cam = p.cameras.front();
  const struct {
    const char* key;
    int64_t declared;
    int64_t* value;
    std::string field;
  } fits[] = {
      {"env.image_height", cam.height, &c->env.image_height,
       "cameras[0].height"},
      {"env.image_width", cam.width, &c->env.image_width, "cameras[0].width"},
      {"policy.chunk", p.chunk, &c->policy.chunk, "chunk"},
      {"policy.max_text_len", p.instruction.max_len, &c->policy.max_text_len,
       "instruction.max_len"},
  };
  for (const auto& f : fits) {
    if (*f.value == f.declared) continue;
    if (c->given.count(f.key) > 0) {
      return ConfigError{
          c->OriginOf(f.key), f.key, absl::StrCat(*f.value),
          absl::StrCat(f.declared, ", the ", f.field, " policy ", origin,
                       " declares; leave the key out to take "
                       "it")}
          .ToStatus();
    }
    *f.value = f.declared;
    adopted.push_back(absl::StrCat(f.key, "=", f.declared));
  }
  if (!adopted.empty()) {
    spdlog::info("{}: as the policy declares: {}", origin,
                 absl::StrJoin(adopted, " "));
  }
  return absl::OkStatus();
}

absl::Status FitConfigToUndeclared(const Config& c) {
  if (EnvCameras(c.env) == UndeclaredPolicyCameras()) return absl::OkStatus();
  return ConfigError{
      c.OriginOf("env.cameras"), "env.cameras", c.env.cameras,
      absl::StrCat(absl::StrJoin(UndeclaredPolicyCameras(), ","),
                   ": TinyVLA and an undeclared TorchScript policy read these "
                   "two cameras (a policy that reads others declares them, "
                   "docs/policies.md)")}
      .ToStatus();
}

std::vector<std::string> UndeclaredPolicyCameras() {
  return {"agentview", "wrist"};
}

absl::Status FitConfigToPolicy(Config* c) {
  if (c->policy.kind != "torchscript" || c->policy.path.empty()) {
    return absl::OkStatus();  // TinyVLA, or a checkpoint's (its context)
  }
  absl::StatusOr<std::optional<PolicyInterface>> declared =
      TorchScriptPolicy::ReadDeclaration(c->policy.path);
  if (!declared.ok()) {
    return ConfigError{c->OriginOf("policy.path"), "policy.path",
                       c->policy.path,
                       absl::StrCat("a policy whose declaration reads: ",
                                    declared.status().message())}
        .ToStatus();
  }
  if (!declared->has_value()) return FitConfigToUndeclared(*c);
  return FitConfigToInterface(**declared, c->policy.path, c);
}

}  // namespace rlvla3
