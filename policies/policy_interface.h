// File: policies/policy_interface.h
// -----------------------------------------------------------------------------
// PolicyInterface: what a policy reads and emits, declared by the policy:
// its cameras (name, height, width, in input order), its proprio size, its
// action space (size; bins of any count and range per dimension, or a
// continuous diagonal Gaussian), its action chunk, and how its instruction
// is tokenized (rl-vla3's word ids, UTF-8 bytes, or the policy's own
// SentencePiece model). The declaration and its checks; the run follows
// TinyVLA's shape until the loaders, env pool and wire read it (issue 50).
//
// It travels as JSON (format rl-vla3/interface/v1), beside a TorchScript file
// or inside a checkpoint:
//   {"format": "rl-vla3/interface/v1",
//    "cameras": [{"name": "agentview", "height": 224, "width": 224}],
//    "proprio": 8,
//    "action": {"kind": "bins", "size": 7, "bins": 256, "low": -1, "high": 1},
//    "chunk": 8,
//    "instruction": {"tokenizer": "sentencepiece", "model": "tok.model",
//                    "max_len": 32}}
// `bins`, `low` and `high` are one number for every dimension or a list of
// `size`. Every error names where the declaration came from and the field:
// "my.interface.json: action.bins[3]: 1 (at least 2)".
//
// Example:
//   absl::StatusOr<PolicyInterface> p =
//       ParsePolicyInterface(text, "my.interface.json");
//   std::string json = PolicyInterfaceJson(*p);  // parses back to *p
//   PolicyInterface tiny = TinyVLAInterface(64, 64, /*chunk=*/4, 16);
// -----------------------------------------------------------------------------
#ifndef RLVLA3_POLICIES_POLICY_INTERFACE_H_
#define RLVLA3_POLICIES_POLICY_INTERFACE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace rlvla3 {

struct CameraSpec {
  std::string name;  // the scene's camera it renders ([a-z0-9_]+)
  int64_t height = 0, width = 0;
  bool operator==(const CameraSpec& o) const {
    return name == o.name && height == o.height && width == o.width;
  }
};

enum class ActionKind { kBins, kGaussian };

struct ActionSpace {
  ActionKind kind = ActionKind::kBins;
  int64_t size = 7;           // action dimensions
  std::vector<int64_t> bins;  // per dimension (kBins), each >= 2
  std::vector<double> low;    // per dimension: the policy's action range,
  std::vector<double> high;   // mapped onto the env's controller
  bool operator==(const ActionSpace& o) const {
    return kind == o.kind && size == o.size && bins == o.bins && low == o.low &&
           high == o.high;
  }
};

enum class InstructionKind { kWords, kBytes, kSentencePiece };

struct InstructionSpec {
  InstructionKind tokenizer = InstructionKind::kWords;
  int64_t max_len = 16;  // ids per instruction (padded or cut)
  std::string model;     // kSentencePiece: the model file (relative: to the
                         // declaration's folder)
  bool operator==(const InstructionSpec& o) const {
    return tokenizer == o.tokenizer && max_len == o.max_len && model == o.model;
  }
};

struct PolicyInterface {
  std::vector<CameraSpec> cameras;
  int64_t proprio = 8;
  ActionSpace action;
  int64_t chunk = 4;
  InstructionSpec instruction;
  bool operator==(const PolicyInterface& o) const {
    return cameras == o.cameras && proprio == o.proprio && action == o.action &&
           chunk == o.chunk && instruction == o.instruction;
  }
};

inline constexpr char kPolicyInterfaceFormat[] = "rl-vla3/interface/v1";

// Parses and validates `json`; errors name `origin` and the field.
absl::StatusOr<PolicyInterface> ParsePolicyInterface(const std::string& json,
                                                     const std::string& origin);
// OK when every field is in range (ranges in the .cc); else names `origin`
// and the first field out of it.
absl::Status ValidatePolicyInterface(const PolicyInterface& p,
                                     const std::string& origin);
// The action space's part of ValidatePolicyInterface.
absl::Status ValidateActionSpace(const ActionSpace& a,
                                 const std::string& origin);
// The declaration as JSON (per-dimension lists written whole).
std::string PolicyInterfaceJson(const PolicyInterface& p);
// TinyVLA's shape: cameras agentview and wrist of height x width, proprio 8,
// 7 dimensions of 256 bins over [-1, 1], rl-vla3's word ids.
PolicyInterface TinyVLAInterface(int64_t height, int64_t width, int64_t chunk,
                                 int64_t max_text_len);

}  // namespace rlvla3

#endif  // RLVLA3_POLICIES_POLICY_INTERFACE_H_
