#include "runtime/config_schema.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "yaml-cpp/yaml.h"

namespace rlvla3 {
namespace {

constexpr char kConfigErrorPayload[] = "rlvla3/config-error";
constexpr size_t kMaxKeysInHint = 12;

std::string FormatReal(double v) {
  std::ostringstream os;
  os.precision(10);
  os << v;
  return os.str();
}

std::string Expectation(const ConfigSchema::Field& f) {
  switch (f.kind) {
    case ConfigSchema::Kind::kInt: {
      const auto& r = f.int_range;
      const bool has_min = r.min != std::numeric_limits<int64_t>::min();
      const bool has_max = r.max != std::numeric_limits<int64_t>::max();
      if (has_min && has_max)
        return absl::StrCat("an integer in [", r.min, ", ", r.max, "]");
      if (has_min) return absl::StrCat("an integer >= ", r.min);
      if (has_max) return absl::StrCat("an integer <= ", r.max);
      return "an integer";
    }
    case ConfigSchema::Kind::kReal: {
      const auto& r = f.real_range;
      return absl::StrCat("a number in ", r.min_exclusive ? "(" : "[",
                          FormatReal(r.min), ", ", FormatReal(r.max),
                          r.max_exclusive ? ")" : "]");
    }
    case ConfigSchema::Kind::kBool:
      return "true or false";
    case ConfigSchema::Kind::kString:
      return "a string";
    case ConfigSchema::Kind::kChoice:
      return absl::StrCat("one of: ", absl::StrJoin(f.choices, ", "));
  }
  return "a value";
}

// Keys of the schema that share `prefix` (the parent of an unknown key).
std::string SiblingHint(const std::vector<ConfigSchema::Field>& fields,
                        const std::string& key) {
  const size_t dot = key.rfind('.');
  const std::string prefix =
      dot == std::string::npos ? "" : key.substr(0, dot + 1);
  std::vector<std::string> names;
  for (const auto& f : fields) {
    if (f.key.compare(0, prefix.size(), prefix) != 0) continue;
    std::string rest = f.key.substr(prefix.size());
    rest = rest.substr(0, rest.find('.'));
    if (std::find(names.begin(), names.end(), rest) == names.end())
      names.push_back(rest);
  }
  if (names.empty()) return "a known key";
  if (names.size() > kMaxKeysInHint) {
    names.resize(kMaxKeysInHint);
    names.push_back("...");
  }
  return absl::StrCat(
      "a known key",
      prefix.empty() ? "" : " under " + prefix.substr(0, prefix.size() - 1),
      " (", absl::StrJoin(names, ", "), ")");
}

}  // namespace

std::string ConfigError::ToString() const {
  std::string s = absl::StrCat(file, ": ", key.empty() ? "(document)" : key);
  if (!value.empty()) absl::StrAppend(&s, " = \"", value, "\"");
  absl::StrAppend(&s, ": expected ", expected);
  return s;
}

absl::Status ConfigError::ToStatus() const {
  absl::Status s = absl::InvalidArgumentError(ToString());
  s.SetPayload(kConfigErrorPayload, absl::Cord(key));
  return s;
}

bool IsConfigError(const absl::Status& s) {
  return !s.ok() && s.GetPayload(kConfigErrorPayload).has_value();
}

void ConfigSchema::Int(std::string key, int64_t* v, IntRange range,
                       std::string help) {
  fields_.push_back(
      {std::move(key), Kind::kInt, v, range, {}, {}, std::move(help)});
}
void ConfigSchema::Real(std::string key, double* v, RealRange range,
                        std::string help) {
  fields_.push_back(
      {std::move(key), Kind::kReal, v, {}, range, {}, std::move(help)});
}
void ConfigSchema::Bool(std::string key, bool* v, std::string help) {
  fields_.push_back(
      {std::move(key), Kind::kBool, v, {}, {}, {}, std::move(help)});
}
void ConfigSchema::String(std::string key, std::string* v, std::string help) {
  fields_.push_back(
      {std::move(key), Kind::kString, v, {}, {}, {}, std::move(help)});
}
void ConfigSchema::Choice(std::string key, std::string* v,
                          std::vector<std::string> choices, std::string help) {
  fields_.push_back({std::move(key),
                     Kind::kChoice,
                     v,
                     {},
                     {},
                     std::move(choices),
                     std::move(help)});
}

const ConfigSchema::Field* ConfigSchema::Find(absl::string_view key) const {
  for (const auto& f : fields_) {
    if (f.key == key) return &f;
  }
  return nullptr;
}

absl::Status ConfigSchema::Assign(absl::string_view key,
                                  absl::string_view value,
                                  const std::string& origin) {
  const Field* f = Find(key);
  if (f == nullptr) {
    return ConfigError{origin, std::string(key), "",
                       SiblingHint(fields_, std::string(key))}
        .ToStatus();
  }
  const std::string text(absl::StripAsciiWhitespace(value));
  absl::Status s = AssignField(*f, text, origin);
  if (s.ok()) assigned_.insert(f->key);
  return s;
}

absl::Status ConfigSchema::AssignField(const Field& field,
                                       const std::string& text,
                                       const std::string& origin) {
  const Field* f = &field;
  auto bad = [&]() {
    return ConfigError{origin, f->key, text, Expectation(*f)}.ToStatus();
  };
  switch (f->kind) {
    case Kind::kInt: {
      int64_t v = 0;
      if (!absl::SimpleAtoi(text, &v) || v < f->int_range.min ||
          v > f->int_range.max)
        return bad();
      *static_cast<int64_t*>(f->target) = v;
      return absl::OkStatus();
    }
    case Kind::kReal: {
      double v = 0;
      const auto& r = f->real_range;
      if (!absl::SimpleAtod(text, &v) || !std::isfinite(v)) return bad();
      if (v < r.min || (r.min_exclusive && v == r.min)) return bad();
      if (v > r.max || (r.max_exclusive && v == r.max)) return bad();
      *static_cast<double*>(f->target) = v;
      return absl::OkStatus();
    }
    case Kind::kBool: {
      const std::string lower = absl::AsciiStrToLower(text);
      if (lower == "true") {
        *static_cast<bool*>(f->target) = true;
      } else if (lower == "false") {
        *static_cast<bool*>(f->target) = false;
      } else {
        return bad();
      }
      return absl::OkStatus();
    }
    case Kind::kString:
      *static_cast<std::string*>(f->target) = text;
      return absl::OkStatus();
    case Kind::kChoice:
      if (std::find(f->choices.begin(), f->choices.end(), text) ==
          f->choices.end())
        return bad();
      *static_cast<std::string*>(f->target) = text;
      return absl::OkStatus();
  }
  return bad();
}

namespace {

absl::Status ApplyNode(ConfigSchema& schema, const YAML::Node& node,
                       const std::string& prefix, const std::string& origin) {
  if (!node.IsMap()) {
    return ConfigError{origin, prefix, "", "a mapping of keys to values"}
        .ToStatus();
  }
  for (const auto& kv : node) {
    const std::string name = kv.first.Scalar();
    const std::string key = prefix.empty() ? name : prefix + "." + name;
    const YAML::Node& value = kv.second;
    if (value.IsMap()) {
      bool known_section = false;
      for (const auto& f : schema.fields()) {
        if (f.key.compare(0, key.size() + 1, key + ".") == 0)
          known_section = true;
      }
      if (!known_section) {
        return ConfigError{origin, key, "", SiblingHint(schema.fields(), key)}
            .ToStatus();
      }
      if (absl::Status s = ApplyNode(schema, value, key, origin); !s.ok())
        return s;
    } else if (value.IsScalar()) {
      if (schema.Find(key) == nullptr) {
        for (const auto& f : schema.fields()) {
          if (f.key.compare(0, key.size() + 1, key + ".") == 0) {
            return ConfigError{origin, key, value.Scalar(),
                               "a mapping (it is a section)"}
                .ToStatus();
          }
        }
      }
      if (absl::Status s = schema.Assign(key, value.Scalar(), origin); !s.ok())
        return s;
    } else {
      const ConfigSchema::Field* f = schema.Find(key);
      const std::string what = value.IsNull() ? "null" : "a list";
      if (f == nullptr) {
        return ConfigError{origin, key, "", SiblingHint(schema.fields(), key)}
            .ToStatus();
      }
      return ConfigError{origin, key, what, Expectation(*f)}.ToStatus();
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ConfigSchema::ApplyYamlText(absl::string_view text,
                                         const std::string& origin) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    return ConfigError{
        absl::StrCat(origin, ":", e.mark.line + 1, ":", e.mark.column + 1), "",
        "", absl::StrCat("valid YAML (", e.msg, ")")}
        .ToStatus();
  }
  if (root.IsNull())
    return absl::OkStatus();  // an empty file means "all defaults"
  try {
    return ApplyNode(*this, root, "", origin);
  } catch (const YAML::Exception& e) {
    return ConfigError{origin, "", "", absl::StrCat("valid YAML (", e.msg, ")")}
        .ToStatus();
  }
}

absl::Status ConfigSchema::ApplyYamlFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return ConfigError{path, "", "", "a readable file"}.ToStatus();
  std::stringstream buf;
  buf << in.rdbuf();
  return ApplyYamlText(buf.str(), path);
}

absl::Status ConfigSchema::ApplyOverride(absl::string_view assignment) {
  const size_t eq = assignment.find('=');
  if (eq == absl::string_view::npos || eq == 0) {
    return ConfigError{"--set", std::string(assignment), "", "key=value"}
        .ToStatus();
  }
  return Assign(absl::StripAsciiWhitespace(assignment.substr(0, eq)),
                assignment.substr(eq + 1), "--set");
}

std::string ConfigSchema::ValueString(const Field& f) const {
  switch (f.kind) {
    case Kind::kInt:
      return absl::StrCat(*static_cast<const int64_t*>(f.target));
    case Kind::kReal:
      return FormatReal(*static_cast<const double*>(f.target));
    case Kind::kBool:
      return *static_cast<const bool*>(f.target) ? "true" : "false";
    case Kind::kString:
    case Kind::kChoice:
      return *static_cast<const std::string*>(f.target);
  }
  return "";
}

std::string ConfigSchema::ToYaml() const {
  // Fields are emitted in declaration order; sections open when the prefix
  // changes.
  std::string out;
  std::vector<std::string> open;  // currently open section path
  for (const auto& f : fields_) {
    std::vector<std::string> parts = absl::StrSplit(f.key, '.');
    const std::string leaf = parts.back();
    parts.pop_back();
    size_t common = 0;
    while (common < open.size() && common < parts.size() &&
           open[common] == parts[common])
      ++common;
    open.resize(common);
    for (size_t i = common; i < parts.size(); ++i) {
      absl::StrAppend(&out, std::string(2 * i, ' '), parts[i], ":\n");
      open.push_back(parts[i]);
    }
    std::string value = ValueString(f);
    if ((f.kind == Kind::kString || f.kind == Kind::kChoice)) {
      YAML::Emitter e;
      e << YAML::DoubleQuoted << value;
      value = e.c_str();
    }
    absl::StrAppend(&out, std::string(2 * parts.size(), ' '), leaf, ": ",
                    value);
    if (!f.help.empty()) absl::StrAppend(&out, "  # ", f.help);
    absl::StrAppend(&out, "\n");
  }
  return out;
}

}  // namespace rlvla3
