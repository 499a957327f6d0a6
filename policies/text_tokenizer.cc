#include "policies/text_tokenizer.h"

#include <algorithm>
#include <cctype>
#include <set>

#include "absl/strings/str_cat.h"

namespace rlvla3 {

std::vector<std::string> TextTokenizer::Split(const std::string& text) {
  std::vector<std::string> out;
  std::string word;
  for (unsigned char c : text) {
    if (std::isalnum(c)) {
      word.push_back(static_cast<char>(std::tolower(c)));
    } else if (!word.empty()) {
      out.push_back(std::move(word));
      word.clear();
    }
  }
  if (!word.empty()) out.push_back(std::move(word));
  return out;
}

TextTokenizer TextTokenizer::Build(const std::vector<std::string>& texts) {
  std::set<std::string> unique;
  for (const auto& t : texts) {
    for (auto& w : Split(t)) unique.insert(std::move(w));
  }
  return *FromWords(std::vector<std::string>(unique.begin(), unique.end()));
}

absl::StatusOr<TextTokenizer> TextTokenizer::FromWords(
    const std::vector<std::string>& words) {
  TextTokenizer t;
  t.words_ = words;
  for (size_t i = 0; i < words.size(); ++i) {
    if (words[i].empty() || (i > 0 && words[i] <= words[i - 1])) {
      return absl::InvalidArgumentError(absl::StrCat(
          "tokenizer vocabulary must be sorted unique words; entry ", i,
          " is \"", words[i], "\""));
    }
    t.ids_[words[i]] = static_cast<int64_t>(i) + 2;
  }
  return t;
}

std::vector<int64_t> TextTokenizer::Encode(const std::string& text,
                                           size_t max_len) const {
  std::vector<int64_t> ids;
  for (const auto& w : Split(text)) {
    if (ids.size() == max_len) break;
    auto it = ids_.find(w);
    ids.push_back(it == ids_.end() ? kUnknown : it->second);
  }
  return ids;
}

}  // namespace rlvla3
