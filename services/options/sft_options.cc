#include "services/options/sft_options.h"

#include <algorithm>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "envs/task_file.h"
#include "services/options/checkpoint_fit.h"
#include "services/options/config_bridge.h"

namespace rlvla3 {

absl::StatusOr<std::vector<TaskSpec>> SftTasks(const Config& c) {
  return ResolveTaskList(c.sft.tasks, "sft.tasks");
}

EvalOptions EvalOptionsFromConfig(const Config& c) {
  EvalOptions o;
  o.env = EnvOptionsFromConfig(c);
  o.env.progress_reward = 0;  // success is what is counted
  o.seed = static_cast<uint64_t>(c.run.seed);
  o.max_text_len = c.policy.max_text_len;
  o.execute_steps = c.sft.execute_steps;
  return o;
}

DemoOptions DemoOptionsFromConfig(const Config& c) {
  DemoOptions o;
  o.env = EnvOptionsFromConfig(c);
  o.env.progress_reward = 0;  // the experts' demos need no reward
  o.env.init_first = static_cast<int>(c.sft.init_state_first);
  o.env.init_count = static_cast<int>(c.sft.init_states);
  o.num_envs = c.env.num_envs;
  o.num_threads = static_cast<int>(c.threads.env_workers);
  o.lp_num_threads = static_cast<int>(c.threads.lp_num_threads);
  o.seed = static_cast<uint64_t>(c.run.seed);
  o.noise = c.sft.demo_noise;
  o.demos_per_task = c.sft.demos_per_task;
  o.chunk = static_cast<int>(c.policy.chunk);
  return o;
}

namespace {

// sft.demos: "" (the experts), a file, or a folder of *.hdf5 files (sorted).
absl::StatusOr<std::vector<std::string>> DemoFiles(const std::string& path) {
  namespace fs = std::filesystem;
  if (path.empty()) return std::vector<std::string>{};
  std::error_code ec;
  if (fs::is_regular_file(path, ec)) return std::vector<std::string>{path};
  if (!fs::is_directory(path, ec)) {
    return absl::InvalidArgumentError(
        absl::StrCat("sft.demos: ", path, ": no such file or folder"));
  }
  // Every call takes an error_code: a link loop, a dangling link or an entry
  // gone while listing skips that entry, never throws.
  std::vector<std::string> files;
  fs::directory_iterator it(path, ec);
  for (; !ec && it != fs::directory_iterator(); it.increment(ec)) {
    std::error_code entry_ec;
    if (it->is_regular_file(entry_ec) && it->path().extension() == ".hdf5") {
      files.push_back(it->path().string());
    }
  }
  if (ec) {
    return absl::InvalidArgumentError(absl::StrCat(
        "sft.demos: ", path, ": cannot list the folder (", ec.message(), ")"));
  }
  if (files.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("sft.demos: ", path, ": no *.hdf5 file in the folder"));
  }
  std::sort(files.begin(), files.end());
  return files;
}

// Where a camera named `name` may be stored: <name>_rgb (LIBERO's and
// ours), <name>_image (robomimic's); the wrist under LIBERO's and
// robomimic's names too.
std::vector<std::string> DefaultCameraKeys(const std::string& name) {
  std::vector<std::string> keys = {name + "_rgb", name + "_image"};
  if (name == "wrist" || name == "eye_in_hand") {
    for (const char* k : {"wrist_rgb", "eye_in_hand_rgb",
                          "robot0_eye_in_hand_image", "eye_in_hand_image"}) {
      if (std::find(keys.begin(), keys.end(), k) == keys.end()) {
        keys.push_back(k);
      }
    }
  }
  return keys;
}

absl::Status KeyError(const std::string& key, const std::string& value,
                      const std::string& why) {
  return absl::InvalidArgumentError(
      absl::StrCat(key, " = \"", value, "\": ", why));
}

// sft.demo_cameras: camera=obs_key pairs over env.cameras' defaults.
absl::StatusOr<std::vector<DemoCameraSource>> DemoCameras(
    const Config& c, const std::vector<std::string>& cameras) {
  std::vector<DemoCameraSource> out;
  for (const std::string& name : cameras) {
    out.push_back({name, DefaultCameraKeys(name)});
  }
  const std::string& v = c.sft.demo_cameras;
  for (absl::string_view pair :
       absl::StrSplit(v, ',', absl::SkipWhitespace())) {
    std::vector<std::string> kv = absl::StrSplit(pair, absl::MaxSplits('=', 1));
    for (std::string& part : kv)
      part = std::string(absl::StripAsciiWhitespace(part));
    if (kv.size() != 2 || kv[0].empty() || kv[1].empty()) {
      return KeyError("sft.demo_cameras", v,
                      absl::StrCat("\"", pair, "\" is not camera=obs_key"));
    }
    auto it = std::find_if(out.begin(), out.end(),
                           [&](const auto& s) { return s.name == kv[0]; });
    if (it == out.end()) {
      return KeyError("sft.demo_cameras", v,
                      absl::StrCat(kv[0], " is not one of env.cameras (",
                                   absl::StrJoin(cameras, ", "), ")"));
    }
    it->keys = {kv[1]};
  }
  return out;
}

// sft.demo_proprio: obs keys, a quaternion one as KEY:quat.
absl::StatusOr<std::vector<DemoProprioSource>> DemoProprio(const Config& c) {
  std::vector<DemoProprioSource> out;
  const std::string& v = c.sft.demo_proprio;
  for (absl::string_view item :
       absl::StrSplit(v, ',', absl::SkipWhitespace())) {
    std::vector<std::string> parts = absl::StrSplit(item, ':');
    for (std::string& part : parts)
      part = std::string(absl::StripAsciiWhitespace(part));
    if (parts[0].empty() || parts.size() > 2 ||
        (parts.size() == 2 && parts[1] != "quat")) {
      return KeyError("sft.demo_proprio", v,
                      absl::StrCat("\"", item, "\" is not KEY or KEY:quat"));
    }
    out.push_back({parts[0], parts.size() == 2});
  }
  if (out.empty()) return KeyError("sft.demo_proprio", v, "names no obs key");
  return out;
}

absl::StatusOr<DemoReadOptions> DemoReadOptionsFromConfig(
    const Config& c, const std::vector<std::string>& cameras) {
  DemoReadOptions o;
  absl::StatusOr<std::vector<DemoCameraSource>> cams = DemoCameras(c, cameras);
  if (!cams.ok()) return cams.status();
  o.cameras = *std::move(cams);
  absl::StatusOr<std::vector<DemoProprioSource>> proprio = DemoProprio(c);
  if (!proprio.ok()) return proprio.status();
  o.proprio = *std::move(proprio);
  o.image_convention = c.sft.demo_image_convention;
  o.image_height = c.env.image_height;
  o.image_width = c.env.image_width;
  o.resize = c.sft.demo_resize;
  o.resize_hint =
      " (sft.demo_resize=true resizes them; or set env.image_height and "
      "env.image_width to the file's)";
  o.proprio_hint = " (sft.demo_proprio names the entries read)";
  o.masks = c.sft.demo_masks;
  return o;
}

}  // namespace

absl::StatusOr<SftOptions> SftOptionsFromConfig(const Config& c) {
  SftOptions o;
  absl::StatusOr<std::vector<TaskSpec>> tasks = SftTasks(c);
  if (!tasks.ok()) return tasks.status();
  o.tasks = *std::move(tasks);
  o.demos = DemoOptionsFromConfig(c);
  absl::StatusOr<std::vector<std::string>> files = DemoFiles(c.sft.demos);
  if (!files.ok()) return files.status();
  o.demo_files = *std::move(files);
  absl::StatusOr<DemoReadOptions> read =
      DemoReadOptionsFromConfig(c, o.demos.env.cameras);
  if (!read.ok()) return read.status();
  o.demo_read = *std::move(read);
  o.demo_task = c.sft.demo_task;
  if (!o.demo_task.empty() &&
      std::none_of(o.tasks.begin(), o.tasks.end(),
                   [&](const TaskSpec& t) { return t.name == o.demo_task; })) {
    return KeyError("sft.demo_task", o.demo_task,
                    absl::StrCat("not one of the run's tasks (sft.tasks = ",
                                 c.sft.tasks, ")"));
  }
  CloningOptions& t = o.cloning;
  t.lr = c.sft.lr;
  t.weight_decay = c.sft.weight_decay;
  t.label_sigma_bins = c.sft.label_sigma_bins;
  t.batch_size = c.sft.batch_size;
  t.epochs = c.sft.epochs;
  t.augment_shift_px = c.sft.augment_shift_px;
  t.time_budget_s = c.sft.time_budget_s;
  t.report_every_s = c.metrics.interval_s;
  t.seed = static_cast<uint64_t>(c.run.seed);
  o.eval = EvalOptionsFromConfig(c);
  o.policy = TinyVLAOptionsFromConfig(c, /*vocab=*/0);
  if (c.policy.kind == "torchscript") o.torchscript_path = c.policy.path;
  o.eval_episodes = c.sft.eval_episodes;
  o.checkpoint = c.sft.checkpoint;
  o.context = SftCheckpointContext(c);
  o.seed = static_cast<uint64_t>(c.run.seed);
  return o;
}

}  // namespace rlvla3
