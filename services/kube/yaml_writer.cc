#include "services/kube/yaml_writer.h"

#include <algorithm>
#include <cctype>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace rlvla3::kube::yaml {
namespace {

constexpr size_t kCommentWidth = 78;

// True if YAML (1.1 or 1.2) reads `s` back as this same string when plain.
bool PlainIsSafe(const std::string& s) {
  // A letter, '/', '$' or a flag's "--x" first: never a number, an
  // indicator or a sequence entry.
  const bool flag = s.size() > 2 && s[0] == '-' && s[1] == '-' &&
                    std::isalpha(static_cast<unsigned char>(s[2]));
  if (s.empty() || !(flag || std::isalpha(static_cast<unsigned char>(s[0])) ||
                     s[0] == '/' || s[0] == '$')) {
    return false;
  }
  for (char c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c)) &&
        std::string("._/:=,@$()[]'-").find(c) == std::string::npos) {
      return false;
    }
  }
  static const char* const kWords[] = {"y",   "n",    "yes",   "no",  "on",
                                       "off", "true", "false", "null"};
  const std::string lower = absl::AsciiStrToLower(s);
  return s.back() != ':' && std::find(std::begin(kWords), std::end(kWords),
                                      lower) == std::end(kWords);
}

}  // namespace

void Scalar(YAML::Emitter& e, const std::string& s) {
  if (PlainIsSafe(s)) {
    e << s;
  } else {
    e << YAML::DoubleQuoted << s;
  }
}

void Key(YAML::Emitter& e, const char* key) {
  e << YAML::Key << key << YAML::Value;
}

void Str(YAML::Emitter& e, const char* key, const std::string& value) {
  Key(e, key);
  Scalar(e, value);
}

void Int(YAML::Emitter& e, const char* key, int64_t value) {
  Key(e, key);
  e << value;
}

void Bool(YAML::Emitter& e, const char* key, bool value) {
  Key(e, key);
  e << value;
}

void Text(YAML::Emitter& e, const char* key, const std::string& text) {
  const std::string t(absl::StripTrailingAsciiWhitespace(text));
  // A literal block takes its indentation from its first line, and holds
  // printable text only.
  const bool literal =
      !t.empty() && t[0] != ' ' && t[0] != '\t' && t[0] != '\n' &&
      std::none_of(t.begin(), t.end(), [](char c) {
        return static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t';
      });
  Key(e, key);
  if (literal) {
    e << YAML::Literal << t;
  } else {
    e << YAML::DoubleQuoted << text;
  }
}

std::string Comment(const std::string& text) {
  std::string out, line;
  for (absl::string_view word : absl::StrSplit(text, ' ', absl::SkipEmpty())) {
    if (!line.empty() && line.size() + 1 + word.size() > kCommentWidth - 2) {
      absl::StrAppend(&out, "# ", line, "\n");
      line.clear();
    }
    absl::StrAppend(&line, line.empty() ? "" : " ", word);
  }
  if (!line.empty()) absl::StrAppend(&out, "# ", line, "\n");
  return out;
}

}  // namespace rlvla3::kube::yaml
