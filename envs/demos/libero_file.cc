#include "envs/demos/libero_file.h"

#include <algorithm>
#include <cstdlib>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "envs/demos/hdf5_file.h"

namespace rlvla3 {
namespace {

constexpr char kData[] = "/data";
constexpr char kRgb[] = "_rgb";

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
            f->WriteBytes(absl::StrCat(demo, "/obs/", cam.name, kRgb),
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

// demo_N members of /data, in numeric order.
absl::StatusOr<std::vector<std::string>> DemoGroups(const Hdf5File& f) {
  absl::StatusOr<std::vector<std::string>> members = f.Members(kData);
  if (!members.ok()) return members.status();
  std::vector<std::pair<int64_t, std::string>> demos;
  for (const std::string& m : *members) {
    int64_t n = 0;
    if (absl::StartsWith(m, "demo_") && absl::SimpleAtoi(m.substr(5), &n)) {
      demos.emplace_back(n, absl::StrCat(kData, "/", m));
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

absl::Status OutOfRange(const Hdf5File& f, const std::string& dataset,
                        const std::string& what, int64_t v, int64_t hi) {
  return absl::InvalidArgumentError(absl::StrCat(
      f.path(), ": ", dataset, ": ", what, " ", v, ", not in 1..", hi));
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
      return OutOfRange(f, dataset, absl::StrCat("extent ", i, " is"), v, hi);
    }
  }
  return dims;
}

// The cameras and proprio entries of the first demo fix the recording's,
// from their extents alone (nothing is read here).
absl::Status ReadLayout(const Hdf5File& f, const std::string& demo,
                        const DemoReadOptions& o, DemoRecording* r) {
  absl::StatusOr<std::vector<std::string>> obs = f.Members(demo + "/obs");
  if (!obs.ok()) return obs.status();
  for (const std::string& m : *obs) {
    if (!absl::EndsWith(m, kRgb)) continue;
    absl::StatusOr<std::vector<int64_t>> dims =
        BoundedDims(f, absl::StrCat(demo, "/obs/", m), /*floats=*/false,
                    {-1, -1, -1, 3}, {1, 2}, o.max_image_side);
    if (!dims.ok()) return dims.status();
    r->cameras.push_back(
        {m.substr(0, m.size() - (sizeof(kRgb) - 1)), (*dims)[1], (*dims)[2]});
  }
  if (r->cameras.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(f.path(), ": ", demo, "/obs: no <camera>_rgb dataset"));
  }
  for (const std::string& entry : o.proprio) {
    absl::StatusOr<std::vector<int64_t>> dims =
        BoundedDims(f, absl::StrCat(demo, "/obs/", entry), /*floats=*/true,
                    {-1, -1}, {1}, o.max_vector);
    if (!dims.ok()) return dims.status();
    r->proprio.push_back({entry, (*dims)[1]});
  }
  absl::StatusOr<std::vector<int64_t>> dims = BoundedDims(
      f, demo + "/actions", /*floats=*/true, {-1, -1}, {1}, o.max_vector);
  if (!dims.ok()) return dims.status();
  r->action_size = (*dims)[1];
  return absl::OkStatus();
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

// The episode's attributes: num_samples (when present) agrees with `t`.
absl::Status ReadAttributes(const Hdf5File& f, const std::string& demo,
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
      StringOr(f, demo, "instruction", "");
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
                                        const DemoRecording& r,
                                        const DemoReadOptions& o) {
  DemoEpisode e;
  absl::StatusOr<std::vector<int64_t>> dims =
      BoundedDims(f, demo + "/actions", /*floats=*/true, {-1, r.action_size},
                  {0}, o.max_steps);
  if (!dims.ok()) return dims.status();
  const int64_t t = (*dims)[0];
  e.steps = t;
  if (absl::Status s = ReadAttributes(f, demo, &e); !s.ok()) return s;
  absl::StatusOr<std::vector<float>> actions =
      f.ReadFloats(demo + "/actions", {t, r.action_size});
  if (!actions.ok()) return actions.status();
  e.actions = *std::move(actions);
  for (const DemoCamera& cam : r.cameras) {
    absl::StatusOr<std::vector<uint8_t>> img =
        f.ReadBytes(absl::StrCat(demo, "/obs/", cam.name, kRgb),
                    {t, cam.height, cam.width, 3});
    if (!img.ok()) return img.status();
    e.images.push_back(*std::move(img));
  }
  for (const DemoProprioEntry& p : r.proprio) {
    absl::StatusOr<std::vector<float>> v =
        f.ReadFloats(absl::StrCat(demo, "/obs/", p.name), {t, p.size});
    if (!v.ok()) return v.status();
    e.proprio.push_back(*std::move(v));
  }
  absl::StatusOr<std::vector<float>> rewards =
      f.ReadFloats(demo + "/rewards", {t});
  if (!rewards.ok()) return rewards.status();
  e.rewards = *std::move(rewards);
  absl::StatusOr<std::vector<float>> dones = f.ReadFloats(demo + "/dones", {t});
  if (!dones.ok()) return dones.status();
  for (float d : *dones) e.dones.push_back(d != 0.0f ? 1 : 0);
  return e;
}

}  // namespace

absl::Status WriteLiberoHdf5(const DemoRecording& r, const std::string& path) {
  if (r.episodes.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": no episode to write"));
  }
  absl::StatusOr<Hdf5File> f = Hdf5File::Create(path);
  if (!f.ok()) return f.status();
  int64_t total = 0;
  for (size_t i = 0; i < r.episodes.size(); ++i) {
    const std::string demo = absl::StrCat(kData, "/demo_", i);
    if (absl::Status s = WriteEpisode(r, r.episodes[i], demo, &*f); !s.ok()) {
      return s;
    }
    total += r.episodes[i].steps;
  }
  for (absl::Status s : {f->SetString(kData, "env_name", r.env_name),
                         f->SetString(kData, "env_args", r.env_args),
                         f->SetInt(kData, "total", total),
                         f->SetInt(kData, "attempts", r.attempts)}) {
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::StatusOr<DemoRecording> ReadLiberoHdf5(const std::string& path,
                                             const DemoReadOptions& options) {
  absl::StatusOr<Hdf5File> f = Hdf5File::Open(path);
  if (!f.ok()) return f.status();
  absl::StatusOr<std::vector<std::string>> demos = DemoGroups(*f);
  if (!demos.ok()) return demos.status();
  DemoRecording r;
  for (auto [name, out] : {std::pair{"env_name", &r.env_name},
                           std::pair{"env_args", &r.env_args}}) {
    absl::StatusOr<std::string> v = StringOr(*f, kData, name, "");
    if (!v.ok()) return v.status();
    *out = *std::move(v);
  }
  if (absl::Status s = ReadLayout(*f, demos->front(), options, &r); !s.ok()) {
    return s;
  }
  for (const std::string& demo : *demos) {
    absl::StatusOr<DemoEpisode> e = ReadEpisode(*f, demo, r, options);
    if (!e.ok()) return e.status();
    r.episodes.push_back(*std::move(e));
  }
  absl::StatusOr<int64_t> attempts =
      IntOr(*f, kData, "attempts", static_cast<int64_t>(r.episodes.size()));
  if (!attempts.ok()) return attempts.status();
  r.attempts = *attempts;
  return r;
}

}  // namespace rlvla3
