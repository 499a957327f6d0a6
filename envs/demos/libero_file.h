// File: envs/demos/libero_file.h
// -----------------------------------------------------------------------------
// Demonstrations in the HDF5 layout LIBERO and robomimic share, which the
// field's tools (h5py, robomimic, LIBERO's loaders) read:
//
//   /data                       attrs: env_name, env_args (JSON), total,
//                                      attempts (episodes run, kept or not)
//   /data/demo_N                attrs: num_samples, task, instruction, init_id
//   /data/demo_N/obs/<cam>_rgb  uint8   [T, H, W, 3]
//   /data/demo_N/obs/<entry>    float64 [T, size]   (ee_pos, ee_ori, ...)
//   /data/demo_N/actions        float64 [T, A]
//   /data/demo_N/rewards        float64 [T]
//   /data/demo_N/dones          uint8   [T]
//
// Reading takes demo_N in numeric order, the cameras every demo's obs has
// (<cam>_rgb), and the proprio entries asked for (LIBERO's by default);
// rewards and dones may be stored as any numbers. Anything else is refused
// naming the file, the dataset and the reason.
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

struct DemoReadOptions {
  // obs/<entry> datasets read as proprio, in this order.
  std::vector<std::string> proprio = {"ee_pos", "ee_ori", "gripper_states"};
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
