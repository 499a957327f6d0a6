// ReadLiberoHdf5 (libero_file.h): LIBERO's, robomimic's and rl-vla3's own
// files, every extent checked before anything is allocated.
#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "envs/demos/demo_frames.h"
#include "envs/demos/hdf5_file.h"
#include "envs/demos/libero_file.h"

namespace rlvla3 {
namespace {

constexpr char kData[] = "/data";
constexpr char kRgb[] = "_rgb";
// robomimic's masks: each name at most this long, and no more names than
// the file has demos (a read sized by the file, never by the mask).
constexpr size_t kMaxMaskName = 256;

// How the recording is read: each camera's obs key and stored size, and
// whether frames are flipped.
struct Layout {
  std::vector<std::string> camera_keys;             // per recording camera
  std::vector<std::pair<int64_t, int64_t>> stored;  // its stored h, w
  std::vector<int64_t> proprio_stored;              // values per step in file
  bool flip = false;
};

// demo_N members of /data, in numeric order.
absl::StatusOr<std::vector<std::string>> DemoGroups(const Hdf5File& f) {
  absl::StatusOr<std::vector<std::string>> members = f.Members(kData);
  if (!members.ok()) return members.status();
  std::vector<std::pair<int64_t, std::string>> demos;
  for (const std::string& m : *members) {
    int64_t n = 0;
    if (absl::StartsWith(m, "demo_") && absl::SimpleAtoi(m.substr(5), &n)) {
      demos.emplace_back(n, m);
    }
  }
  if (demos.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(f.path(), ": /data: no demo_N group"));
  }
  std::sort(demos.begin(), demos.end());
  std::vector<std::string> out;
  for (auto& d : demos) out.push_back(std::move(d.second));
  return out;
}

// The extents of `dataset` (shape as Hdf5File), each of `bounded` in 1..hi.
absl::StatusOr<std::vector<int64_t>> BoundedDims(
    const Hdf5File& f, const std::string& dataset, bool floats,
    const std::vector<int64_t>& shape, const std::vector<int>& bounded,
    int64_t hi) {
  absl::StatusOr<std::vector<int64_t>> dims = f.Dims(dataset, floats, shape);
  if (!dims.ok()) return dims.status();
  for (int i : bounded) {
    const int64_t v = (*dims)[static_cast<size_t>(i)];
    if (v < 1 || v > hi) {
      return absl::InvalidArgumentError(absl::StrCat(f.path(), ": ", dataset,
                                                     ": extent ", i, " is ", v,
                                                     ", not in 1..", hi));
    }
  }
  return dims;
}

// An optional attribute: `fallback` when absent, an error when unreadable.
absl::StatusOr<std::string> StringOr(const Hdf5File& f, const std::string& at,
                                     const std::string& name,
                                     const std::string& fallback) {
  if (!f.HasAttribute(at, name)) return fallback;
  return f.GetString(at, name);
}
absl::StatusOr<int64_t> IntOr(const Hdf5File& f, const std::string& at,
                              const std::string& name, int64_t fallback) {
  if (!f.HasAttribute(at, name)) return fallback;
  return f.GetInt(at, name);
}

// The obs key of camera `src` in `demo`: the first of its keys present.
absl::StatusOr<std::string> CameraKey(const Hdf5File& f,
                                      const std::string& demo,
                                      const DemoCameraSource& src,
                                      const std::vector<std::string>& obs) {
  for (const std::string& key : src.keys) {
    if (std::find(obs.begin(), obs.end(), key) != obs.end()) return key;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      f.path(), ": ", demo, "/obs: no camera ", src.name, " (looked for ",
      absl::StrJoin(src.keys, ", "), "; the file's obs: ",
      obs.empty() ? "none" : absl::StrJoin(obs, ", "), ")"));
}

// The cameras of the first demo: those asked for, else every <cam>_rgb.
absl::Status ReadCameras(const Hdf5File& f, const std::string& demo,
                         const DemoReadOptions& o, DemoRecording* r,
                         Layout* l) {
  absl::StatusOr<std::vector<std::string>> obs = f.Members(demo + "/obs");
  if (!obs.ok()) return obs.status();
  std::vector<DemoCameraSource> sources = o.cameras;
  if (sources.empty()) {
    for (const std::string& m : *obs) {
      if (!absl::EndsWith(m, kRgb)) continue;
      sources.push_back({m.substr(0, m.size() - (sizeof(kRgb) - 1)), {m}});
    }
  }
  if (sources.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(f.path(), ": ", demo, "/obs: no <camera>_rgb dataset"));
  }
  for (const DemoCameraSource& src : sources) {
    absl::StatusOr<std::string> key = CameraKey(f, demo, src, *obs);
    if (!key.ok()) return key.status();
    absl::StatusOr<std::vector<int64_t>> dims =
        BoundedDims(f, absl::StrCat(demo, "/obs/", *key), /*floats=*/false,
                    {-1, -1, -1, 3}, {1, 2}, o.max_image_side);
    if (!dims.ok()) return dims.status();
    const int64_t h = (*dims)[1], w = (*dims)[2];
    const int64_t want_h = o.image_height > 0 ? o.image_height : h;
    const int64_t want_w = o.image_width > 0 ? o.image_width : w;
    if ((want_h != h || want_w != w) && !o.resize) {
      return absl::InvalidArgumentError(absl::StrCat(
          f.path(), ": ", demo, "/obs/", *key, ": frames of ", h, "x", w,
          ", the run's are ", want_h, "x", want_w, o.resize_hint));
    }
    r->cameras.push_back({src.name, want_h, want_w});
    l->camera_keys.push_back(*key);
    l->stored.emplace_back(h, w);
  }
  return absl::OkStatus();
}

// The proprio entries and the action size of the first demo.
absl::Status ReadVectors(const Hdf5File& f, const std::string& demo,
                         const DemoReadOptions& o, DemoRecording* r,
                         Layout* l) {
  absl::StatusOr<std::vector<std::string>> obs = f.Members(demo + "/obs");
  if (!obs.ok()) return obs.status();
  for (const DemoProprioSource& p : o.proprio) {
    const std::string dataset = absl::StrCat(demo, "/obs/", p.key);
    if (std::find(obs->begin(), obs->end(), p.key) == obs->end()) {
      return absl::InvalidArgumentError(absl::StrCat(
          f.path(), ": ", dataset, ": no such proprio entry (the file's obs: ",
          absl::StrJoin(*obs, ", "), ")", o.proprio_hint));
    }
    absl::StatusOr<std::vector<int64_t>> dims =
        BoundedDims(f, dataset, /*floats=*/true, {-1, -1}, {1}, o.max_vector);
    if (!dims.ok()) return dims.status();
    const int64_t n = (*dims)[1];
    if (p.quat_to_axis_angle && n != 4) {
      return absl::InvalidArgumentError(
          absl::StrCat(f.path(), ": ", dataset, ": ", n,
                       " values per step, a quaternion has 4"));
    }
    r->proprio.push_back({p.key, p.quat_to_axis_angle ? 3 : n});
    l->proprio_stored.push_back(n);
  }
  absl::StatusOr<std::vector<int64_t>> dims = BoundedDims(
      f, demo + "/actions", /*floats=*/true, {-1, -1}, {1}, o.max_vector);
  if (!dims.ok()) return dims.status();
  r->action_size = (*dims)[1];
  return absl::OkStatus();
}

// The file's image convention (or the one asked for): flip or not.
absl::StatusOr<bool> Flip(const Hdf5File& f, const DemoReadOptions& o) {
  std::string convention = o.image_convention;
  if (convention == "auto") {
    absl::StatusOr<std::string> c =
        StringOr(f, kData, "macros_image_convention", "opencv");
    if (!c.ok()) return c.status();
    convention = *c;
  }
  if (convention != "opencv" && convention != "opengl") {
    return absl::InvalidArgumentError(absl::StrCat(
        f.path(), ": /data: image convention \"", convention,
        "\" is neither opencv (top row first) nor opengl (bottom row first)"));
  }
  return convention == "opengl";
}

// LIBERO's problem_info (JSON) names the file's instruction; "" if absent.
absl::StatusOr<std::string> FileInstruction(const Hdf5File& f) {
  absl::StatusOr<std::string> info = StringOr(f, kData, "problem_info", "");
  if (!info.ok() || info->empty()) return info;
  const nlohmann::json j = nlohmann::json::parse(*info, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(
        f.path(), ": /data: attribute problem_info is not a JSON object"));
  }
  const auto it = j.find("language_instruction");
  if (it == j.end()) return std::string();
  if (!it->is_string()) {
    return absl::InvalidArgumentError(
        absl::StrCat(f.path(),
                     ": /data: problem_info's language_instruction "
                     "is not a string"));
  }
  return it->get<std::string>();
}

// robomimic's splits: mask/valid's demos are held out; with a mask/train,
// demos in neither are unused. A name the file has no demo of, or a demo in
// both, is refused.
absl::StatusOr<std::map<std::string, DemoSplit>> ReadSplits(
    const Hdf5File& f, const std::vector<std::string>& demos) {
  std::map<std::string, DemoSplit> out;
  if (!f.Exists("/mask")) return out;
  const bool has_train = f.Exists("/mask/train");
  if (has_train) {
    for (const std::string& d : demos) out[d] = DemoSplit::kUnused;
  }
  for (const auto& [split, as] : {std::pair{"train", DemoSplit::kTrain},
                                  std::pair{"valid", DemoSplit::kValid}}) {
    const std::string dataset = absl::StrCat("/mask/", split);
    if (!f.Exists(dataset)) continue;
    absl::StatusOr<std::vector<std::string>> names =
        f.ReadStrings(dataset, int64_t(demos.size()), kMaxMaskName);
    if (!names.ok()) return names.status();
    for (const std::string& n : *names) {
      if (std::find(demos.begin(), demos.end(), n) == demos.end()) {
        return absl::InvalidArgumentError(absl::StrCat(
            f.path(), ": ", dataset, " names ", n, ", no demo of the file"));
      }
      if (as == DemoSplit::kValid && out.count(n) > 0 &&
          out[n] == DemoSplit::kTrain && has_train) {
        return absl::InvalidArgumentError(absl::StrCat(
            f.path(), ": ", n, " is in both mask/train and mask/valid"));
      }
      out[n] = as;
    }
  }
  return out;
}

absl::Status ReadImages(const Hdf5File& f, const std::string& demo,
                        const DemoRecording& r, const Layout& l,
                        DemoEpisode* e) {
  const int64_t t = e->steps;
  for (size_t c = 0; c < r.cameras.size(); ++c) {
    const auto [h, w] = l.stored[c];
    absl::StatusOr<std::vector<uint8_t>> img = f.ReadBytes(
        absl::StrCat(demo, "/obs/", l.camera_keys[c]), {t, h, w, 3});
    if (!img.ok()) return img.status();
    if (l.flip) FlipRows(img->data(), t, h, w);
    const DemoCamera& cam = r.cameras[c];
    if (cam.height != h || cam.width != w) {
      *img = ResizeFrames(img->data(), t, h, w, cam.height, cam.width);
    }
    e->images.push_back(*std::move(img));
  }
  return absl::OkStatus();
}

absl::Status ReadVectorsOf(const Hdf5File& f, const std::string& demo,
                           const DemoRecording& r, const Layout& l,
                           DemoEpisode* e) {
  const int64_t t = e->steps;
  for (size_t p = 0; p < r.proprio.size(); ++p) {
    absl::StatusOr<std::vector<float>> v =
        f.ReadFloats(absl::StrCat(demo, "/obs/", r.proprio[p].name),
                     {t, l.proprio_stored[p]});
    if (!v.ok()) return v.status();
    if (r.proprio[p].size != l.proprio_stored[p]) {
      *v = QuatsToAxisAngles(v->data(), t);
    }
    e->proprio.push_back(*std::move(v));
  }
  // rewards and dones: optional (SFT reads neither); absent, the episode
  // ends at its last step.
  e->rewards.assign(static_cast<size_t>(t), 0.0f);
  e->dones.assign(static_cast<size_t>(t), 0);
  e->dones.back() = 1;
  if (f.Exists(demo + "/rewards")) {
    absl::StatusOr<std::vector<float>> v = f.ReadFloats(demo + "/rewards", {t});
    if (!v.ok()) return v.status();
    e->rewards = *std::move(v);
  }
  if (f.Exists(demo + "/dones")) {
    absl::StatusOr<std::vector<float>> v = f.ReadFloats(demo + "/dones", {t});
    if (!v.ok()) return v.status();
    for (size_t i = 0; i < v->size(); ++i) e->dones[i] = (*v)[i] != 0.0f;
  }
  return absl::OkStatus();
}

// The episode's attributes: num_samples (when present) agrees with its
// steps; its instruction, else the file's.
absl::Status ReadAttributes(const Hdf5File& f, const std::string& demo,
                            const std::string& file_instruction,
                            DemoEpisode* e) {
  absl::StatusOr<int64_t> n = IntOr(f, demo, "num_samples", e->steps);
  if (!n.ok()) return n.status();
  if (*n != e->steps) {
    return absl::InvalidArgumentError(
        absl::StrCat(f.path(), ": ", demo, ": num_samples ", *n, ", but ", demo,
                     "/actions has ", e->steps, " steps"));
  }
  absl::StatusOr<std::string> task = StringOr(f, demo, "task", "");
  if (!task.ok()) return task.status();
  absl::StatusOr<std::string> instruction =
      StringOr(f, demo, "instruction", file_instruction);
  if (!instruction.ok()) return instruction.status();
  absl::StatusOr<int64_t> init = IntOr(f, demo, "init_id", 0);
  if (!init.ok()) return init.status();
  e->task = *std::move(task);
  e->instruction = *std::move(instruction);
  e->init_id = *init;
  return absl::OkStatus();
}

absl::StatusOr<DemoEpisode> ReadEpisode(const Hdf5File& f,
                                        const std::string& demo,
                                        const DemoRecording& r, const Layout& l,
                                        const DemoReadOptions& o) {
  DemoEpisode e;
  absl::StatusOr<std::vector<int64_t>> dims =
      BoundedDims(f, demo + "/actions", /*floats=*/true, {-1, r.action_size},
                  {0}, o.max_steps);
  if (!dims.ok()) return dims.status();
  e.steps = (*dims)[0];
  if (absl::Status s = ReadAttributes(f, demo, r.instruction, &e); !s.ok()) {
    return s;
  }
  absl::StatusOr<std::vector<float>> actions =
      f.ReadFloats(demo + "/actions", {e.steps, r.action_size});
  if (!actions.ok()) return actions.status();
  e.actions = *std::move(actions);
  if (absl::Status s = ReadImages(f, demo, r, l, &e); !s.ok()) return s;
  if (absl::Status s = ReadVectorsOf(f, demo, r, l, &e); !s.ok()) return s;
  return e;
}

// The file-wide attributes and how the demos are laid out (from the first).
absl::Status ReadHeader(const Hdf5File& f, const std::string& first,
                        const DemoReadOptions& o, DemoRecording* r, Layout* l) {
  for (auto [name, out] : {std::pair{"env_name", &r->env_name},
                           std::pair{"env_args", &r->env_args}}) {
    absl::StatusOr<std::string> v = StringOr(f, kData, name, "");
    if (!v.ok()) return v.status();
    *out = *std::move(v);
  }
  absl::StatusOr<std::string> instruction = FileInstruction(f);
  if (!instruction.ok()) return instruction.status();
  r->instruction = *std::move(instruction);
  absl::StatusOr<bool> flip = Flip(f, o);
  if (!flip.ok()) return flip.status();
  l->flip = *flip;
  if (absl::Status s = ReadCameras(f, first, o, r, l); !s.ok()) return s;
  return ReadVectors(f, first, o, r, l);
}

}  // namespace

absl::StatusOr<DemoRecording> ReadLiberoHdf5(const std::string& path,
                                             const DemoReadOptions& options) {
  absl::StatusOr<Hdf5File> f = Hdf5File::Open(path);
  if (!f.ok()) return f.status();
  absl::StatusOr<std::vector<std::string>> demos = DemoGroups(*f);
  if (!demos.ok()) return demos.status();
  DemoRecording r;
  Layout l;
  if (absl::Status s = ReadHeader(*f, absl::StrCat(kData, "/", demos->front()),
                                  options, &r, &l);
      !s.ok()) {
    return s;
  }
  std::map<std::string, DemoSplit> splits;
  if (options.masks) {
    absl::StatusOr<std::map<std::string, DemoSplit>> s = ReadSplits(*f, *demos);
    if (!s.ok()) return s.status();
    splits = *std::move(s);
  }
  for (const std::string& name : *demos) {
    absl::StatusOr<DemoEpisode> e =
        ReadEpisode(*f, absl::StrCat(kData, "/", name), r, l, options);
    if (!e.ok()) return e.status();
    e->name = name;
    if (auto it = splits.find(name); it != splits.end()) e->split = it->second;
    r.episodes.push_back(*std::move(e));
  }
  absl::StatusOr<int64_t> attempts =
      IntOr(*f, kData, "attempts", static_cast<int64_t>(r.episodes.size()));
  if (!attempts.ok()) return attempts.status();
  r.attempts = *attempts;
  return r;
}

}  // namespace rlvla3
