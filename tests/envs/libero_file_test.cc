// Demonstrations in the LIBERO/robomimic HDF5 layout (issue 50, item 4):
// written and read back unchanged; readable by h5py (Debian's python3) with
// the layout the field's tools expect; and a malformed file refused naming
// the file, the dataset and the reason (not an HDF5 file, no demo group, a
// missing dataset, a shape that disagrees with the first demo's, a
// num_samples that disagrees with the actions).
#include "envs/demos/libero_file.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <functional>
#include <string>

#include "envs/demos/hdf5_file.h"
#include "envs/demos/isolated_read.h"
#include "tests/test_dir.h"

namespace rlvla3 {
namespace {

// Two episodes of 3 and 2 steps, two 4x6 cameras, proprio 3 + 3 + 2, 7-D.
DemoRecording Recording() {
  DemoRecording r;
  r.env_name = "rl-vla3/lift";
  r.env_args = R"({"env_name": "rl-vla3/lift", "type": 1})";
  r.cameras = {{"agentview", 4, 6}, {"eye_in_hand", 4, 6}};
  r.proprio = {{"ee_pos", 3}, {"ee_ori", 3}, {"gripper_states", 2}};
  r.action_size = 7;
  r.attempts = 3;
  for (int64_t steps : {3, 2}) {
    DemoEpisode e;
    e.task = "lift";
    e.instruction = "lift the red cube";
    e.init_id = steps * 10;
    e.steps = steps;
    for (size_t c = 0; c < r.cameras.size(); ++c) {
      std::vector<uint8_t> img(static_cast<size_t>(steps * 4 * 6 * 3));
      for (size_t i = 0; i < img.size(); ++i) img[i] = uint8_t(i * 7 + c);
      e.images.push_back(img);
    }
    for (const DemoProprioEntry& p : r.proprio) {
      std::vector<float> v(static_cast<size_t>(steps * p.size));
      for (size_t i = 0; i < v.size(); ++i) v[i] = 0.25f * float(i);
      e.proprio.push_back(v);
    }
    for (int64_t i = 0; i < steps * 7; ++i) e.actions.push_back(-1 + 0.1f * i);
    for (int64_t t = 0; t < steps; ++t) {
      e.rewards.push_back(t + 1 == steps ? 1.0f : 0.0f);
      e.dones.push_back(t + 1 == steps ? 1 : 0);
    }
    r.episodes.push_back(e);
  }
  return r;
}

TEST(LiberoFile, WrittenAndReadBackUnchanged) {
  const testutil::TestDir dir;
  const DemoRecording r = Recording();
  ASSERT_TRUE(WriteLiberoHdf5(r, dir.File("lift_demo.hdf5")).ok());
  absl::StatusOr<DemoRecording> back =
      ReadLiberoHdf5(dir.File("lift_demo.hdf5"));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->env_name, r.env_name);
  EXPECT_EQ(back->env_args, r.env_args);
  ASSERT_EQ(back->cameras.size(), 2u);
  EXPECT_EQ(back->cameras[1].name, "eye_in_hand");
  EXPECT_EQ(back->cameras[1].height, 4);
  EXPECT_EQ(back->cameras[1].width, 6);
  ASSERT_EQ(back->proprio.size(), 3u);
  EXPECT_EQ(back->proprio[2].size, 2);
  EXPECT_EQ(back->action_size, 7);
  EXPECT_EQ(back->attempts, 3);
  ASSERT_EQ(back->episodes.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    const DemoEpisode& a = r.episodes[i];
    const DemoEpisode& b = back->episodes[i];
    EXPECT_EQ(b.steps, a.steps);
    EXPECT_EQ(b.task, a.task);
    EXPECT_EQ(b.instruction, a.instruction);
    EXPECT_EQ(b.init_id, a.init_id);
    EXPECT_EQ(b.images, a.images);
    EXPECT_EQ(b.proprio, a.proprio);
    EXPECT_EQ(b.actions, a.actions);
    EXPECT_EQ(b.rewards, a.rewards);
    EXPECT_EQ(b.dones, a.dones);
  }
}

// Debian's python3 (with h5py) running `args`; its output.
std::string RunPython(const std::string& args, bool expect_ok) {
  const std::string cmd = "/usr/bin/python3 " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  EXPECT_NE(p, nullptr);
  if (p == nullptr) return "";
  std::string out;
  char buf[256];
  while (fgets(buf, sizeof buf, p) != nullptr) out += buf;
  const int rc = pclose(p);
  if (expect_ok) {
    EXPECT_EQ(rc, 0) << out;
  }
  return out;
}

TEST(LiberoFile, H5pyReadsTheLayoutTheFieldsToolsExpect) {
  const testutil::TestDir dir;
  ASSERT_TRUE(WriteLiberoHdf5(Recording(), dir.File("d.hdf5")).ok());
  const std::string script = dir.File("check.py");
  std::ofstream(script) << R"(import json, sys, h5py
f = h5py.File(sys.argv[1], "r")
d = f["data"]
assert json.loads(d.attrs["env_args"])["env_name"] == "rl-vla3/lift"
assert int(d.attrs["total"]) == 5
assert sorted(d.keys()) == ["demo_0", "demo_1"]
e = d["demo_0"]
assert int(e.attrs["num_samples"]) == 3
assert e["obs/agentview_rgb"].shape == (3, 4, 6, 3)
assert str(e["obs/agentview_rgb"].dtype) == "uint8"
assert e["obs/eye_in_hand_rgb"].shape == (3, 4, 6, 3)
assert e["obs/ee_pos"].shape == (3, 3)
assert e["obs/gripper_states"].shape == (3, 2)
assert e["actions"].shape == (3, 7) and str(e["actions"].dtype) == "float64"
assert list(e["dones"][:]) == [0, 0, 1]
assert e.attrs["instruction"] == "lift the red cube"
print("h5py ok")
)";
  const std::string out =
      RunPython(script + " " + dir.File("d.hdf5"), /*expect_ok=*/true);
  EXPECT_NE(out.find("h5py ok"), std::string::npos) << out;
}

// The error of reading `path`, or "" if it was read.
std::string ErrorOf(const std::string& path) {
  absl::StatusOr<DemoRecording> r = ReadLiberoHdf5(path);
  return r.ok() ? "" : std::string(r.status().message());
}

// A minimal demo group of 2 steps: one 4x6 camera, LIBERO's proprio,
// `action_size`-D actions; `float_images` stores the images as numbers.
void WriteDemo(Hdf5File* f, const std::string& demo, int64_t action_size,
               bool float_images = false) {
  const std::vector<float> zeros(2 * 4 * 6 * 3, 0.0f), ones(2, 1.0f);
  const std::vector<uint8_t> img(2 * 4 * 6 * 3, 0);
  ASSERT_TRUE(
      f->WriteFloats(demo + "/actions", {2, action_size}, zeros.data()).ok());
  ASSERT_TRUE((float_images ? f->WriteFloats(demo + "/obs/agentview_rgb",
                                             {2, 4, 6, 3}, zeros.data())
                            : f->WriteBytes(demo + "/obs/agentview_rgb",
                                            {2, 4, 6, 3}, img.data()))
                  .ok());
  ASSERT_TRUE(f->WriteFloats(demo + "/obs/ee_pos", {2, 3}, zeros.data()).ok());
  ASSERT_TRUE(f->WriteFloats(demo + "/obs/ee_ori", {2, 3}, zeros.data()).ok());
  ASSERT_TRUE(
      f->WriteFloats(demo + "/obs/gripper_states", {2, 2}, zeros.data()).ok());
  ASSERT_TRUE(f->WriteFloats(demo + "/rewards", {2}, ones.data()).ok());
  ASSERT_TRUE(f->WriteFloats(demo + "/dones", {2}, ones.data()).ok());
}

TEST(LiberoFile, AMalformedFileIsRefusedNamingTheDatasetAndTheReason) {
  const testutil::TestDir dir;
  std::ofstream(dir.File("text.hdf5")) << "not hdf5\n";
  EXPECT_NE(ErrorOf(dir.File("text.hdf5")).find("text.hdf5: not an HDF5 file"),
            std::string::npos);
  struct Case {
    std::string name, expected;
    std::function<void(Hdf5File*)> write;
  } cases[] = {
      {"no_demo.hdf5", "no_demo.hdf5: /data: no demo_N group",
       [](Hdf5File* f) {
         const float x = 0;
         ASSERT_TRUE(f->WriteFloats("/data/other", {1}, &x).ok());
       }},
      {"mixed.hdf5",
       "mixed.hdf5: /data/demo_1/actions: shape [2, 6], expected [-1, 7]",
       [](Hdf5File* f) {
         WriteDemo(f, "/data/demo_0", 7);
         WriteDemo(f, "/data/demo_1", 6);
       }},
      {"float_images.hdf5",
       "float_images.hdf5: /data/demo_0/obs/agentview_rgb: not uint8",
       [](Hdf5File* f) { WriteDemo(f, "/data/demo_0", 7, true); }},
      {"count.hdf5",
       "count.hdf5: /data/demo_0: num_samples 5, but /data/demo_0/actions "
       "has 2 steps",
       [](Hdf5File* f) {
         WriteDemo(f, "/data/demo_0", 7);
         ASSERT_TRUE(f->SetInt("/data/demo_0", "num_samples", 5).ok());
       }},
      {"no_obs.hdf5", "no_obs.hdf5: /data/demo_1/obs/agentview_rgb: missing",
       [](Hdf5File* f) {
         WriteDemo(f, "/data/demo_0", 7);
         const std::vector<float> z(14, 0.0f);
         ASSERT_TRUE(
             f->WriteFloats("/data/demo_1/actions", {2, 7}, z.data()).ok());
       }},
  };
  for (const Case& c : cases) {
    {
      absl::StatusOr<Hdf5File> f = Hdf5File::Create(dir.File(c.name));
      ASSERT_TRUE(f.ok()) << f.status();
      c.write(&*f);
    }
    const std::string error = ErrorOf(dir.File(c.name));
    EXPECT_NE(error.find(c.expected), std::string::npos)
        << "expected \"" << c.expected << "\" in: " << error;
  }
  // A file without the proprio entries asked for.
  DemoRecording no_ori = Recording();
  no_ori.proprio = {{"ee_pos", 3}, {"gripper_states", 2}};
  for (DemoEpisode& e : no_ori.episodes) e.proprio.erase(e.proprio.begin() + 1);
  ASSERT_TRUE(WriteLiberoHdf5(no_ori, dir.File("no_ori.hdf5")).ok());
  EXPECT_NE(
      ErrorOf(dir.File("no_ori.hdf5"))
          .find("no_ori.hdf5: /data/demo_0/obs/ee_ori: no such proprio entry"),
      std::string::npos)
      << ErrorOf(dir.File("no_ori.hdf5"));
  EXPECT_FALSE(WriteLiberoHdf5(DemoRecording{}, dir.File("none.hdf5")).ok());
}

// Files made by h5py as a hostile or careless user would (issue 60; the
// seeds of demo_file_fuzz, tests/fuzz/make_demo_corpus.py): each is refused
// with a message naming the dataset or attribute, from its extents, before
// anything of the declared size is allocated. On the old reader the attribute
// arrays crashed (SIGSEGV) and the declared 10^9 steps threw bad_alloc.
TEST(LiberoFile, HostileFilesAreRefusedBeforeAnythingIsAllocated) {
  const testutil::TestDir dir;
  const std::string out =
      RunPython(std::string(RLVLA3_SOURCE_DIR) +
                    "/tests/fuzz/make_demo_corpus.py " + dir.path(),
                /*expect_ok=*/true);
  ASSERT_NE(out.find("wrote"), std::string::npos) << out;
  EXPECT_EQ(ErrorOf(dir.File("good.hdf5")), "");  // the file they came from
  const std::pair<std::string, std::string> cases[] = {
      {"attr_array.hdf5",
       "/data/demo_0: attribute num_samples holds 4096 values, not one"},
      {"task_array.hdf5",
       "/data/demo_0: attribute task holds 1024 values, not one"},
      {"huge_actions.hdf5",
       "/data/demo_0/actions: extent 0 is 1000000000, not in 1..100000"},
      {"huge_camera.hdf5",
       "/data/demo_0/obs/agentview_rgb: shape [1000000000, 4, 6, 3], "
       "expected [3, 4, 6, 3]"},
      {"wide_camera.hdf5",
       "/data/demo_0/obs/agentview_rgb: extent 1 is 100000, not in 1..4096"},
      {"no_steps.hdf5",
       "/data/demo_0/actions: extent 0 is 0, not in 1..100000"},
  };
  for (const auto& [name, expected] : cases) {
    const std::string error = ErrorOf(dir.File(name));
    EXPECT_NE(error.find(dir.File(name) + ": " + expected), std::string::npos)
        << "expected \"" << expected << "\" in: " << error;
    // Every object the refused read opened was closed again.
    EXPECT_EQ(OpenHdf5Objects(), 0) << name;
  }
}

// A 17 KiB file (found by demo_file_fuzz) whose global heap names a 2^52-byte
// string: HDF5 itself segfaults in H5Aread reading its `task`. Read in a
// child first, it is refused naming the file, and this process goes on.
TEST(LiberoFile, AFileThatCrashesHdf5IsRefusedAndTheReaderGoesOn) {
  const std::string path = std::string(RLVLA3_SOURCE_DIR) +
                           "/tests/fuzz/corpus/demo_file/"
                           "hdf5_global_heap_2e52.hdf5";
  const absl::StatusOr<DemoRecording> r = ReadLiberoHdf5Isolated(path);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find(
                path + ": the HDF5 library crashed reading it (signal 11"),
            std::string::npos)
      << r.status();
  EXPECT_EQ(OpenHdf5Objects(), 0);
  // A good file reads in the child and then here, as a direct read does.
  const testutil::TestDir dir;
  ASSERT_TRUE(WriteLiberoHdf5(Recording(), dir.File("good.hdf5")).ok());
  const absl::StatusOr<DemoRecording> good =
      ReadLiberoHdf5Isolated(dir.File("good.hdf5"));
  ASSERT_TRUE(good.ok()) << good.status();
  EXPECT_EQ(good->episodes.size(), Recording().episodes.size());
  EXPECT_EQ(good->episodes[0].actions, Recording().episodes[0].actions);
  // A refusal the child reports comes back as it is, read once.
  std::ofstream(dir.File("text.hdf5")) << "not hdf5\n";
  EXPECT_NE(ReadLiberoHdf5Isolated(dir.File("text.hdf5"))
                .status()
                .message()
                .find("text.hdf5: not an HDF5 file"),
            std::string::npos);
}

TEST(LiberoFile, AReadThatDoesNotFinishInTimeIsKilledAndRefused) {
  const testutil::TestDir dir;
  ASSERT_TRUE(WriteLiberoHdf5(Recording(), dir.File("slow.hdf5")).ok());
  // No time at all: the child cannot have reported, so it is killed.
  const absl::StatusOr<DemoRecording> r =
      ReadLiberoHdf5Isolated(dir.File("slow.hdf5"), DemoReadOptions{},
                             IsolatedReadOptions{absl::ZeroDuration(), 1e30});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("did not finish"), std::string::npos)
      << r.status();
}

}  // namespace
}  // namespace rlvla3
