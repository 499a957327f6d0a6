// File: envs/demos/demo_recording.h
// -----------------------------------------------------------------------------
// DemoRecording: demonstrations as an env recorded them, before any policy
// chunks or tokenizes them: per episode, each camera's frames, each proprio
// entry, the raw actions, rewards and dones, step by step; with the file's
// cameras, proprio entries and env metadata. It is what a LIBERO/robomimic
// HDF5 file holds (libero_file.h writes and reads it).
//
// Example:
//   DemoRecording r;
//   r.cameras = {{"agentview", 64, 64}, {"eye_in_hand", 64, 64}};
//   r.proprio = {{"ee_pos", 3}, {"ee_ori", 3}, {"gripper_states", 2}};
//   r.episodes.push_back(episode);  // steps x (images, proprio, action...)
// -----------------------------------------------------------------------------
#ifndef RLVLA3_ENVS_DEMOS_DEMO_RECORDING_H_
#define RLVLA3_ENVS_DEMOS_DEMO_RECORDING_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace rlvla3 {

struct DemoCamera {
  std::string name;  // stored as obs/<name>_rgb
  int64_t height = 0, width = 0;
};

struct DemoProprioEntry {
  std::string name;  // stored as obs/<name>
  int64_t size = 0;  // values per step
};

struct DemoEpisode {
  std::string task, instruction;
  int64_t init_id = 0;  // the env's initial state
  int64_t steps = 0;
  std::vector<std::vector<uint8_t>> images;  // per camera: [steps, H, W, 3]
  std::vector<std::vector<float>> proprio;   // per entry: [steps, size]
  std::vector<float> actions;                // [steps, action_size]
  std::vector<float> rewards;                // [steps]
  std::vector<uint8_t> dones;                // [steps]: 1 where it ended
};

struct DemoRecording {
  std::string env_name;  // the env or suite that recorded them
  std::string env_args;  // JSON: robomimic's env_args (env_name, kwargs)
  std::vector<DemoCamera> cameras;
  std::vector<DemoProprioEntry> proprio;
  int64_t action_size = 7;
  std::vector<DemoEpisode> episodes;
  int64_t attempts = 0;  // episodes the recorder ran, kept or not
  // The same per task (by task name), where the recorder knows it; a file
  // holds one task's (WriteLiberoHdf5 writes `attempts` only).
  std::map<std::string, int64_t> attempts_by_task;
};

}  // namespace rlvla3

#endif  // RLVLA3_ENVS_DEMOS_DEMO_RECORDING_H_
