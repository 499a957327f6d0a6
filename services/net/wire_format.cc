#include "services/net/wire_format.h"

#include <cmath>
#include <cstring>
#include <initializer_list>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "rlvla3/v1/rollout.pb.h"
#include "services/net/taken_bins.h"

namespace rlvla3 {
namespace {

// A segment's camera fields, for errors without a string built per message.
constexpr const char* kSegmentImageFields[kMaxCameras] = {
    "segment.images[0].rgb", "segment.images[1].rgb", "segment.images[2].rgb",
    "segment.images[3].rgb", "segment.images[4].rgb", "segment.images[5].rgb",
    "segment.images[6].rgb", "segment.images[7].rgb"};

void SetTensor(v1::Tensor* t, v1::DType dtype,
               std::initializer_list<int64_t> shape, const void* data,
               size_t bytes) {
  t->set_dtype(dtype);
  t->clear_shape();
  for (int64_t d : shape) t->add_shape(d);
  t->mutable_data()->assign(static_cast<const char*>(data), bytes);
}

size_t DTypeBytes(v1::DType d) {
  switch (d) {
    case v1::DTYPE_UINT8:
      return 1;
    case v1::DTYPE_FLOAT32:
      return 4;
    case v1::DTYPE_INT64:
      return 8;
    default:
      return 0;
  }
}

std::string ShapeText(const google::protobuf::RepeatedField<int64_t>& s) {
  return absl::StrCat("[", absl::StrJoin(s, ", "), "]");
}

absl::Status CheckTensor(const v1::Tensor& t, v1::DType dtype,
                         std::initializer_list<int64_t> shape,
                         absl::string_view field) {
  if (t.dtype() != dtype) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": dtype ", v1::DType_Name(t.dtype()),
                     ", expected ", v1::DType_Name(dtype)));
  }
  bool same = static_cast<size_t>(t.shape_size()) == shape.size();
  size_t numel = 1, i = 0;
  for (int64_t d : shape) {
    numel *= static_cast<size_t>(d);
    if (same && t.shape(static_cast<int>(i)) != d) same = false;
    ++i;
  }
  if (!same) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": shape ", ShapeText(t.shape()), ", expected [",
                     absl::StrJoin(shape, ", "), "]"));
  }
  if (t.data().size() != numel * DTypeBytes(dtype)) {
    return absl::InvalidArgumentError(absl::StrCat(field, ": ", t.data().size(),
                                                   " bytes, expected ",
                                                   numel * DTypeBytes(dtype)));
  }
  return absl::OkStatus();
}

absl::Status CheckFinite(const v1::Tensor& t, absl::string_view field) {
  const size_t n = t.data().size() / sizeof(float);
  for (size_t i = 0; i < n; ++i) {
    float v;
    std::memcpy(&v, t.data().data() + i * sizeof(float), sizeof(float));
    if (!std::isfinite(v)) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ": element ", i, " is not finite"));
    }
  }
  return absl::OkStatus();
}

void SetImage(v1::CameraImage* im, const std::string& name, int64_t rows,
              int height, int width, const uint8_t* data, bool stacked) {
  if (im->name() != name) im->set_name(name);
  const size_t bytes = static_cast<size_t>(rows) * height * width * 3;
  if (stacked) {
    SetTensor(im->mutable_rgb(), v1::DTYPE_UINT8, {rows, height, width, 3},
              data, bytes);
  } else {
    SetTensor(im->mutable_rgb(), v1::DTYPE_UINT8, {height, width, 3}, data,
              bytes);
  }
}

// The message's cameras are `cameras`, by name and in order.
template <typename Message>
absl::Status CheckImageNames(const Message& m,
                             const std::vector<std::string>& cameras,
                             absl::string_view field) {
  bool same = m.images_size() == static_cast<int>(cameras.size());
  for (int i = 0; same && i < m.images_size(); ++i) {
    same = m.images(i).name() == cameras[static_cast<size_t>(i)];
  }
  if (same) return absl::OkStatus();
  std::vector<std::string> got;
  for (const v1::CameraImage& im : m.images()) {
    got.push_back(absl::StrCat("\"", im.name(), "\""));
  }
  std::vector<std::string> want;
  for (const std::string& c : cameras) want.push_back("\"" + c + "\"");
  return absl::InvalidArgumentError(absl::StrCat(
      field, ".images: expected cameras ", absl::StrJoin(want, ", "),
      " in that order (RunSettings.cameras), got ",
      got.empty() ? "none" : absl::StrJoin(got, ", ")));
}

}  // namespace

void EncodeObservation(const ObservationRequest& r, int global_env,
                       const WireShape& shape, v1::Observation* out) {
  out->set_env_id(static_cast<uint32_t>(global_env));
  out->set_task_id(static_cast<uint32_t>(r.task));
  const int C = static_cast<int>(shape.cameras.size());
  while (out->images_size() > C) out->mutable_images()->RemoveLast();
  while (out->images_size() < C) out->add_images();
  for (int c = 0; c < C; ++c) {
    SetImage(out->mutable_images(c), shape.cameras[static_cast<size_t>(c)], 1,
             shape.height, shape.width, r.images[static_cast<size_t>(c)],
             false);
  }
  SetTensor(out->mutable_proprio(), v1::DTYPE_FLOAT32, {shape.proprio_dim},
            r.proprio, sizeof(float) * shape.proprio_dim);
  out->set_sent_unix_ns(r.submit_ns);
  out->clear_notice();
}

void EncodeEnvNotice(int first_env, absl::Span<const char> parked,
                     v1::Observation* out) {
  out->Clear();
  v1::EnvNotice* n = out->mutable_notice();
  n->set_first_env_id(static_cast<uint32_t>(first_env));
  n->set_num_envs(static_cast<uint32_t>(parked.size()));
  for (size_t i = 0; i < parked.size(); ++i) {
    if (parked[i]) n->add_parked_env_ids(static_cast<uint32_t>(first_env + i));
  }
}

absl::Status CheckEnvNotice(const v1::Observation& m, int num_envs) {
  const v1::EnvNotice& n = m.notice();
  const uint64_t first = n.first_env_id(), end = first + n.num_envs();
  if (n.num_envs() == 0 || end > static_cast<uint64_t>(num_envs)) {
    return absl::InvalidArgumentError(
        absl::StrCat("observation.notice.num_envs: envs [", first, ", ", end,
                     ") are not a non-empty range below ", num_envs));
  }
  for (uint32_t e : n.parked_env_ids()) {
    if (e < first || e >= end) {
      return absl::InvalidArgumentError(absl::StrCat(
          "observation.notice.parked_env_ids: env ", e,
          " is not one of the stream's envs [", first, ", ", end, ")"));
    }
  }
  return absl::OkStatus();
}

void EncodeVersionNotice(uint64_t version, v1::ActionReply* out) {
  out->Clear();
  out->set_version_notice(true);
  out->set_policy_version(version);
}

absl::Status CheckObservation(const v1::Observation& m, const WireShape& shape,
                              int num_envs, int num_tasks) {
  if (m.env_id() >= static_cast<uint32_t>(num_envs)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "observation.env_id: ", m.env_id(), " is not below ", num_envs));
  }
  if (m.task_id() >= static_cast<uint32_t>(num_tasks)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "observation.task_id: ", m.task_id(), " is not below ", num_tasks));
  }
  if (absl::Status s = CheckImageNames(m, shape.cameras, "observation");
      !s.ok()) {
    return s;
  }
  for (int i = 0; i < m.images_size(); ++i) {
    if (absl::Status s = CheckTensor(
            m.images(i).rgb(), v1::DTYPE_UINT8, {shape.height, shape.width, 3},
            absl::StrCat("observation.images[", i, "].rgb"));
        !s.ok()) {
      return s;
    }
  }
  if (absl::Status s = CheckTensor(m.proprio(), v1::DTYPE_FLOAT32,
                                   {shape.proprio_dim}, "observation.proprio");
      !s.ok()) {
    return s;
  }
  return CheckFinite(m.proprio(), "observation.proprio");
}

ObservationRequest ObservationView(const v1::Observation& m) {
  ObservationRequest r;
  r.env = static_cast<int>(m.env_id());
  r.task = static_cast<int>(m.task_id());
  for (int c = 0; c < m.images_size() && c < kMaxCameras; ++c) {
    r.images[static_cast<size_t>(c)] =
        reinterpret_cast<const uint8_t*>(m.images(c).rgb().data().data());
  }
  r.proprio = reinterpret_cast<const float*>(m.proprio().data().data());
  return r;
}

void EncodeReply(const ActionReply& r, const WireShape& shape,
                 v1::ActionReply* out) {
  const int64_t K = shape.chunk, A = shape.action_dim;
  out->set_env_id(static_cast<uint32_t>(r.env));
  SetTensor(out->mutable_actions(), v1::DTYPE_FLOAT32, {K, A}, r.actions,
            sizeof(float) * K * A);
  SetTensor(out->mutable_action_tokens(), TakenDtype(shape.taken_bytes), {K, A},
            r.tokens, static_cast<size_t>(K * A * shape.taken_bytes));
  SetTensor(out->mutable_log_probs(), v1::DTYPE_FLOAT32, {K}, r.log_probs,
            sizeof(float) * K);
  out->set_value(r.value);
  out->set_policy_version(r.version);
  out->set_error_code(0);
  out->clear_error_message();
  out->set_version_notice(false);
}

void EncodeErrorReply(int env, const absl::Status& status,
                      v1::ActionReply* out) {
  out->Clear();
  out->set_env_id(static_cast<uint32_t>(env));
  out->set_error_code(static_cast<int32_t>(status.code()));
  out->set_error_message(std::string(status.message()));
}

absl::Status CheckReply(const v1::ActionReply& m, const WireShape& shape) {
  if (m.error_code() != 0) {
    return absl::Status(static_cast<absl::StatusCode>(m.error_code()),
                        absl::StrCat("inference refused env ", m.env_id(),
                                     "'s observation: ", m.error_message()));
  }
  const int64_t K = shape.chunk, A = shape.action_dim;
  if (absl::Status s =
          CheckTensor(m.actions(), v1::DTYPE_FLOAT32, {K, A}, "reply.actions");
      !s.ok()) {
    return s;
  }
  if (absl::Status s =
          CheckTensor(m.action_tokens(), TakenDtype(shape.taken_bytes), {K, A},
                      "reply.action_tokens");
      !s.ok()) {
    return s;
  }
  return CheckTensor(m.log_probs(), v1::DTYPE_FLOAT32, {K}, "reply.log_probs");
}

ActionReply ReplyView(const v1::ActionReply& m) {
  ActionReply r;
  r.env = static_cast<int>(m.env_id());
  r.version = m.policy_version();
  r.actions = reinterpret_cast<const float*>(m.actions().data().data());
  r.tokens = reinterpret_cast<const uint8_t*>(m.action_tokens().data().data());
  r.log_probs = reinterpret_cast<const float*>(m.log_probs().data().data());
  r.value = m.value();
  return r;
}

void EncodeSegment(const RolloutSegment& s, int global_env,
                   v1::TrajectorySegment* out) {
  const SegmentShape& sh = s.shape;
  const int64_t n = s.n, rows = s.n + (s.has_bootstrap ? 1 : 0);
  out->set_env_id(static_cast<uint32_t>(global_env));
  out->set_task_id(static_cast<uint32_t>(s.task));
  const int C = sh.num_cameras();
  while (out->images_size() > C) out->mutable_images()->RemoveLast();
  while (out->images_size() < C) out->add_images();
  for (int c = 0; c < C; ++c) {
    SetImage(out->mutable_images(c), sh.cameras[static_cast<size_t>(c)], rows,
             sh.height, sh.width, s.camera_at(c, 0), true);
  }
  SetTensor(out->mutable_proprio(), v1::DTYPE_FLOAT32, {rows, sh.proprio_dim},
            s.proprio.data(), sizeof(float) * rows * sh.proprio_dim);
  SetTensor(out->mutable_action_tokens(), TakenDtype(sh.taken_bytes),
            {n, sh.chunk, sh.action_dim}, s.tokens.data(),
            static_cast<size_t>(n) * s.taken_row());
  SetTensor(out->mutable_behaviour_log_probs(), v1::DTYPE_FLOAT32,
            {n, sh.chunk}, s.log_probs.data(), sizeof(float) * n * sh.chunk);
  SetTensor(out->mutable_values(), v1::DTYPE_FLOAT32, {n}, s.values.data(),
            sizeof(float) * n);
  SetTensor(out->mutable_rewards(), v1::DTYPE_FLOAT32, {n}, s.rewards.data(),
            sizeof(float) * n);
  SetTensor(out->mutable_dones(), v1::DTYPE_UINT8, {n}, s.terminal.data(),
            static_cast<size_t>(n));
  SetTensor(out->mutable_executed(), v1::DTYPE_UINT8, {n}, s.executed.data(),
            static_cast<size_t>(n));
  SetTensor(out->mutable_policy_versions(), v1::DTYPE_INT64, {n},
            s.versions.data(), sizeof(uint64_t) * n);
  out->set_ends_episode(s.episode_end);
  out->set_success(s.success);
  out->set_run_id(s.run_id);
  out->set_index(s.index);
  out->set_group(s.group);
  out->set_decisions(static_cast<uint32_t>(n));
  out->set_has_bootstrap(s.has_bootstrap);
  out->set_episode_return(s.episode_return);
}

namespace {

// The segment's identity and counts, before any tensor is read.
absl::Status CheckSegmentHeader(const v1::TrajectorySegment& m,
                                const SegmentShape& sh,
                                const SegmentLimits& limits) {
  const int64_t n = m.decisions();
  // GRPO: an empty segment that ends its episode abandons the episode (a
  // crashed env); its group is dropped at once.
  const int64_t least = limits.grpo && m.ends_episode() ? 0 : 1;
  if (n < least || n > sh.capacity) {
    return absl::InvalidArgumentError(absl::StrCat("segment.decisions: ", n,
                                                   " is not in [", least, ", ",
                                                   sh.capacity, "]"));
  }
  if (m.env_id() >= static_cast<uint32_t>(limits.num_envs)) {
    return absl::InvalidArgumentError(
        absl::StrCat("segment.env_id: ", m.env_id(), " is not below ",
                     limits.num_envs, " (the run's global env ids)"));
  }
  if (m.task_id() >= static_cast<uint32_t>(limits.num_tasks)) {
    return absl::InvalidArgumentError(
        absl::StrCat("segment.task_id: ", m.task_id(), " is not below ",
                     limits.num_tasks, " (rows of the instruction table)"));
  }
  if (m.index() < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("segment.index: ", m.index(), " is negative"));
  }
  if (!std::isfinite(m.episode_return())) {
    return absl::InvalidArgumentError("segment.episode_return: not finite");
  }
  if (m.success() && !m.ends_episode()) {
    return absl::InvalidArgumentError(
        "segment.success: set on a segment that does not end its episode");
  }
  if (limits.grpo && !m.ends_episode()) {
    return absl::InvalidArgumentError(
        "segment.ends_episode: false, but GRPO segments are whole episodes");
  }
  if (n == 0 && m.has_bootstrap()) {
    return absl::InvalidArgumentError(
        "segment.has_bootstrap: set on a segment with no decisions");
  }
  return absl::OkStatus();
}

// Per-decision values: flags, counts and versions in range, episode ends
// consistent with the segment's flags.
absl::Status CheckSegmentValues(const v1::TrajectorySegment& m,
                                const SegmentShape& sh,
                                const SegmentLimits& limits) {
  const int64_t n = m.decisions();
  const int max_exec =
      limits.execute_steps > 0 ? limits.execute_steps : sh.chunk;
  const auto* dones = reinterpret_cast<const uint8_t*>(m.dones().data().data());
  const auto* exec =
      reinterpret_cast<const uint8_t*>(m.executed().data().data());
  for (int64_t t = 0; t < n; ++t) {
    if (dones[t] > 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "segment.dones: element ", t, " is ", int{dones[t]}, ", not 0 or 1"));
    }
    if (exec[t] < 1 || exec[t] > max_exec) {
      return absl::InvalidArgumentError(
          absl::StrCat("segment.executed: element ", t, " is ", int{exec[t]},
                       ", not a count of chunk steps in [1, ", max_exec, "]"));
    }
    if (limits.grpo && dones[t] != 0 && t + 1 < n) {
      return absl::InvalidArgumentError(absl::StrCat(
          "segment.dones: element ", t,
          " ends the episode before the segment's last decision (GRPO "
          "segments are one episode)"));
    }
    int64_t v;
    std::memcpy(&v, m.policy_versions().data().data() + t * sizeof(v),
                sizeof(v));
    if (v < 0 || static_cast<uint64_t>(v) > limits.max_version) {
      return absl::InvalidArgumentError(absl::StrCat(
          "segment.policy_versions: element ", t, " is ", v,
          ", not a version the learner has published (<= ", limits.max_version,
          ")"));
    }
  }
  if (n == 0) return absl::OkStatus();
  const bool last_done = dones[n - 1] != 0;
  if (m.ends_episode() && !last_done) {
    return absl::InvalidArgumentError(
        "segment.ends_episode: set, but the last decision's done is 0");
  }
  if (!limits.grpo && !last_done && !m.has_bootstrap()) {
    return absl::InvalidArgumentError(
        "segment.has_bootstrap: false, but the last decision did not end its "
        "episode (PPO needs the next observation for its value estimate)");
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status DecodeSegment(const v1::TrajectorySegment& m,
                           const SegmentLimits& limits, RolloutSegment* into) {
  const SegmentShape& sh = into->shape;
  if (absl::Status s = CheckSegmentHeader(m, sh, limits); !s.ok()) return s;
  const int64_t n = m.decisions();
  const int64_t rows = n + (m.has_bootstrap() ? 1 : 0);
  if (absl::Status s = CheckImageNames(m, sh.cameras, "segment"); !s.ok()) {
    return s;
  }
  struct Copy {
    const v1::Tensor* from;
    void* to;
  };
  Copy copies[kMaxCameras + 8];
  int n_copies = 0;
  absl::Status status;
  auto check = [&](const v1::Tensor& t, v1::DType dtype,
                   std::initializer_list<int64_t> shape, const char* field,
                   void* to) {
    if (!status.ok()) return;
    status = CheckTensor(t, dtype, shape, field);
    if (status.ok() && dtype == v1::DTYPE_FLOAT32)
      status = CheckFinite(t, field);
    copies[n_copies++] = {&t, to};
  };
  for (int c = 0; c < sh.num_cameras(); ++c) {
    check(m.images(c).rgb(), v1::DTYPE_UINT8, {rows, sh.height, sh.width, 3},
          kSegmentImageFields[c], into->camera_at(c, 0));
  }
  check(m.proprio(), v1::DTYPE_FLOAT32, {rows, sh.proprio_dim},
        "segment.proprio", into->proprio.data());
  check(m.action_tokens(), TakenDtype(sh.taken_bytes),
        {n, sh.chunk, sh.action_dim}, "segment.action_tokens",
        into->tokens.data());
  check(m.behaviour_log_probs(), v1::DTYPE_FLOAT32, {n, sh.chunk},
        "segment.behaviour_log_probs", into->log_probs.data());
  check(m.values(), v1::DTYPE_FLOAT32, {n}, "segment.values",
        into->values.data());
  check(m.rewards(), v1::DTYPE_FLOAT32, {n}, "segment.rewards",
        into->rewards.data());
  check(m.dones(), v1::DTYPE_UINT8, {n}, "segment.dones",
        into->terminal.data());
  check(m.executed(), v1::DTYPE_UINT8, {n}, "segment.executed",
        into->executed.data());
  check(m.policy_versions(), v1::DTYPE_INT64, {n}, "segment.policy_versions",
        into->versions.data());
  if (!status.ok()) return status;
  if (absl::Status s = CheckSegmentValues(m, sh, limits); !s.ok()) return s;
  if (absl::Status s = CheckTakenBins(m.action_tokens(), sh.taken_bytes,
                                      limits.bins, "segment.action_tokens");
      !s.ok()) {
    return s;
  }
  for (int i = 0; i < n_copies; ++i) {
    std::memcpy(copies[i].to, copies[i].from->data().data(),
                copies[i].from->data().size());
  }
  into->env_id = static_cast<int>(m.env_id());
  into->task = static_cast<int>(m.task_id());
  into->run_id = m.run_id();
  into->index = m.index();
  into->group = m.group();
  into->n = static_cast<int>(n);
  into->has_bootstrap = m.has_bootstrap();
  into->episode_end = m.ends_episode();
  into->success = m.success();
  into->episode_return = m.episode_return();
  return absl::OkStatus();
}

WireShape WireShapeOf(const SegmentShape& s) {
  return WireShape{s.height, s.width,      s.cameras,    s.proprio_dim,
                   s.chunk,  s.action_dim, s.taken_bytes};
}

}  // namespace rlvla3
