#include "services/options/sft_options.h"

#include <algorithm>
#include <filesystem>

#include "absl/strings/str_cat.h"
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
