// File: runtime/config_schema.h
// -----------------------------------------------------------------------------
// ConfigSchema: a list of typed, range-checked fields bound to the members of a
// config struct. One schema drives YAML loading, `--set key=value` overrides,
// validation and printing, so the four can never disagree about a key.
//
// Example:
//   struct LearnerConfig { double lr = 3e-4; int64_t micro_batch = 8; };
//   ConfigSchema s;
//   s.Real("learner.lr", &cfg.lr, {.min = 0, .min_exclusive = true, .max = 1},
//          "Adam learning rate");
//   s.Int("learner.micro_batch", &cfg.micro_batch, {.min = 1, .max = 4096},
//   "..."); absl::Status st = s.ApplyYamlFile("configs/demo.yaml");  // or
//   ApplyOverride
// -----------------------------------------------------------------------------
#ifndef RLVLA3_RUNTIME_CONFIG_SCHEMA_H_
#define RLVLA3_RUNTIME_CONFIG_SCHEMA_H_

#include <cstdint>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace rlvla3 {

// Where a bad value came from and why it is bad. Rendered on one line as
//   <file>: <key> = <value>: expected <expected>
struct ConfigError {
  std::string file;  // config file path, or "--set" for a command-line override
  std::string key;   // dotted key path, e.g. "learner.lr"
  std::string value;     // the offending value as written (may be empty)
  std::string expected;  // what would have been accepted

  std::string ToString() const;
  // An InvalidArgument status carrying ToString(); IsConfigError() recognises
  // it.
  absl::Status ToStatus() const;
};

// True if `s` was produced by ConfigError::ToStatus() (the CLI exits 2 on it).
bool IsConfigError(const absl::Status& s);

struct IntRange {
  int64_t min = std::numeric_limits<int64_t>::min();
  int64_t max = std::numeric_limits<int64_t>::max();
};
struct RealRange {
  double min = -std::numeric_limits<double>::infinity();
  bool min_exclusive = false;
  double max = std::numeric_limits<double>::infinity();
  bool max_exclusive = false;
};

class ConfigSchema {
 public:
  enum class Kind { kInt, kReal, kBool, kString, kChoice };

  struct Field {
    std::string key;
    Kind kind;
    void* target;
    IntRange int_range;
    RealRange real_range;
    std::vector<std::string> choices;
    std::string help;
  };

  // Binds `key` to `*v`; a value outside `range` is rejected.
  void Int(std::string key, int64_t* v, IntRange range, std::string help);
  void Real(std::string key, double* v, RealRange range, std::string help);
  void Bool(std::string key, bool* v, std::string help);
  void String(std::string key, std::string* v, std::string help);
  // A string limited to `choices`.
  void Choice(std::string key, std::string* v, std::vector<std::string> choices,
              std::string help);

  const std::vector<Field>& fields() const { return fields_; }
  const Field* Find(absl::string_view key) const;

  // Parses `path` and assigns every key in it; unknown keys, wrong types and
  // out-of-range values are ConfigErrors naming `path`.
  absl::Status ApplyYamlFile(const std::string& path);
  // Same for YAML text; `origin` names it in errors.
  absl::Status ApplyYamlText(absl::string_view text, const std::string& origin);
  // Applies one "dotted.key=value" override; errors name "--set".
  absl::Status ApplyOverride(absl::string_view assignment);
  // Assigns `value` (as written) to `key`; `origin` names the source in errors.
  absl::Status Assign(absl::string_view key, absl::string_view value,
                      const std::string& origin);

  // The current values of all fields as YAML, nested by key path, with each
  // field's help as a trailing comment.
  std::string ToYaml() const;
  // The current value of one field as text.
  std::string ValueString(const Field& f) const;
  // The keys assigned so far (by a file or an override).
  const std::set<std::string>& assigned() const { return assigned_; }

 private:
  absl::Status AssignField(const Field& f, const std::string& text,
                           const std::string& origin);

  std::vector<Field> fields_;
  std::set<std::string> assigned_;
};

}  // namespace rlvla3

#endif  // RLVLA3_RUNTIME_CONFIG_SCHEMA_H_
