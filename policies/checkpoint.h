// File: policies/checkpoint.h
// -----------------------------------------------------------------------------
// TinyVLA checkpoints: a folder with the weights in safetensors format
// (model.safetensors, readable from Python's safetensors) and a JSON sidecar
// (model.json) holding the network options, the tokenizer vocabulary and the
// policy version. Save/load round-trips exactly. Loading checks that every
// parameter is present with its shape and nothing else is, and names the file
// and tensor when not.
//
// Example:
//   SaveCheckpoint("runs/sft/ckpt", net, tokenizer, /*version=*/12);
//   absl::StatusOr<LoadedCheckpoint> c = LoadCheckpoint("runs/sft/ckpt");
//   auto policy = std::make_shared<TinyVLAPolicy>(c->net, c->version);
// -----------------------------------------------------------------------------
#ifndef RLVLA3_POLICIES_CHECKPOINT_H_
#define RLVLA3_POLICIES_CHECKPOINT_H_

#include <string>

#include "absl/status/statusor.h"
#include "policies/text_tokenizer.h"
#include "policies/tiny_vla.h"

namespace rlvla3 {

struct LoadedCheckpoint {
  TinyVLA net{nullptr};
  TextTokenizer tokenizer;
  uint64_t version = 0;
};

// Writes <dir>/model.safetensors and <dir>/model.json (creating dir).
absl::Status SaveCheckpoint(const std::string& dir, TinyVLA& net,
                            const TextTokenizer& tokenizer, uint64_t version);

absl::StatusOr<LoadedCheckpoint> LoadCheckpoint(const std::string& dir);

}  // namespace rlvla3

#endif  // RLVLA3_POLICIES_CHECKPOINT_H_
