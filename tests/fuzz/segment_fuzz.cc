// Fuzzes the learner's segment intake: decode (every field checked against
// the run's ranges) and, for a segment it accepts, the learner's gather of
// every decision into policy inputs (the instruction-table lookup a bad
// task_id once crashed). Two kinds of input, by the first byte:
//   even: the rest is a TrajectorySegment on the wire, as a client sends it;
//   odd:  the rest is a list of edits (field, element, value) to a valid
//         segment, so most inputs get past the wire checks to the values.
// Properties: never crashes; a refusal is INVALID_ARGUMENT naming a
// "segment." field (the cameras' names, order and count among them) and
// copies nothing; an accepted segment re-encodes and decodes to the same
// segment, every camera's images included.
#include <torch/torch.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "rlvla3/v1/rollout.pb.h"
#include "services/learner/learner_core.h"
#include "services/net/wire_format.h"

namespace {

using rlvla3::RolloutSegment;
using rlvla3::SegmentLimits;
using rlvla3::SegmentShape;

constexpr int kTasks = 3;

SegmentShape Shape() {
  SegmentShape s;
  s.cameras = {"agentview", "wrist", "sideview"};  // more than the default two
  s.height = 4;
  s.width = 3;
  s.chunk = 2;
  s.capacity = 3;
  return s;
}

SegmentLimits Limits(bool grpo) {
  SegmentLimits l;
  l.num_envs = 6;
  l.num_tasks = kTasks;
  l.execute_steps = 2;
  l.grpo = grpo;
  l.max_version = 5;
  return l;
}

rlvla3::v1::TrajectorySegment Valid() {
  RolloutSegment s(Shape());
  s.n = 3;
  s.has_bootstrap = true;
  for (size_t i = 0; i < s.images.size(); ++i) s.images[i] = uint8_t(i);
  for (int t = 0; t < 3; ++t) {
    s.terminal[t] = t == 0;
    s.executed[t] = 1;
    s.versions[t] = 4;
  }
  s.task = 2;
  rlvla3::v1::TrajectorySegment m;
  rlvla3::EncodeSegment(s, 1, &m);
  return m;
}

template <typename T>
void Poke(rlvla3::v1::Tensor* t, uint8_t at, uint64_t bits) {
  const size_t n = t->data().size() / sizeof(T);
  if (n == 0) return;
  T v;
  std::memcpy(&v, &bits, sizeof(T));
  std::memcpy(t->mutable_data()->data() + (at % n) * sizeof(T), &v, sizeof(T));
}

// Renames, swaps, drops or adds a camera image (another name, order or count
// than the run's cameras: refused naming segment.images).
void EditCameras(uint8_t at, uint64_t v, rlvla3::v1::TrajectorySegment* m) {
  static const char* const kNames[] = {"agentview", "wrist", "sideview",
                                       "overhead", ""};
  const int n = m->images_size();
  switch (v % 4) {
    case 0:
      if (n > 0) m->mutable_images(at % n)->set_name(kNames[(v >> 8) % 5]);
      break;
    case 1:
      if (n > 1) m->mutable_images()->SwapElements(at % n, (v >> 8) % n);
      break;
    case 2:
      if (n > 0) m->mutable_images()->RemoveLast();
      break;
    default:
      if (n > 0 && n < 12) {
        rlvla3::v1::CameraImage copy = m->images(at % n);
        copy.set_name(kNames[(v >> 8) % 5]);
        *m->add_images() = copy;
      }
      break;
  }
}

// One camera's image: its row count (`rows`) or its byte count.
void EditImage(bool rows, uint8_t at, uint64_t v,
               rlvla3::v1::TrajectorySegment* m) {
  if (m->images_size() == 0) return;
  rlvla3::v1::Tensor* t =
      m->mutable_images(at % m->images_size())->mutable_rgb();
  if (!rows) {
    t->mutable_data()->resize(v % 128);
  } else if (t->shape_size() > 0) {
    t->set_shape(0, static_cast<int64_t>(v % 8));
  }
}

// Applies 10-byte edits: field, element, 8 bytes of value.
void Edit(const uint8_t* d, size_t size, rlvla3::v1::TrajectorySegment* m) {
  for (; size >= 10; d += 10, size -= 10) {
    uint64_t v;
    std::memcpy(&v, d + 2, 8);
    const uint8_t at = d[1];
    switch (d[0] % 21) {
      case 0:
        m->set_env_id(static_cast<uint32_t>(v));
        break;
      case 1:
        m->set_task_id(static_cast<uint32_t>(v));
        break;
      case 2:
        m->set_decisions(static_cast<uint32_t>(v));
        break;
      case 3:
        m->set_has_bootstrap(v & 1);
        break;
      case 4:
        m->set_ends_episode(v & 1);
        break;
      case 5:
        m->set_success(v & 1);
        break;
      case 6:
        m->set_index(static_cast<int64_t>(v));
        break;
      case 7: {
        float f;
        std::memcpy(&f, &v, 4);
        m->set_episode_return(f);
        break;
      }
      case 8:
        Poke<uint8_t>(m->mutable_dones(), at, v);
        break;
      case 9:
        Poke<uint8_t>(m->mutable_executed(), at, v);
        break;
      case 10:
        Poke<int64_t>(m->mutable_policy_versions(), at, v);
        break;
      case 11:
        Poke<float>(m->mutable_rewards(), at, v);
        break;
      case 12:
        Poke<float>(m->mutable_values(), at, v);
        break;
      case 13:
        Poke<float>(m->mutable_behaviour_log_probs(), at, v);
        break;
      case 14:
        Poke<float>(m->mutable_proprio(), at, v);
        break;
      case 15:
        Poke<uint8_t>(m->mutable_action_tokens(), at, v);
        break;
      case 16:
      case 18:
        EditImage(d[0] % 21 == 16, at, v, m);
        break;
      case 17:
        m->mutable_dones()->set_dtype(static_cast<rlvla3::v1::DType>(v % 12));
        break;
      case 19:  // the cameras: a name, the order, the count
        EditCameras(at, v, m);
        break;
      default:
        m->set_group(v);
        break;
    }
  }
}

// The learner's intake of an accepted segment: every decision (and the
// bootstrap row) gathered into policy inputs, tokens included.
void Gather(RolloutSegment* s, const at::Tensor& text,
            const at::Tensor& text_len) {
  if (s->n == 0) return;
  std::vector<RolloutSegment*> segs(static_cast<size_t>(s->n), s);
  std::vector<int> slots;
  for (int t = 0; t < s->n; ++t) slots.push_back(t);
  at::Tensor tokens;
  rlvla3::PolicyInput in =
      rlvla3::GatherFromSegments(segs, slots, text, text_len, &tokens);
  if (in.text.size(0) != s->n || tokens.max().item<int64_t>() > 255) {
    std::abort();
  }
  if (s->has_bootstrap) {  // the value estimate's input: no tokens
    const int row = s->n;
    RolloutSegment* one = s;
    rlvla3::GatherFromSegments(absl::MakeConstSpan(&one, 1),
                               absl::MakeConstSpan(&row, 1), text, text_len,
                               nullptr);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bool init = [] {
    at::set_num_threads(1);
    return true;
  }();
  (void)init;
  static const rlvla3::v1::TrajectorySegment valid = Valid();
  static const at::Tensor text = torch::ones({kTasks, 5}, torch::kLong);
  static const at::Tensor text_len = torch::full({kTasks}, 5, torch::kLong);
  if (size == 0) return 0;
  rlvla3::v1::TrajectorySegment m;
  const bool grpo = (data[0] & 2) != 0;
  if (data[0] & 1) {
    m = valid;
    Edit(data + 1, size - 1, &m);
  } else if (!m.ParseFromArray(data + 1, static_cast<int>(size - 1))) {
    return 0;
  }
  RolloutSegment s(Shape());
  const absl::Status st = rlvla3::DecodeSegment(m, Limits(grpo), &s);
  if (!st.ok()) {
    if (st.code() != absl::StatusCode::kInvalidArgument ||
        st.message().rfind("segment.", 0) != 0 || s.n != 0) {
      std::abort();
    }
    return 0;
  }
  Gather(&s, text, text_len);
  rlvla3::v1::TrajectorySegment again;
  rlvla3::EncodeSegment(s, s.env_id, &again);
  RolloutSegment back(Shape());
  if (!rlvla3::DecodeSegment(again, Limits(grpo), &back).ok() ||
      back.n != s.n || back.task != s.task ||
      std::memcmp(back.versions.data(), s.versions.data(),
                  sizeof(uint64_t) * s.n) != 0) {
    std::abort();
  }
  for (int c = 0; c < s.shape.num_cameras(); ++c) {
    if (std::memcmp(back.camera_at(c, 0), s.camera_at(c, 0),
                    s.camera_bytes * (s.n + (s.has_bootstrap ? 1 : 0))) != 0) {
      std::abort();
    }
  }
  return 0;
}
