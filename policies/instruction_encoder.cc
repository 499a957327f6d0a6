#include "policies/instruction_encoder.h"

#include <torch/torch.h>

#include "absl/strings/str_cat.h"
#include "policies/sentencepiece_model.h"

namespace rlvla3 {

absl::StatusOr<InstructionEncoder> InstructionEncoder::Make(
    const InstructionSpec& spec, const TextTokenizer& words) {
  std::shared_ptr<const SentencePieceModel> model;
  if (spec.tokenizer == InstructionKind::kSentencePiece) {
    std::string error;
    std::unique_ptr<SentencePieceModel> m =
        SentencePieceModel::Load(spec.model, &error);
    if (m == nullptr) return absl::InvalidArgumentError(error);
    model = std::move(m);
  }
  return InstructionEncoder(spec, words, std::move(model));
}

absl::StatusOr<InstructionEncoder> InstructionEncoder::Of(
    const std::optional<PolicyInterface>& declared, int64_t max_len,
    const TextTokenizer& words) {
  InstructionSpec spec;
  spec.max_len = max_len;
  return Make(declared ? declared->instruction : spec, words);
}

absl::StatusOr<std::vector<int64_t>> InstructionEncoder::Encode(
    const std::string& text) const {
  const size_t max_len = static_cast<size_t>(spec_.max_len);
  std::vector<int64_t> ids;
  switch (spec_.tokenizer) {
    case InstructionKind::kWords:
      return words_.Encode(text, max_len);
    case InstructionKind::kBytes:
      for (unsigned char b : text) {
        if (b == 0) continue;  // 0 is padding
        if (ids.size() == max_len) break;
        ids.push_back(b);
      }
      return ids;
    case InstructionKind::kSentencePiece: {
      std::vector<int> pieces;
      std::string error;
      if (!model_->Encode(text, &pieces, &error)) {
        return absl::InvalidArgumentError(absl::StrCat(
            spec_.model, ": cannot encode \"", text, "\": ", error));
      }
      if (pieces.size() > max_len) pieces.resize(max_len);
      ids.assign(pieces.begin(), pieces.end());
      return ids;
    }
  }
  return ids;
}

absl::Status InstructionEncoder::EncodeTable(
    const std::vector<std::string>& instructions, at::Tensor* text,
    at::Tensor* lens) const {
  const int64_t T = static_cast<int64_t>(instructions.size());
  const int64_t L = spec_.max_len;
  *text = torch::zeros({T, L}, torch::kLong);
  *lens = torch::zeros({T}, torch::kLong);
  int64_t* t_data = text->data_ptr<int64_t>();
  for (int64_t t = 0; t < T; ++t) {
    absl::StatusOr<std::vector<int64_t>> ids =
        Encode(instructions[static_cast<size_t>(t)]);
    if (!ids.ok()) return ids.status();
    std::copy(ids->begin(), ids->end(), t_data + t * L);
    lens->data_ptr<int64_t>()[t] = static_cast<int64_t>(ids->size());
  }
  return absl::OkStatus();
}

}  // namespace rlvla3
