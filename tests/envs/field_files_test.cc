// Demo files as LIBERO's and robomimic's own tools write them (issue 61):
// tests/envs/field_layouts.py, an independent h5py writer following their
// published layouts, rewrites an rl-vla3 file; reading it back gives the
// same frames and proprio (LIBERO's upside-down frames at twice the size
// flipped and resized, robomimic's quaternions as axis-angles, its
// mask/valid split kept apart), and a file rl-vla3 writes passes the
// lookups their loaders make.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "envs/demos/libero_file.h"
#include "tests/test_dir.h"

namespace rlvla3 {
namespace {

constexpr int64_t kH = 4, kW = 6;

// Five episodes of 3..7 steps, cameras agentview and eye_in_hand (4x6),
// small rotations (under pi, where every axis-angle convention agrees).
DemoRecording Recording() {
  DemoRecording r;
  r.env_name = "rl-vla3";
  r.env_args = R"({"env_name": "rl-vla3", "type": 1, "env_kwargs": {}})";
  r.cameras = {{"agentview", kH, kW}, {"eye_in_hand", kH, kW}};
  r.proprio = {{"ee_pos", 3}, {"ee_ori", 3}, {"gripper_states", 2}};
  r.attempts = 6;
  for (int64_t ep = 0; ep < 5; ++ep) {
    DemoEpisode e;
    e.task = "lift";
    e.instruction = "lift the red cube";
    e.steps = 3 + ep;
    for (size_t c = 0; c < r.cameras.size(); ++c) {
      std::vector<uint8_t> img(static_cast<size_t>(e.steps * kH * kW * 3));
      for (size_t i = 0; i < img.size(); ++i) {
        img[i] = static_cast<uint8_t>(i * 7 + c * 31 + ep);
      }
      e.images.push_back(img);
    }
    for (const DemoProprioEntry& p : r.proprio) {
      std::vector<float> v(static_cast<size_t>(e.steps * p.size));
      for (size_t i = 0; i < v.size(); ++i) v[i] = 0.05f * float(i) - 0.3f;
      e.proprio.push_back(v);
    }
    for (int64_t i = 0; i < e.steps * 7; ++i) {
      e.actions.push_back(std::sin(0.3f * float(i + ep)));
    }
    e.rewards.assign(static_cast<size_t>(e.steps), 0.0f);
    e.dones.assign(static_cast<size_t>(e.steps), 0);
    e.rewards.back() = 1.0f;
    e.dones.back() = 1;
    r.episodes.push_back(e);
  }
  return r;
}

// tests/envs/field_layouts.py under Debian's python3; its exit code, its
// output into `out`.
int FieldLayouts(const std::string& args, std::string* out) {
  const std::string cmd = "/usr/bin/python3 " RLVLA3_SOURCE_DIR
                          "/tests/envs/field_layouts.py " +
                          args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return -1;
  char buf[4096];
  size_t n = 0;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) out->append(buf, n);
  return WEXITSTATUS(pclose(p));
}

// The file rl-vla3 writes, rewritten by the field's writer as `layout`.
std::string Rewritten(const testutil::TestDir& dir, const std::string& layout) {
  const std::string ours = dir.File("ours.hdf5");
  const std::string theirs = dir.File(layout + ".hdf5");
  EXPECT_TRUE(WriteLiberoHdf5(Recording(), ours).ok());
  std::string out;
  EXPECT_EQ(FieldLayouts(layout + " " + ours + " " + theirs, &out), 0) << out;
  return theirs;
}

DemoReadOptions RunCameras() {
  DemoReadOptions o;
  o.cameras = {
      {"agentview", {"agentview_rgb", "agentview_image"}},
      {"wrist", {"wrist_rgb", "eye_in_hand_rgb", "robot0_eye_in_hand_image"}}};
  o.image_height = kH;
  o.image_width = kW;
  return o;
}

TEST(FieldFiles, LiberosUpsideDownFramesAtTwiceTheSizeReadAsTheRunsOwn) {
  const testutil::TestDir dir;
  const std::string path = Rewritten(dir, "libero");
  DemoReadOptions o = RunCameras();
  o.resize = true;
  absl::StatusOr<DemoRecording> r = ReadLiberoHdf5(path, o);
  ASSERT_TRUE(r.ok()) << r.status();
  const DemoRecording want = Recording();
  ASSERT_EQ(r->episodes.size(), want.episodes.size());
  EXPECT_EQ(r->cameras[1].name, "wrist");
  EXPECT_EQ(r->cameras[1].height, kH);
  for (size_t e = 0; e < want.episodes.size(); ++e) {
    const DemoEpisode& got = r->episodes[e];
    // No task attribute: the instruction is problem_info's, as written.
    EXPECT_EQ(got.task, "");
    EXPECT_EQ(got.instruction, "LIFT THE RED CUBE.");
    EXPECT_EQ(got.images, want.episodes[e].images) << "episode " << e;
    EXPECT_EQ(got.proprio, want.episodes[e].proprio);
    EXPECT_EQ(got.actions, want.episodes[e].actions);
    EXPECT_EQ(got.dones, want.episodes[e].dones);
    EXPECT_EQ(got.split, DemoSplit::kTrain);
  }
}

TEST(FieldFiles, AnotherSizeIsRefusedUnlessResizingIsAsked) {
  const testutil::TestDir dir;
  const std::string path = Rewritten(dir, "libero");
  DemoReadOptions o = RunCameras();
  o.resize_hint = " (the key that resizes)";
  absl::StatusOr<DemoRecording> r = ReadLiberoHdf5(path, o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("agentview_rgb: frames of 8x12, the "
                                      "run's are 4x6 (the key that resizes)"),
            std::string::npos)
      << r.status();
  // Read as stored (opencv asked for): upside down against the source.
  o.resize = true;
  o.image_convention = "opencv";
  r = ReadLiberoHdf5(path, o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_NE(r->episodes[0].images, Recording().episodes[0].images);
}

TEST(FieldFiles, RobomimicsQuaternionsAndSplitsAreRead) {
  const testutil::TestDir dir;
  const std::string path = Rewritten(dir, "robomimic");
  DemoReadOptions o = RunCameras();
  o.proprio = {{"robot0_eef_pos"},
               {"robot0_eef_quat", /*quat_to_axis_angle=*/true},
               {"robot0_gripper_qpos"}};
  absl::StatusOr<DemoRecording> r = ReadLiberoHdf5(path, o);
  ASSERT_TRUE(r.ok()) << r.status();
  const DemoRecording want = Recording();
  ASSERT_EQ(r->proprio.size(), 3u);
  EXPECT_EQ(r->proprio[1].size, 3);
  for (size_t e = 0; e < want.episodes.size(); ++e) {
    const DemoEpisode& got = r->episodes[e];
    EXPECT_EQ(got.images, want.episodes[e].images);
    for (size_t p = 0; p < 3; ++p) {
      ASSERT_EQ(got.proprio[p].size(), want.episodes[e].proprio[p].size());
      for (size_t i = 0; i < got.proprio[p].size(); ++i) {
        EXPECT_NEAR(got.proprio[p][i], want.episodes[e].proprio[p][i], 1e-5)
            << "episode " << e << " entry " << p << " value " << i;
      }
    }
    EXPECT_EQ(got.instruction, "");
    // mask/valid holds every 5th demo: demo_4.
    EXPECT_EQ(got.split, e == 4 ? DemoSplit::kValid : DemoSplit::kTrain) << e;
  }
  o.masks = false;
  r = ReadLiberoHdf5(path, o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->episodes[4].split, DemoSplit::kTrain);
}

TEST(FieldFiles, WhatIsMissingIsNamed) {
  const testutil::TestDir dir;
  const std::string path = Rewritten(dir, "robomimic");
  DemoReadOptions o = RunCameras();
  o.cameras.push_back({"side", {"side_rgb", "side_image"}});
  absl::StatusOr<DemoRecording> r = ReadLiberoHdf5(path, o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find(
                "no camera side (looked for side_rgb, side_image; the file's "
                "obs: agentview_image, robot0_eef_pos"),
            std::string::npos)
      << r.status();
  o = RunCameras();  // LIBERO's proprio names: not in a robomimic file
  r = ReadLiberoHdf5(path, o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find(
                "/data/demo_0/obs/ee_pos: no such proprio entry (the file's "
                "obs: agentview_image, robot0_eef_pos, robot0_eef_quat, "
                "robot0_eye_in_hand_image, robot0_gripper_qpos)"),
            std::string::npos)
      << r.status();
  o.proprio = {{"robot0_eef_pos", /*quat_to_axis_angle=*/true}};
  r = ReadLiberoHdf5(path, o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("3 values per step, a quaternion has 4"),
            std::string::npos)
      << r.status();
}

// A mask longer than the file's demos is refused before it is read.
TEST(FieldFiles, AMaskNamingMoreThanTheFilesDemosIsRefusedUnread) {
  const testutil::TestDir dir;
  const std::string path = Rewritten(dir, "robomimic");
  std::string out;
  const std::string cmd =
      "/usr/bin/python3 -c \"import h5py, numpy as np; f = h5py.File('" + path +
      "', 'a'); del f['mask/valid']; f.create_dataset('mask/valid', "
      "data=np.array(['demo_4'] * 6, dtype='S'))\"";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  DemoReadOptions o = RunCameras();
  o.proprio = {{"robot0_eef_pos"},
               {"robot0_eef_quat", /*quat_to_axis_angle=*/true},
               {"robot0_gripper_qpos"}};
  absl::StatusOr<DemoRecording> r = ReadLiberoHdf5(path, o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("/mask/valid: 6 strings, over 5"),
            std::string::npos)
      << r.status();
}

TEST(FieldFiles, WhatRlVla3WritesPassesTheirLoadersLookups) {
  const testutil::TestDir dir;
  const std::string ours = dir.File("ours.hdf5");
  ASSERT_TRUE(WriteLiberoHdf5(Recording(), ours).ok());
  std::string out;
  EXPECT_EQ(FieldLayouts("check " + ours, &out), 0) << out;
  EXPECT_NE(out.find("loaders ok"), std::string::npos) << out;
}

}  // namespace
}  // namespace rlvla3
