// Fuzzes the HDF5 demonstration reader (envs/demos/libero_file.h) with
// files mutated from written ones (rl-vla3's, LIBERO's and robomimic's
// layouts), each read both ways a run reads a file. Properties: never crashes,
// hangs or allocates past the read options' bounds (checked from the extents
// before any read); a refusal is INVALID_ARGUMENT naming the file; an accepted
// recording is whole: every episode's steps within the bounds and each of
// its arrays exactly steps x the layout's widths; every HDF5 object the read
// opened is closed again, on every path.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "envs/demos/hdf5_file.h"
#include "envs/demos/isolated_read.h"
#include "envs/demos/libero_file.h"
#include "tests/fuzz/fuzz_file.h"

namespace {

// Two ways a run reads a file: its own layout (every <cam>_rgb, LIBERO's
// proprio), or a field's mapped (robomimic's and LIBERO's camera names,
// a quaternion entry, frames resized to 4x6, the masks).
rlvla3::DemoReadOptions Options(bool mapped) {
  rlvla3::DemoReadOptions o;
  o.max_steps = 512;  // a fuzz run's budget: 512 x 64 x 64 x 3 per camera
  o.max_image_side = 64;
  o.max_vector = 64;
  if (mapped) {
    o.cameras = {{"agentview", {"agentview_rgb", "agentview_image"}},
                 {"wrist", {"eye_in_hand_rgb", "robot0_eye_in_hand_image"}}};
    o.proprio = {{"robot0_eef_pos"},
                 {"robot0_eef_quat", /*quat_to_axis_angle=*/true},
                 {"robot0_gripper_qpos"}};
    o.image_height = 4;
    o.image_width = 6;
    o.resize = true;
  }
  return o;
}

int ReadOnce(const rlvla3::fuzz::FuzzFile& file, bool mapped) {
  const rlvla3::DemoReadOptions o = Options(mapped);
#ifdef RLVLA3_LIBFUZZER
  // Fuzzing: the reader in this process, where libFuzzer sees its coverage
  // (a crash inside HDF5 is HDF5's; run with -fork=1 -ignore_crashes=1).
  absl::StatusOr<rlvla3::DemoRecording> r =
      rlvla3::ReadLiberoHdf5(file.path(), o);
#else
  // Replaying the corpus: as a run reads a user's file, in a child first
  // (the corpus holds files that crash HDF5 itself).
  absl::StatusOr<rlvla3::DemoRecording> r =
      rlvla3::ReadLiberoHdf5Isolated(file.path(), o);
#endif
  if (rlvla3::OpenHdf5Objects() != 0) std::abort();
  if (!r.ok()) {
    if (r.status().code() != absl::StatusCode::kInvalidArgument) std::abort();
    if (r.status().message().rfind(file.path() + ": ", 0) != 0) std::abort();
    return 0;
  }
  for (const rlvla3::DemoEpisode& e : r->episodes) {
    const size_t t = static_cast<size_t>(e.steps);
    if (e.steps < 1 || e.steps > o.max_steps) std::abort();
    if (e.actions.size() != t * static_cast<size_t>(r->action_size)) {
      std::abort();
    }
    if (e.images.size() != r->cameras.size() || e.rewards.size() != t ||
        e.dones.size() != t || e.proprio.size() != r->proprio.size()) {
      std::abort();
    }
    for (size_t c = 0; c < r->cameras.size(); ++c) {
      const rlvla3::DemoCamera& cam = r->cameras[c];
      if (e.images[c].size() !=
          t * static_cast<size_t>(cam.height * cam.width * 3)) {
        std::abort();
      }
    }
  }
  return 0;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const rlvla3::fuzz::FuzzFile file(data, size, "demo.hdf5");
  ReadOnce(file, /*mapped=*/false);
  return ReadOnce(file, /*mapped=*/true);
}
