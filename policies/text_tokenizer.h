// File: policies/text_tokenizer.h
// -----------------------------------------------------------------------------
// TextTokenizer: the instruction tokenizer of TinyVLA. Lower-cases, splits on
// anything that is not a letter or digit, and maps words to ids through a
// vocabulary that is built deterministically (sorted unique words) and saved
// with every checkpoint, so a checkpoint always reads its instructions the way
// it was trained. Id 0 is padding, id 1 an unknown word.
//
// Example:
//   TextTokenizer tok = TextTokenizer::Build({"put the red cube in the bowl"});
//   std::vector<int64_t> ids = tok.Encode("Put the RED cube!");   // {4, 5, 2,
//   3} std::string json = tok.ToJson();          // saved in the checkpoint
//   sidecar
// -----------------------------------------------------------------------------
#ifndef RLVLA3_POLICIES_TEXT_TOKENIZER_H_
#define RLVLA3_POLICIES_TEXT_TOKENIZER_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace rlvla3 {

class TextTokenizer {
 public:
  static constexpr int64_t kPad = 0;
  static constexpr int64_t kUnknown = 1;

  // Vocabulary of every word in `texts`, ids in sorted word order from 2.
  static TextTokenizer Build(const std::vector<std::string>& texts);
  // From the sorted word list a checkpoint saved.
  static absl::StatusOr<TextTokenizer> FromWords(
      const std::vector<std::string>& words);

  // Word ids of `text`, at most `max_len` (truncated), unknown words as
  // kUnknown.
  std::vector<int64_t> Encode(const std::string& text,
                              size_t max_len = 64) const;
  // Lower-cased words of `text`.
  static std::vector<std::string> Split(const std::string& text);

  // Vocabulary size including padding and unknown.
  int64_t size() const { return static_cast<int64_t>(words_.size()) + 2; }
  const std::vector<std::string>& words() const { return words_; }

 private:
  std::vector<std::string> words_;  // sorted; word i has id i + 2
  std::map<std::string, int64_t> ids_;
};

}  // namespace rlvla3

#endif  // RLVLA3_POLICIES_TEXT_TOKENIZER_H_
