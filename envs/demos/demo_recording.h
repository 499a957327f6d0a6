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

// Which of a file's splits an episode is in (robomimic's mask/<split>):
// trained on, held out for the validation loss, or in neither.
enum class DemoSplit { kTrain, kValid, kUnused };

struct DemoEpisode {
  std::string name;  // its group in the file (demo_N), "" if not from one
  DemoSplit split = DemoSplit::kTrain;
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
  // Frames are stored top row first ("opencv"), as every DemoRecording in
  // memory holds them; a file may say "opengl" (bottom row first, as
  // robosuite renders and LIBERO stores them): the reader flips those.
  std::string image_convention = "opencv";
  // The file's instruction (LIBERO's problem_info), where an episode has
  // none of its own.
  std::string instruction;
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
