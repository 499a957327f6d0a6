#include "envs/task_file.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "envs/mujoco_handles.h"
#include "runtime/text_file.h"
#include "yaml-cpp/yaml.h"

namespace rlvla3 {
namespace {

// A task file or the MJCF it names larger than this is not one (the
// built-in scenes are ~10 KB).
constexpr uint64_t kMaxTaskFileBytes = uint64_t{16} << 20;

absl::Status Bad(const std::string& file, const std::string& key,
                 const std::string& why) {
  return absl::InvalidArgumentError(absl::StrCat(file, ": ", key, ": ", why));
}

absl::StatusOr<ObjectSpec> BuiltinObject(const std::string& name) {
  for (const char* colour : {"red", "green", "blue", "yellow"}) {
    if (name == std::string(colour) + "_cube") return ObjectSpec::Cube(colour);
  }
  if (name == "bowl") return ObjectSpec::Bowl();
  if (name == "plate") return ObjectSpec::Plate();
  if (name == "basket") return ObjectSpec::Basket();
  if (name == "drawer") return ObjectSpec::Drawer();
  return absl::NotFoundError(name);
}

absl::StatusOr<Predicate::Kind> PredicateKind(const std::string& s) {
  if (s == "on") return Predicate::Kind::kOn;
  if (s == "in") return Predicate::Kind::kIn;
  if (s == "lifted") return Predicate::Kind::kLifted;
  if (s == "open") return Predicate::Kind::kOpen;
  if (s == "closed") return Predicate::Kind::kClosed;
  if (s == "near") return Predicate::Kind::kNear;
  return absl::NotFoundError(s);
}

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open file"));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The children of <worldbody> in a user's MJCF file, after checking that the
// file compiles on its own (so MuJoCo names the problem and the file).
absl::StatusOr<std::string> WorldbodyOf(const std::string& path) {
  // A folder or a device (/dev/zero) is refused before MuJoCo reads it.
  if (absl::Status s = CheckRegularFile(path, kMaxTaskFileBytes); !s.ok()) {
    return s;
  }
  absl::StatusOr<MjModelPtr> alone = LoadModelFromFile(path);
  if (!alone.ok()) return alone.status();
  absl::StatusOr<std::string> text = ReadFile(path);
  if (!text.ok()) return text.status();
  const size_t open = text->find("<worldbody>");
  const size_t close = text->rfind("</worldbody>");
  if (open == std::string::npos || close == std::string::npos || close < open) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": expected a <worldbody> ... </worldbody> element"));
  }
  const size_t begin = open + std::string("<worldbody>").size();
  return text->substr(begin, close - begin);
}

// The top-level mapping of the task file at `path`; errors name the file, and
// the line and column of bad YAML.
absl::StatusOr<YAML::Node> LoadTaskYaml(const std::string& path) {
  if (absl::Status s = CheckRegularFile(path, kMaxTaskFileBytes); !s.ok()) {
    return s;
  }
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::BadFile&) {
    return absl::NotFoundError(absl::StrCat(path, ": cannot open file"));
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(path, ":", e.mark.line + 1,
                                                   ":", e.mark.column + 1,
                                                   ": invalid YAML: ", e.msg));
  }
  if (!root.IsMap()) return Bad(path, "(document)", "expected a mapping");
  return root;
}

// Unknown keys are errors, not ignored: a misspelt key would otherwise
// silently leave its default.
absl::Status CheckKeys(const std::string& path, const YAML::Node& root) {
  const std::vector<std::string> known = {
      "name",       "family",     "instruction", "max_steps",  "objects",
      "scene_mjcf", "placements", "goal",        "drawer_open"};
  std::vector<std::string> seen;
  for (const auto& kv : root) {
    const std::string key = kv.first.as<std::string>();
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      return Bad(path, key,
                 absl::StrCat("unknown key (expected one of: ",
                              absl::StrJoin(known, ", "), ")"));
    }
    // yaml-cpp keeps one of two equal keys without a word (found by
    // task_file_fuzz): a task given twice is refused, not half-read.
    if (std::find(seen.begin(), seen.end(), key) != seen.end()) {
      return Bad(path, key, "given twice");
    }
    seen.push_back(key);
  }
  for (const char* required : {"name", "instruction", "objects", "goal"}) {
    if (!root[required]) return Bad(path, required, "missing");
  }
  return absl::OkStatus();
}

// name, instruction, family, max_steps and drawer_open.
absl::Status ReadHeader(const std::string& path, const YAML::Node& root,
                        TaskSpec* t) {
  t->name = root["name"].as<std::string>();
  t->instruction = root["instruction"].as<std::string>();
  // The name keys outcomes, checkpoints and metrics: a plain token (an
  // empty one came through a bare YAML tag, found by task_file_fuzz).
  const bool plain = !t->name.empty() && t->name.size() <= 64 &&
                     std::all_of(t->name.begin(), t->name.end(), [](char c) {
                       return absl::ascii_isalnum(c) || c == '_' || c == '-';
                     });
  if (!plain) {
    return Bad(
        path, "name",
        absl::StrCat("\"", t->name,
                     "\": expected 1 to 64 letters, digits, '_' or '-'"));
  }
  if (t->instruction.empty()) {
    return Bad(path, "instruction",
               "expected the task's instruction, not \"\"");
  }
  const std::string family =
      root["family"] ? root["family"].as<std::string>() : "spatial";
  if (family == "spatial") {
    t->family = TaskFamily::kSpatial;
  } else if (family == "object") {
    t->family = TaskFamily::kObject;
  } else if (family == "goal") {
    t->family = TaskFamily::kGoal;
  } else {
    return Bad(
        path, "family",
        absl::StrCat("\"", family, "\": expected spatial, object or goal"));
  }
  t->max_steps = root["max_steps"] ? root["max_steps"].as<int>() : 300;
  if (t->max_steps < 1)
    return Bad(path, "max_steps", "expected a positive integer");
  t->drawer_open_init =
      root["drawer_open"] ? root["drawer_open"].as<double>() : 0.0;
  if (t->drawer_open_init < 0 || t->drawer_open_init > 1) {
    return Bad(path, "drawer_open", "expected a fraction in [0, 1]");
  }
  return absl::OkStatus();
}

// The built-in objects, and the bodies of scene_mjcf (a path relative to the
// task file).
absl::Status ReadObjects(const std::string& path, const YAML::Node& root,
                         TaskSpec* t) {
  for (const auto& o : root["objects"]) {
    const std::string name = o.as<std::string>();
    absl::StatusOr<ObjectSpec> spec = BuiltinObject(name);
    if (!spec.ok()) {
      return Bad(
          path, "objects",
          absl::StrCat(
              "\"", name,
              "\": expected red_cube, green_cube, blue_cube, yellow_cube, "
              "bowl, plate, basket or drawer"));
    }
    t->objects.push_back(*spec);
  }
  if (root["scene_mjcf"]) {
    const std::filesystem::path mjcf =
        std::filesystem::path(path).parent_path() /
        root["scene_mjcf"].as<std::string>();
    const std::filesystem::path mjcf_normal = mjcf.lexically_normal();
    absl::StatusOr<std::string> bodies = WorldbodyOf(mjcf_normal.string());
    if (!bodies.ok()) return bodies.status();
    t->extra_worldbody = *bodies;
  }
  return absl::OkStatus();
}

absl::Status ReadPlacements(const std::string& path, const YAML::Node& root,
                            TaskSpec* t) {
  for (const auto& p : root["placements"]) {
    Placement pl;
    pl.object = p["object"].as<std::string>();
    const auto x = p["x"].as<std::vector<double>>();
    const auto y = p["y"].as<std::vector<double>>();
    if (x.size() != 2 || y.size() != 2 || x[0] > x[1] || y[0] > y[1]) {
      return Bad(path, "placements",
                 absl::StrCat(pl.object, ": x and y must be [min, max]"));
    }
    pl.x_min = x[0], pl.x_max = x[1], pl.y_min = y[0], pl.y_max = y[1];
    t->placements.push_back(pl);
  }
  return absl::OkStatus();
}

absl::Status ReadGoal(const std::string& path, const YAML::Node& root,
                      TaskSpec* t) {
  for (const auto& g : root["goal"]) {
    const std::string kind = g["predicate"].as<std::string>();
    absl::StatusOr<Predicate::Kind> k = PredicateKind(kind);
    if (!k.ok()) {
      return Bad(
          path, "goal",
          absl::StrCat("predicate \"", kind,
                       "\": expected on, in, lifted, open, closed or near"));
    }
    Predicate p{*k, g["a"].as<std::string>(),
                g["b"] ? g["b"].as<std::string>() : "",
                g["value"] ? g["value"].as<double>() : 0.0};
    t->goal.push_back(p);
  }
  if (t->goal.empty())
    return Bad(path, "goal", "expected at least one predicate");
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<TaskSpec> LoadTaskFile(const std::string& path) {
  absl::StatusOr<YAML::Node> root = LoadTaskYaml(path);
  if (!root.ok()) return root.status();
  // The readers throw on a value of the wrong type (yaml-cpp's as<T>): caught
  // here once, naming the file, line and column.
  try {
    if (absl::Status s = CheckKeys(path, *root); !s.ok()) return s;
    TaskSpec t;
    if (absl::Status s = ReadHeader(path, *root, &t); !s.ok()) return s;
    if (absl::Status s = ReadObjects(path, *root, &t); !s.ok()) return s;
    if (absl::Status s = ReadPlacements(path, *root, &t); !s.ok()) return s;
    if (absl::Status s = ReadGoal(path, *root, &t); !s.ok()) return s;
    return t;
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ":", e.mark.line + 1, ":", e.mark.column + 1, ": ", e.msg));
  }
}

absl::StatusOr<TaskSpec> ResolveTask(const std::string& name_or_path) {
  if (absl::EndsWith(name_or_path, ".yaml") ||
      absl::EndsWith(name_or_path, ".yml")) {
    return LoadTaskFile(name_or_path);
  }
  const TaskSpec* t = FindTask(name_or_path);
  if (t == nullptr)
    return absl::NotFoundError(
        absl::StrCat("unknown task '", name_or_path, "'"));
  return *t;
}

absl::StatusOr<std::vector<TaskSpec>> ResolveTaskList(const std::string& list,
                                                      const std::string& key) {
  if (list == "all") return BuiltinTaskSuite();
  std::vector<TaskSpec> out;
  for (absl::string_view name : absl::StrSplit(list, ',', absl::SkipEmpty())) {
    absl::StatusOr<TaskSpec> t = ResolveTask(std::string(name));
    if (!t.ok()) return t.status();
    out.push_back(*std::move(t));
  }
  if (out.empty()) return absl::InvalidArgumentError(key + " names no task");
  return out;
}

}  // namespace rlvla3
