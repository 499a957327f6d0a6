// File: policies/instruction_encoder.h
// -----------------------------------------------------------------------------
// InstructionEncoder: an instruction as the policy reads it, by the
// tokenizer its interface declares (policies/policy_interface.h):
//
//   words          rl-vla3's word ids (TextTokenizer), TinyVLA's default;
//   bytes          the UTF-8 bytes, each byte's value its id (1..255: no
//                  byte of text is 0, which stays padding);
//   sentencepiece  the ids of the policy's own SentencePiece model
//                  (policies/sentencepiece_model.h), no BOS or EOS added.
//
// Ids are cut to the declared max_len and right-padded with 0; text_len
// counts the real ones, so a policy never needs a pad id of its own.
//
// Example:
//   absl::StatusOr<InstructionEncoder> e =
//       InstructionEncoder::Make(spec, words);   // spec.model: a path
//   at::Tensor text, lens;
//   e->EncodeTable({"open the drawer"}, &text, &lens);  // [1, L], [1]
// -----------------------------------------------------------------------------
#ifndef RLVLA3_POLICIES_INSTRUCTION_ENCODER_H_
#define RLVLA3_POLICIES_INSTRUCTION_ENCODER_H_

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "policies/policy_interface.h"
#include "policies/text_tokenizer.h"

namespace rlvla3 {

class SentencePieceModel;

class InstructionEncoder {
 public:
  // The encoder `spec` declares; kWords reads `words`. A SentencePiece model
  // (spec.model, a path as given) that does not load is an error naming it.
  static absl::StatusOr<InstructionEncoder> Make(const InstructionSpec& spec,
                                                 const TextTokenizer& words);
  // A policy's: the tokenizer it declares, else `words` cut to max_len.
  static absl::StatusOr<InstructionEncoder> Of(
      const std::optional<PolicyInterface>& declared, int64_t max_len,
      const TextTokenizer& words);

  // Ids of `text`, at most max_len.
  absl::StatusOr<std::vector<int64_t>> Encode(const std::string& text) const;
  // Every instruction's ids, 0-padded: text int64 [T, max_len], lens [T].
  absl::Status EncodeTable(const std::vector<std::string>& instructions,
                           at::Tensor* text, at::Tensor* lens) const;
  InstructionKind kind() const { return spec_.tokenizer; }
  int64_t max_len() const { return spec_.max_len; }

 private:
  InstructionEncoder(InstructionSpec spec, TextTokenizer words,
                     std::shared_ptr<const SentencePieceModel> model)
      : spec_(std::move(spec)),
        words_(std::move(words)),
        model_(std::move(model)) {}
  InstructionSpec spec_;
  TextTokenizer words_;
  std::shared_ptr<const SentencePieceModel> model_;
};

}  // namespace rlvla3

#endif  // RLVLA3_POLICIES_INSTRUCTION_ENCODER_H_
