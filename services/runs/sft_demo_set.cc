// What SFT clones, from a recording of demonstrations (the experts' or a
// LIBERO-format file's), and the experts' recording exported as such files.
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "envs/demos/isolated_read.h"
#include "envs/demos/libero_file.h"
#include "policies/action_tokenizer.h"
#include "services/runs/sft.h"

namespace rlvla3 {
namespace {

// The run's camera `name` is the recording's `has`: the same name, or the
// wrist under LIBERO's name eye_in_hand (either way round).
bool SameCamera(const std::string& name, const std::string& has) {
  auto wrist = [](const std::string& n) {
    return n == "wrist" || n == "eye_in_hand";
  };
  return name == has || (wrist(name) && wrist(has));
}

// The recording's index of the run's camera `name` (an exact name first,
// then the wrist's other name), or -1.
int CameraIndex(const DemoRecording& r, const std::string& name) {
  for (size_t c = 0; c < r.cameras.size(); ++c) {
    if (r.cameras[c].name == name) return static_cast<int>(c);
  }
  for (size_t c = 0; c < r.cameras.size(); ++c) {
    if (SameCamera(name, r.cameras[c].name)) return static_cast<int>(c);
  }
  return -1;
}

// The recording's index of each of the run's `cameras`, in their order.
absl::StatusOr<std::vector<int>> CameraIndices(
    const DemoRecording& r, const std::vector<std::string>& cameras,
    const std::string& origin) {
  if (cameras.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(origin, ": the run names no camera (env.cameras)"));
  }
  std::vector<int> at;
  for (const std::string& name : cameras) {
    at.push_back(CameraIndex(r, name));
    if (at.back() >= 0) continue;
    std::vector<std::string> has;
    for (const DemoCamera& c : r.cameras) has.push_back(c.name);
    return absl::InvalidArgumentError(
        absl::StrCat(origin, ": no camera ", name, " (env.cameras names ",
                     absl::StrJoin(cameras, ", "), "; the file has ",
                     has.empty() ? "none" : absl::StrJoin(has, ", "), ")"));
  }
  return at;
}

// The recording fits the run: its cameras at the run's image size, 8
// proprio values, 7-D actions.
absl::Status CheckFits(const DemoRecording& r, int width, int height,
                       const std::string& origin,
                       const std::vector<int>& cameras) {
  for (int c : cameras) {
    const DemoCamera& cam = r.cameras[static_cast<size_t>(c)];
    if (cam.height != height || cam.width != width) {
      return absl::InvalidArgumentError(absl::StrCat(
          origin, ": camera ", cam.name, " is ", cam.height, "x", cam.width,
          "; the run's env.image_height x env.image_width is ", height, "x",
          width));
    }
  }
  int64_t proprio = 0;
  for (const DemoProprioEntry& p : r.proprio) proprio += p.size;
  if (proprio != kProprioDim || r.action_size != kActionDim) {
    return absl::InvalidArgumentError(absl::StrCat(
        origin, ": proprio of ", proprio, " and actions of ", r.action_size,
        "; the policy reads ", kProprioDim, " and acts on ", kActionDim));
  }
  return absl::OkStatus();
}

// Every action value finite and in [-1, 1], the range the action tokens
// cover (docs/policies.md): a file's out-of-range action is refused, not
// clipped into the end bins.
absl::Status CheckActions(const DemoEpisode& e, size_t episode,
                          const std::string& origin) {
  for (size_t i = 0; i < e.actions.size(); ++i) {
    const float a = e.actions[i];
    if (std::isfinite(a) && a >= -1.0f && a <= 1.0f) continue;
    return absl::InvalidArgumentError(
        absl::StrCat(origin, ": episode ", episode, ", step ", i / kActionDim,
                     ": action value ", a, " (dimension ", i % kActionDim,
                     ") is not in [-1, 1]"));
  }
  return absl::OkStatus();
}

// An instruction compared as words: case, spacing and a closing full stop
// aside ("Pick up the cube." is "pick up the  cube").
std::string Words(const std::string& text) {
  std::string out;
  for (absl::string_view w :
       absl::StrSplit(text, ' ', absl::SkipWhitespace())) {
    if (!out.empty()) out += ' ';
    out += absl::AsciiStrToLower(absl::StripAsciiWhitespace(w));
  }
  while (!out.empty() && (out.back() == '.' || out.back() == ' ')) {
    out.pop_back();
  }
  return out;
}

// Episode i's task among `tasks`: `named` when given, else its own task
// attribute, else the task whose instruction its instruction is.
absl::StatusOr<int> TaskOf(const DemoEpisode& e, size_t i,
                           const std::vector<TaskSpec>& tasks,
                           const std::string& named,
                           const std::string& origin) {
  const std::string& want = named.empty() ? e.task : named;
  for (size_t t = 0; t < tasks.size(); ++t) {
    if (!want.empty() && tasks[t].name == want) return static_cast<int>(t);
    if (want.empty() && !e.instruction.empty() &&
        Words(tasks[t].instruction) == Words(e.instruction)) {
      return static_cast<int>(t);
    }
  }
  if (!want.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(origin, ": episode ", i, "'s task \"", want,
                     "\" is not one of the run's (sft.tasks)"));
  }
  std::vector<std::string> have;
  for (const TaskSpec& t : tasks) {
    have.push_back(absl::StrCat(t.name, ": \"", t.instruction, "\""));
  }
  return absl::InvalidArgumentError(absl::StrCat(
      origin, ": episode ", i, " (", e.name.empty() ? "?" : e.name,
      ") names no task, and ",
      e.instruction.empty() ? std::string("the file holds no instruction")
                            : absl::StrCat("its instruction \"", e.instruction,
                                           "\" is none of the run's tasks'"),
      " (", absl::StrJoin(have, "; "), "); name its task with sft.demo_task"));
}

bool SameLayout(const DemoRecording& a, const DemoRecording& b) {
  if (a.cameras.size() != b.cameras.size() ||
      a.proprio.size() != b.proprio.size() || a.action_size != b.action_size) {
    return false;
  }
  for (size_t c = 0; c < a.cameras.size(); ++c) {
    if (a.cameras[c].name != b.cameras[c].name ||
        a.cameras[c].height != b.cameras[c].height ||
        a.cameras[c].width != b.cameras[c].width) {
      return false;
    }
  }
  for (size_t p = 0; p < a.proprio.size(); ++p) {
    if (a.proprio[p].name != b.proprio[p].name ||
        a.proprio[p].size != b.proprio[p].size) {
      return false;
    }
  }
  return true;
}

}  // namespace

absl::StatusOr<DemoSet> DemoSetFromRecording(
    const DemoRecording& r, int chunk, const std::vector<TaskSpec>& tasks,
    int width, int height, const std::vector<std::string>& cameras,
    const std::string& origin, const std::string& task_named) {
  absl::StatusOr<std::vector<int>> at = CameraIndices(r, cameras, origin);
  if (!at.ok()) return at.status();
  if (absl::Status s = CheckFits(r, width, height, origin, *at); !s.ok()) {
    return s;
  }
  DemoSet d;
  d.width = width;
  d.height = height;
  d.cameras = cameras;
  const size_t image = static_cast<size_t>(width) * height * 3;
  d.chunk = chunk;
  for (const TaskSpec& t : tasks) {
    d.task_names.push_back(t.name);
    d.instructions.push_back(t.instruction);
  }
  d.attempts = r.attempts;
  const ActionTokenizer tok;
  for (size_t i = 0; i < r.episodes.size(); ++i) {
    const DemoEpisode& e = r.episodes[i];
    if (e.split == DemoSplit::kUnused) continue;
    absl::StatusOr<int> found = TaskOf(e, i, tasks, task_named, origin);
    if (!found.ok()) return found.status();
    const int task = *found;
    if (absl::Status s = CheckActions(e, i, origin); !s.ok()) return s;
    if (e.steps < 1 ||
        e.actions.size() != static_cast<size_t>(e.steps) * kActionDim) {
      return absl::InvalidArgumentError(
          absl::StrCat(origin, ": episode ", i, " has ", e.steps, " steps and ",
                       e.actions.size(), " action values"));
    }
    ++d.episodes;
    d.episode_task.push_back(task);
    d.episode_steps.push_back(static_cast<int32_t>(e.steps));
    d.valid_episodes += e.split == DemoSplit::kValid ? 1 : 0;
    for (int64_t t = 0; t < e.steps; ++t) {
      d.task.push_back(task);
      d.valid.push_back(e.split == DemoSplit::kValid ? 1 : 0);
      for (int k = 0; k < chunk; ++k) {
        const int64_t src = std::min<int64_t>(t + k, e.steps - 1);
        for (int j = 0; j < kActionDim; ++j) {
          const float a = e.actions[src * kActionDim + j];
          d.action_tokens.push_back(tok.Encode(a));
          d.actions.push_back(a);
        }
      }
      for (size_t p = 0; p < r.proprio.size(); ++p) {
        const int64_t n = r.proprio[p].size;
        const float* v = e.proprio[p].data() + t * n;
        d.proprio.insert(d.proprio.end(), v, v + n);
      }
      for (int c : *at) {  // [C, H, W, 3] per step, the run's order
        const uint8_t* frame =
            e.images[static_cast<size_t>(c)].data() + t * image;
        d.images.insert(d.images.end(), frame, frame + image);
      }
    }
  }
  return d;
}

absl::StatusOr<DemoSet> ReadDemonstrations(
    const std::vector<std::string>& files, int chunk,
    const std::vector<TaskSpec>& tasks, int width, int height,
    const std::vector<std::string>& cameras, const DemoReadOptions& read,
    const std::string& task_named) {
  DemoRecording all;
  for (const std::string& file : files) {
    // In a child first: a file that crashes HDF5 is refused (isolated_read.h).
    absl::StatusOr<DemoRecording> r = ReadLiberoHdf5Isolated(file, read);
    if (!r.ok()) return r.status();
    if (file == files.front()) {
      all = *std::move(r);
      continue;
    }
    if (!SameLayout(all, *r)) {
      return absl::InvalidArgumentError(absl::StrCat(
          file, ": cameras, proprio entries or action size differ from ",
          files.front(), "'s"));
    }
    all.attempts += r->attempts;
    for (DemoEpisode& e : r->episodes) all.episodes.push_back(std::move(e));
  }
  return DemoSetFromRecording(
      all, chunk, tasks, width, height, cameras,
      files.size() == 1
          ? files.front()
          : absl::StrCat(files.size(), " files from ", files.front()),
      task_named);
}

absl::StatusOr<std::vector<std::string>> ExportDemonstrations(
    const DemoOptions& o, const std::vector<TaskSpec>& tasks,
    const std::string& dir) {
  absl::StatusOr<DemoRecording> all = CollectDemoRecording(o, tasks);
  if (!all.ok()) return all.status();
  return WriteRecordingPerTask(*std::move(all), tasks, dir);
}

absl::StatusOr<std::vector<std::string>> WriteRecordingPerTask(
    DemoRecording all, const std::vector<TaskSpec>& tasks,
    const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    return absl::UnavailableError(
        absl::StrCat(dir, ": cannot create (", ec.message(), ")"));
  }
  // Each file: the recording's header (copied without any episode) and its
  // task's episodes, moved in; no frame is copied.
  std::vector<DemoEpisode> episodes = std::move(all.episodes);
  all.episodes.clear();
  std::vector<std::string> written;
  for (const TaskSpec& t : tasks) {
    DemoRecording one = all;
    for (DemoEpisode& e : episodes) {
      if (e.task == t.name) one.episodes.push_back(std::move(e));
    }
    // The file's own task's attempts: SFT over several files sums them.
    const auto attempts = all.attempts_by_task.find(t.name);
    one.attempts = attempts != all.attempts_by_task.end()
                       ? attempts->second
                       : static_cast<int64_t>(one.episodes.size());
    one.attempts_by_task = {{t.name, one.attempts}};
    const std::string path = absl::StrCat(
        dir, "/", std::filesystem::path(t.name).stem().string(), "_demo.hdf5");
    if (absl::Status s = WriteLiberoHdf5(one, path); !s.ok()) return s;
    written.push_back(path);
  }
  return written;
}

}  // namespace rlvla3
