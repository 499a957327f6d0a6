// File: envs/demos/libero_file.h
// -----------------------------------------------------------------------------
// Demonstrations in the HDF5 layout LIBERO and robomimic share, which the
// field's tools (h5py, robomimic's and LIBERO's loaders) read:
//
//   /data              attrs: env_args (JSON, "type" and "env_name"), total,
//                             num_demos, problem_info (JSON: problem_name,
//                             language_instruction), macros_image_convention,
//                             env_name, attempts (episodes run, kept or not)
//   /data/demo_N       attrs: num_samples; task, instruction, init_id (ours)
//   /data/demo_N/obs/<key>   uint8 [T, H, W, 3] (a camera) or numbers [T, n]
//   /data/demo_N/actions     numbers [T, A]
//   /data/demo_N/rewards, dones   numbers [T] (optional when read)
//   /mask/train, /mask/valid      demo names (robomimic's splits)
//
// Reading takes demo_N in numeric order. The cameras: the obs keys
// `DemoReadOptions::cameras` names (the first of each camera's candidates
// the first demo has), or, when none is named, every <cam>_rgb. Frames of a
// file whose macros_image_convention is "opengl" are flipped to top row
// first; frames of another size are resized when asked, else refused. The
// proprio: the obs entries named, a quaternion entry (x, y, z, w, as
// robosuite writes it) turned into an axis-angle when asked. An episode's
// instruction: its own attribute, else problem_info's. Anything else is
// refused naming the file, the dataset and the reason.
//
// Example:
//   absl::Status s = WriteLiberoHdf5(recording, "runs/demos/lift_demo.hdf5");
//   absl::StatusOr<DemoRecording> r = ReadLiberoHdf5("lift_demo.hdf5");
// -----------------------------------------------------------------------------
#ifndef RLVLA3_ENVS_DEMOS_LIBERO_FILE_H_
#define RLVLA3_ENVS_DEMOS_LIBERO_FILE_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "envs/demos/demo_recording.h"

namespace rlvla3 {

// One camera to read: named `name` in the recording, stored under the first
// of `keys` (obs/<key>) the file has.
struct DemoCameraSource {
  std::string name;
  std::vector<std::string> keys;
};

// One proprio entry: obs/<key>; a quaternion (x, y, z, w) read as its
// axis-angle (3 values) when `quat_to_axis_angle`.
struct DemoProprioSource {
  std::string key;
  bool quat_to_axis_angle = false;
};

struct DemoReadOptions {
  // Empty: every <cam>_rgb of the first demo, under its own name.
  std::vector<DemoCameraSource> cameras;
  std::vector<DemoProprioSource> proprio = {
      {"ee_pos"}, {"ee_ori"}, {"gripper_states"}};
  // "auto" (the file's macros_image_convention; absent: "opencv"),
  // "opencv" (top row first) or "opengl" (bottom row first: flipped).
  std::string image_convention = "auto";
  // The frames' size wanted (0: as stored). Another size is resized when
  // `resize` (area-averaged for whole factors, else bilinear), else refused
  // with `resize_hint` appended to the message.
  int64_t image_height = 0, image_width = 0;
  bool resize = false;
  std::string resize_hint;
  // Appended to the refusal of a proprio entry the file does not have.
  std::string proprio_hint;
  // Honour mask/train and mask/valid (robomimic's splits) when present.
  bool masks = true;
  // What a file may declare, checked from the extents before any dataset is
  // read: steps per demo (1..max_steps, from its actions), a camera's
  // height and width, an action's or a proprio entry's width. Every other
  // dataset of a demo must then have exactly its demo's steps.
  int64_t max_steps = 100000;
  int64_t max_image_side = 4096;
  int64_t max_vector = 1024;
};

absl::Status WriteLiberoHdf5(const DemoRecording& recording,
                             const std::string& path);
absl::StatusOr<DemoRecording> ReadLiberoHdf5(
    const std::string& path, const DemoReadOptions& options = {});

}  // namespace rlvla3

#endif  // RLVLA3_ENVS_DEMOS_LIBERO_FILE_H_
