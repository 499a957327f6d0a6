#include "services/plan/stage_costs.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "runtime/text_file.h"

namespace rlvla3 {
namespace {

using json = nlohmann::json;

constexpr char kFormat[] = "rl-vla3 stage costs 1";
constexpr uint64_t kMaxFileBytes = 1 << 20;
constexpr size_t kMaxPoints = 64;
constexpr size_t kMaxText = 256;
constexpr double kMaxSeconds = 3600;  // any one measured call
constexpr double kMaxCount = 1e7;     // workers, envs, batch sizes, samples
constexpr double kMaxBytes = 1e15;

// Reads one object's keys strictly; the first error is kept and named.
class Fields {
 public:
  Fields(const json& object, std::string path, const std::string& origin)
      : o_(object), path_(std::move(path)), origin_(origin) {}

  double Number(const char* key, double lo, double hi) {
    const json* v = Find(key);
    if (v == nullptr) return Missing(key), lo;
    if (!v->is_number() || !std::isfinite(v->get<double>()) ||
        v->get<double>() < lo || v->get<double>() > hi) {
      Fail(key,
           absl::StrCat(v->dump(), " (a number from ", lo, " to ", hi, ")"));
      return lo;
    }
    return v->get<double>();
  }
  int64_t Integer(const char* key, int64_t lo, int64_t hi) {
    const json* v = Find(key);
    if (v == nullptr) return Missing(key), lo;
    if (!v->is_number_integer() ||
        (v->is_number_unsigned() && v->get<uint64_t>() > uint64_t(hi)) ||
        v->get<int64_t>() < lo || v->get<int64_t>() > hi) {
      Fail(key,
           absl::StrCat(v->dump(), " (an integer from ", lo, " to ", hi, ")"));
      return lo;
    }
    return v->get<int64_t>();
  }
  std::string Text(const char* key) {
    const json* v = Find(key);
    if (v == nullptr) return "";
    if (!v->is_string() || v->get_ref<const std::string&>().size() > kMaxText) {
      Fail(key, absl::StrCat("a string of at most ", kMaxText, " characters"));
      return "";
    }
    return v->get<std::string>();
  }
  // [[x, seconds], ...]: at most kMaxPoints, x in [lo_x, hi_x], seconds
  // in (0, kMaxSeconds], x strictly increasing.
  std::vector<Timed> Points(const char* key, double lo_x, double hi_x) {
    std::vector<Timed> out;
    const json* v = Find(key);
    if (v == nullptr) return out;
    if (!v->is_array() || v->size() > kMaxPoints) {
      Fail(key, absl::StrCat("a list of at most ", kMaxPoints,
                             " [x, seconds] pairs"));
      return out;
    }
    for (const json& p : *v) {
      if (!p.is_array() || p.size() != 2 || !p[0].is_number() ||
          !p[1].is_number() || !std::isfinite(p[0].get<double>()) ||
          !std::isfinite(p[1].get<double>()) || p[0].get<double>() < lo_x ||
          p[0].get<double>() > hi_x || p[1].get<double>() <= 0 ||
          p[1].get<double>() > kMaxSeconds ||
          (!out.empty() && p[0].get<double>() <= out.back().x)) {
        Fail(key, absl::StrCat(p.dump(), " (each [x, seconds]: x from ", lo_x,
                               " to ", hi_x, ", increasing; seconds in (0, ",
                               kMaxSeconds, "])"));
        return {};
      }
      out.push_back({p[0].get<double>(), p[1].get<double>()});
    }
    return out;
  }
  // An optional key: known (never "unknown"), whether or not it is there.
  bool Has(const char* key) { return Find(key) != nullptr; }
  // The object under `key` (absent or not one: said, and an empty one).
  Fields Object(const char* key) {
    const json* v = Find(key);
    if (v == nullptr) {
      Missing(key);
    } else if (!v->is_object()) {
      Fail(key, "an object");
      v = nullptr;
    }
    return Fields(v != nullptr ? *v : empty_, Join(key), origin_);
  }
  // Every key of the object was read (a typo is refused, not ignored);
  // then this object's first error, or a child's.
  // An unknown key first: a misspelt one is also a missing one.
  absl::Status Done(const absl::Status& children = absl::OkStatus()) {
    for (auto it = o_.begin(); it != o_.end(); ++it) {
      if (read_.count(it.key()) == 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            origin_, ": ", Join(it.key().c_str()),
            ": unknown key (known: ", absl::StrJoin(read_, ", "), ")"));
      }
    }
    if (!status_.ok()) return status_;
    return children;
  }

 private:
  const json* Find(const char* key) {
    read_.insert(key);
    const auto it = o_.find(key);
    return it == o_.end() ? nullptr : &*it;
  }
  std::string Join(const char* key) const {
    return path_.empty() ? key : absl::StrCat(path_, ".", key);
  }
  void Missing(const char* key) { Fail(key, "missing"); }
  void Fail(const char* key, const std::string& why) {
    if (status_.ok()) {
      status_ = absl::InvalidArgumentError(
          absl::StrCat(origin_, ": ", Join(key), ": ", why));
    }
  }

  const json& o_;
  const json empty_ = json::object();
  std::string path_;
  const std::string& origin_;
  std::set<std::string> read_;
  absl::Status status_;
};

json PointsJson(const std::vector<Timed>& points) {
  json a = json::array();
  for (const Timed& t : points) a.push_back({t.x, t.seconds});
  return a;
}

LinearFit FitTimed(const std::vector<Timed>& points) {
  std::vector<std::pair<double, double>> xy;
  for (const Timed& t : points) xy.emplace_back(t.x, t.seconds);
  return FitLine(xy);
}

absl::Status ParseEnv(Fields f, EnvCosts* e) {
  e->workers = int(f.Integer("workers", 1, 4096));
  e->envs = int(f.Integer("envs", 1, 1 << 20));
  e->image_width = int(f.Integer("image_width", 0, 4096));
  e->image_height = int(f.Integer("image_height", 0, 4096));
  e->cameras = int(f.Integer("cameras", 0, 16));
  e->execute_steps = int(f.Integer("execute_steps", 1, 1024));
  e->backend = f.Text("backend");
  e->step_s_mean = f.Number("step_s_mean", 1e-9, kMaxSeconds);
  e->step_s_cv = f.Number("step_s_cv", 0, 100);
  e->step_s_p50 = f.Number("step_s_p50", 0, kMaxSeconds);
  e->step_s_p99 = f.Number("step_s_p99", 0, kMaxSeconds);
  e->physics_ms = f.Number("physics_ms", 0, 1e6);
  e->render_ms = f.Number("render_ms", 0, 1e6);
  e->readback_ms = f.Number("readback_ms", 0, 1e6);
  e->handoff_ms = f.Number("handoff_ms", 0, 1e6);
  e->latency_s_mean = f.Number("latency_s_mean", 0, kMaxSeconds);
  e->latency_s_cv = f.Number("latency_s_cv", 0, 100);
  e->host_bytes_per_env = f.Number("host_bytes_per_env", 0, kMaxBytes);
  return f.Done();
}

}  // namespace

LinearFit FitLine(const std::vector<std::pair<double, double>>& points) {
  LinearFit f;
  if (points.empty()) return f;
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const auto& [x, y] : points) {
    sx += x;
    sy += y;
    sxx += x * x;
    sxy += x * y;
  }
  const double n = double(points.size());
  const double var = sxx - sx * sx / n;
  if (points.size() < 2 || var <= 0) {  // one size: all of it per unit
    const double mx = sx / n;
    f.slope = mx > 0 ? (sy / n) / mx : 0;
    if (mx <= 0) f.fixed = sy / n;
    return f;
  }
  f.slope = std::max(0.0, (sxy - sx * sy / n) / var);
  f.fixed = (sy - f.slope * sx) / n;
  if (f.fixed < 0) {  // through the origin instead
    f.fixed = 0;
    f.slope = sxx > 0 ? std::max(0.0, sxy / sxx) : 0;
  }
  return f;
}

LinearFit InferenceCosts::Fit() const { return FitTimed(by_batch); }
LinearFit LearnerCosts::Fit() const { return FitTimed(by_samples); }
LinearFit AllReduceCosts::Fit() const { return FitTimed(by_bytes); }

std::string StageCostsJson(const StageCostProfile& p) {
  const EnvCosts& e = p.env;
  json j = {
      {"format", kFormat},
      {"config", p.config},
      {"gpus", p.gpus},
      {"cores", p.cores},
      {"env",
       {{"workers", e.workers},
        {"envs", e.envs},
        {"image_width", e.image_width},
        {"image_height", e.image_height},
        {"cameras", e.cameras},
        {"execute_steps", e.execute_steps},
        {"backend", e.backend},
        {"step_s_mean", e.step_s_mean},
        {"step_s_cv", e.step_s_cv},
        {"step_s_p50", e.step_s_p50},
        {"step_s_p99", e.step_s_p99},
        {"physics_ms", e.physics_ms},
        {"render_ms", e.render_ms},
        {"readback_ms", e.readback_ms},
        {"handoff_ms", e.handoff_ms},
        {"latency_s_mean", e.latency_s_mean},
        {"latency_s_cv", e.latency_s_cv},
        {"host_bytes_per_env", e.host_bytes_per_env}}},
      {"inference",
       {{"device", p.inference.device},
        {"precision", p.inference.precision},
        {"threads", p.inference.threads},
        {"by_batch", PointsJson(p.inference.by_batch)}}},
      {"learner",
       {{"device", p.learner.device},
        {"precision", p.learner.precision},
        {"threads", p.learner.threads},
        {"nice", p.learner.nice},
        {"micro_batch", p.learner.micro_batch},
        {"by_samples", PointsJson(p.learner.by_samples)}}},
      {"allreduce",
       {{"backend", p.allreduce.backend},
        {"link", p.allreduce.link},
        {"by_bytes", PointsJson(p.allreduce.by_bytes)}}},
      {"wire",
       {{"observation_cpu_s", p.wire.observation_cpu_s},
        {"observation_wait_s", p.wire.observation_wait_s},
        {"sample_cpu_s", p.wire.sample_cpu_s},
        {"weights_cpu_s", p.wire.weights_cpu_s}}},
      {"policy",
       {{"parameters", p.policy.parameters},
        {"checkpoint_bytes", p.policy.checkpoint_bytes},
        {"optimizer_bytes", p.policy.optimizer_bytes}}},
  };
  return j.dump(2) + "\n";
}

absl::StatusOr<StageCostProfile> ParseStageCosts(const std::string& text,
                                                 const std::string& origin) {
  const json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat(origin,
                     ": not a JSON object (rl-vla3 bench "
                     "--stage-costs writes one)"));
  }
  StageCostProfile p;
  Fields top(j, "", origin);
  if (top.Text("format") != kFormat) {
    return absl::InvalidArgumentError(absl::StrCat(
        origin, ": format: not \"", kFormat,
        "\" (a file rl-vla3 bench --stage-costs wrote, this version)"));
  }
  p.config = top.Text("config");
  p.gpus = top.Text("gpus");
  p.cores = int(top.Integer("cores", 1, 1 << 16));
  // Every section is read (so that the top level's keys are all known),
  // the first error kept.
  absl::Status children = ParseEnv(top.Object("env"), &p.env);
  const auto keep = [&children](absl::Status s) {
    if (children.ok()) children = std::move(s);
  };
  const auto need = [&origin](const std::vector<Timed>& points,
                              const char* key) {
    return points.empty() ? absl::InvalidArgumentError(absl::StrCat(
                                origin, ": ", key, ": at least one point"))
                          : absl::OkStatus();
  };
  {
    Fields f = top.Object("inference");
    p.inference.device = f.Text("device");
    p.inference.precision = f.Text("precision");
    p.inference.threads = int(f.Integer("threads", 1, 1024));
    p.inference.by_batch = f.Points("by_batch", 1, kMaxCount);
    keep(f.Done(need(p.inference.by_batch, "inference.by_batch")));
  }
  {
    Fields f = top.Object("learner");
    p.learner.device = f.Text("device");
    p.learner.precision = f.Text("precision");
    p.learner.threads = int(f.Integer("threads", 1, 1024));
    p.learner.nice = int(f.Integer("nice", 0, 19));
    p.learner.micro_batch = int(f.Integer("micro_batch", 0, 1 << 20));
    p.learner.by_samples = f.Points("by_samples", 1, kMaxCount);
    keep(f.Done(need(p.learner.by_samples, "learner.by_samples")));
  }
  {
    Fields f = top.Object("allreduce");
    p.allreduce.backend = f.Text("backend");
    p.allreduce.link = f.Text("link");
    p.allreduce.by_bytes = f.Points("by_bytes", 1, kMaxBytes);
    keep(f.Done());
  }
  if (top.Has("wire")) {
    Fields f = top.Object("wire");
    p.wire.observation_cpu_s = f.Number("observation_cpu_s", 0, kMaxSeconds);
    p.wire.observation_wait_s = f.Number("observation_wait_s", 0, kMaxSeconds);
    p.wire.sample_cpu_s = f.Number("sample_cpu_s", 0, kMaxSeconds);
    p.wire.weights_cpu_s = f.Number("weights_cpu_s", 0, kMaxSeconds);
    keep(f.Done());
  }
  {
    Fields f = top.Object("policy");
    p.policy.parameters = f.Integer("parameters", 1, int64_t{1} << 42);
    p.policy.checkpoint_bytes = f.Integer("checkpoint_bytes", 0, 1LL << 50);
    p.policy.optimizer_bytes = f.Integer("optimizer_bytes", 0, 1LL << 50);
    keep(f.Done());
  }
  if (absl::Status s = top.Done(children); !s.ok()) return s;
  return p;
}

absl::StatusOr<StageCostProfile> ReadStageCosts(const std::string& path) {
  absl::StatusOr<std::string> text = ReadBoundedFile(path, kMaxFileBytes);
  if (!text.ok()) return text.status();
  return ParseStageCosts(*text, path);
}

}  // namespace rlvla3
