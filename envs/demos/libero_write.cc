// WriteLiberoHdf5 (libero_file.h): the attributes LIBERO's and robomimic's
// loaders look up are written, with the run's own beside them.
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "envs/demos/hdf5_file.h"
#include "envs/demos/libero_file.h"

namespace rlvla3 {
namespace {

constexpr char kData[] = "/data";

absl::Status WriteEpisode(const DemoRecording& r, const DemoEpisode& e,
                          const std::string& demo, Hdf5File* f) {
  const int64_t t = e.steps;
  if (e.images.size() != r.cameras.size() ||
      e.proprio.size() != r.proprio.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat(demo, ": ", e.images.size(), " cameras and ",
                     e.proprio.size(), " proprio entries, the recording has ",
                     r.cameras.size(), " and ", r.proprio.size()));
  }
  for (size_t c = 0; c < r.cameras.size(); ++c) {
    const DemoCamera& cam = r.cameras[c];
    if (absl::Status s =
            f->WriteBytes(absl::StrCat(demo, "/obs/", cam.name, "_rgb"),
                          {t, cam.height, cam.width, 3}, e.images[c].data());
        !s.ok()) {
      return s;
    }
  }
  for (size_t p = 0; p < r.proprio.size(); ++p) {
    if (absl::Status s =
            f->WriteFloats(absl::StrCat(demo, "/obs/", r.proprio[p].name),
                           {t, r.proprio[p].size}, e.proprio[p].data());
        !s.ok()) {
      return s;
    }
  }
  for (absl::Status s :
       {f->WriteFloats(demo + "/actions", {t, r.action_size}, e.actions.data()),
        f->WriteFloats(demo + "/rewards", {t}, e.rewards.data()),
        f->WriteBytes(demo + "/dones", {t}, e.dones.data()),
        f->SetInt(demo, "num_samples", t), f->SetString(demo, "task", e.task),
        f->SetString(demo, "instruction", e.instruction),
        f->SetInt(demo, "init_id", e.init_id)}) {
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

// LIBERO's problem_info, where every episode is of one task: its name and
// instruction ("" when the file mixes tasks: each demo's attributes say).
std::string ProblemInfo(const DemoRecording& r) {
  std::set<std::string> tasks;
  for (const DemoEpisode& e : r.episodes) tasks.insert(e.task);
  if (tasks.size() != 1) return "";
  const DemoEpisode& e = r.episodes.front();
  nlohmann::json info = {{"problem_name", e.task},
                         {"domain_name", r.env_name},
                         {"language_instruction", e.instruction}};
  return info.dump();
}

// The file-wide attributes and robomimic's train split (every demo; a
// file written here holds no validation split).
absl::Status WriteHeader(const DemoRecording& r,
                         const std::vector<std::string>& names, int64_t total,
                         Hdf5File* f) {
  std::vector<absl::Status> done = {
      f->SetString(kData, "env_name", r.env_name),
      f->SetString(kData, "env_args", r.env_args),
      f->SetInt(kData, "total", total),
      f->SetInt(kData, "num_demos", static_cast<int64_t>(names.size())),
      f->SetInt(kData, "attempts", r.attempts),
      f->SetString(kData, "macros_image_convention", "opencv"),
      f->WriteStrings("/mask/train", names)};
  if (const std::string info = ProblemInfo(r); !info.empty()) {
    done.push_back(f->SetString(kData, "problem_info", info));
  }
  for (const absl::Status& s : done) {
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status WriteLiberoHdf5(const DemoRecording& r, const std::string& path) {
  if (r.episodes.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": no episode to write"));
  }
  if (r.image_convention != "opencv") {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": frames in memory are top row first; this recording says ",
        r.image_convention));
  }
  absl::StatusOr<Hdf5File> f = Hdf5File::Create(path);
  if (!f.ok()) return f.status();
  int64_t total = 0;
  std::vector<std::string> names;
  for (size_t i = 0; i < r.episodes.size(); ++i) {
    names.push_back(absl::StrCat("demo_", i));
    const std::string demo = absl::StrCat(kData, "/", names.back());
    if (absl::Status s = WriteEpisode(r, r.episodes[i], demo, &*f); !s.ok()) {
      return s;
    }
    total += r.episodes[i].steps;
  }
  return WriteHeader(r, names, total, &*f);
}

}  // namespace rlvla3
