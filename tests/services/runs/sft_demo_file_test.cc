// SFT's demonstrations through a LIBERO-format file (issue 50, item 4): the
// experts' recording written with `demos export`'s writer and read back
// gives SFT exactly the samples the live experts give (frames, proprio,
// chunked action tokens, tasks), so SFT from the file trains on the same
// data; a recording of another shape or task is refused naming both sides.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "envs/demos/libero_file.h"
#include "services/runs/sft.h"
#include "tests/test_dir.h"

namespace rlvla3 {
namespace {

Config OneTask() {
  absl::StatusOr<Config> c = LoadConfig(
      "", {"sft.tasks=lift_the_red_cube", "sft.demos_per_task=2",
           "env.num_envs=1", "env.image_width=32", "env.image_height=32",
           "policy.chunk=3", "threads.env_workers=1"});
  EXPECT_TRUE(c.ok()) << c.status();
  return *c;
}

void ExpectSame(const DemoSet& a, const DemoSet& b) {
  EXPECT_EQ(a.size(), b.size());
  EXPECT_EQ(a.episodes, b.episodes);
  EXPECT_EQ(a.attempts, b.attempts);
  EXPECT_EQ(a.cameras, b.cameras);
  EXPECT_EQ(a.images, b.images);
  EXPECT_EQ(a.proprio, b.proprio);
  EXPECT_EQ(a.action_tokens, b.action_tokens);
  EXPECT_EQ(a.task, b.task);
  EXPECT_EQ(a.episode_steps, b.episode_steps);
  EXPECT_EQ(a.instructions, b.instructions);
}

TEST(SftDemoFile, TheExportedFileClonesTheSameSamplesAsTheExperts) {
  const testutil::TestDir dir;
  const Config c = OneTask();
  absl::StatusOr<std::vector<TaskSpec>> tasks = SftTasks(c);
  ASSERT_TRUE(tasks.ok()) << tasks.status();
  const DemoOptions o = DemoOptionsFromConfig(c);
  absl::StatusOr<DemoRecording> rec = CollectDemoRecording(o, *tasks);
  ASSERT_TRUE(rec.ok()) << rec.status();
  ASSERT_EQ(rec->episodes.size(), 2u);
  for (const DemoEpisode& e : rec->episodes) {
    EXPECT_EQ(e.rewards.size(), static_cast<size_t>(e.steps));
    EXPECT_EQ(e.dones.back(), 1);
    EXPECT_EQ(e.task, "lift_the_red_cube");
  }
  absl::StatusOr<DemoSet> live = DemoSetFromRecording(
      *rec, o.chunk, *tasks, 32, 32, o.env.cameras, "the experts");
  ASSERT_TRUE(live.ok()) << live.status();
  ASSERT_TRUE(WriteLiberoHdf5(*rec, dir.File("lift_demo.hdf5")).ok());
  absl::StatusOr<DemoRecording> read =
      ReadLiberoHdf5(dir.File("lift_demo.hdf5"));
  ASSERT_TRUE(read.ok()) << read.status();
  absl::StatusOr<DemoSet> file =
      DemoSetFromRecording(*read, o.chunk, *tasks, 32, 32, o.env.cameras,
                           dir.File("lift_demo.hdf5"));
  ASSERT_TRUE(file.ok()) << file.status();
  ExpectSame(*live, *file);
  // The collection as SFT has always run it gives the same samples.
  absl::StatusOr<DemoSet> direct = CollectDemonstrations(o, *tasks);
  ASSERT_TRUE(direct.ok()) << direct.status();
  ExpectSame(*live, *direct);
}

TEST(SftDemoFile, ARecordingOfAnotherShapeOrTaskIsRefusedNamingBothSides) {
  const Config c = OneTask();
  absl::StatusOr<std::vector<TaskSpec>> tasks = SftTasks(c);
  ASSERT_TRUE(tasks.ok()) << tasks.status();
  DemoRecording r;
  r.cameras = {{"agentview", 32, 32}, {"eye_in_hand", 32, 32}};
  r.proprio = {{"ee_pos", 3}, {"ee_ori", 3}, {"gripper_states", 2}};
  DemoEpisode e;
  e.task = "lift_the_red_cube";
  e.steps = 1;
  e.images.assign(2, std::vector<uint8_t>(32 * 32 * 3, 0));
  e.proprio = {{0, 0, 0}, {0, 0, 0}, {0, 0}};
  e.actions.assign(7, 0.0f);
  r.episodes = {e};
  const std::vector<std::string> two = {"agentview", "wrist"};
  EXPECT_TRUE(DemoSetFromRecording(r, 3, *tasks, 32, 32, two, "f.hdf5").ok());
  auto error = [&](const DemoRecording& bad) {
    absl::StatusOr<DemoSet> d =
        DemoSetFromRecording(bad, 3, *tasks, 32, 32, two, "f.hdf5");
    return d.ok() ? std::string() : std::string(d.status().message());
  };
  DemoRecording big = r;
  big.cameras[0].height = 64;
  EXPECT_NE(error(big).find("f.hdf5: camera agentview is 64x32; the run's "
                            "env.image_height x env.image_width is 32x32"),
            std::string::npos)
      << error(big);
  DemoRecording one_cam = r;
  one_cam.cameras.pop_back();
  EXPECT_NE(error(one_cam).find("f.hdf5: no camera wrist (env.cameras names "
                                "agentview, wrist; the file has agentview)"),
            std::string::npos)
      << error(one_cam);
  DemoRecording six = r;
  six.action_size = 6;
  EXPECT_NE(error(six).find("actions of 6; the policy reads 8 and acts on 7"),
            std::string::npos)
      << error(six);
  DemoRecording other = r;
  other.episodes[0].task = "juggle";
  EXPECT_NE(error(other).find("episode 0's task \"juggle\" is not one of the "
                              "run's (sft.tasks)"),
            std::string::npos)
      << error(other);
  // Actions the tokens do not cover (NaN, 1e30, 1.5) are refused, naming
  // the episode, the step and the dimension (issue 60): never trained.
  for (float bad : {std::nanf(""), 1e30f, 1.5f, -1.01f}) {
    DemoRecording wild = r;
    wild.episodes[0].actions[3] = bad;
    EXPECT_NE(error(wild).find("f.hdf5: episode 0, step 0: action value"),
              std::string::npos)
        << bad << ": " << error(wild);
    EXPECT_NE(error(wild).find("(dimension 3) is not in [-1, 1]"),
              std::string::npos)
        << error(wild);
  }
  DemoRecording empty = r;
  empty.episodes[0].steps = 0;
  empty.episodes[0].actions.clear();
  EXPECT_NE(error(empty).find("episode 0 has 0 steps"), std::string::npos)
      << error(empty);
}

// A run takes the cameras it names from a file by name, in its own order:
// one camera of two, or three of three with the wrist as eye_in_hand.
TEST(SftDemoFile, TheRunsCamerasArePickedByNameInItsOrder) {
  const Config c = OneTask();
  absl::StatusOr<std::vector<TaskSpec>> tasks = SftTasks(c);
  ASSERT_TRUE(tasks.ok()) << tasks.status();
  const size_t image = 32 * 32 * 3;
  DemoRecording r;
  r.cameras = {
      {"agentview", 32, 32}, {"eye_in_hand", 32, 32}, {"sideview", 32, 32}};
  r.proprio = {{"ee_pos", 3}, {"ee_ori", 3}, {"gripper_states", 2}};
  DemoEpisode e;
  e.task = "lift_the_red_cube";
  e.steps = 2;
  for (uint8_t c = 0; c < 3; ++c) {  // camera c, step t: bytes 10 c + t
    std::vector<uint8_t> frames(2 * image, static_cast<uint8_t>(10 * c));
    std::fill(frames.begin() + image, frames.end(), 10 * c + 1);
    e.images.push_back(frames);
  }
  e.proprio = {std::vector<float>(6, 0), std::vector<float>(6, 0),
               std::vector<float>(4, 0)};
  e.actions.assign(14, 0.0f);
  r.episodes = {e};
  absl::StatusOr<DemoSet> one =
      DemoSetFromRecording(r, 3, *tasks, 32, 32, {"agentview"}, "f.hdf5");
  ASSERT_TRUE(one.ok()) << one.status();
  ASSERT_EQ(one->images.size(), 2 * image);
  EXPECT_EQ(one->images[image], 1);  // step 1 of agentview
  absl::StatusOr<DemoSet> three = DemoSetFromRecording(
      r, 3, *tasks, 32, 32, {"sideview", "wrist", "agentview"}, "f.hdf5");
  ASSERT_TRUE(three.ok()) << three.status();
  ASSERT_EQ(three->images.size(), 2 * 3 * image);  // [N=2, C=3, H, W, 3]
  const uint8_t want[] = {20, 10, 0, 21, 11, 1};   // step-major, run order
  for (int i = 0; i < 6; ++i) EXPECT_EQ(three->images[i * image], want[i]);
  EXPECT_EQ(three->cameras,
            (std::vector<std::string>{"sideview", "wrist", "agentview"}));
  absl::StatusOr<DemoSet> none = DemoSetFromRecording(
      r, 3, *tasks, 32, 32, {"agentview", "overhead"}, "f.hdf5");
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().message(),
            "f.hdf5: no camera overhead (env.cameras names agentview, "
            "overhead; the file has agentview, eye_in_hand, sideview)");
  // The wrist either way round: a run naming eye_in_hand reads a file's
  // wrist.
  DemoRecording ours = r;
  ours.cameras[1].name = "wrist";
  absl::StatusOr<DemoSet> eye =
      DemoSetFromRecording(ours, 3, *tasks, 32, 32, {"eye_in_hand"}, "f.hdf5");
  ASSERT_TRUE(eye.ok()) << eye.status();
  EXPECT_EQ(eye->images[0], 10);
  EXPECT_EQ(eye->images[image], 11);
  EXPECT_FALSE(DemoSetFromRecording(r, 3, *tasks, 32, 32, {}, "f.hdf5").ok());
}

// Export records every camera of env.cameras, the wrist as eye_in_hand, and
// the file gives the run back its cameras as the live experts do.
TEST(SftDemoFile, ExportRecordsEveryCameraOfTheRun) {
  const testutil::TestDir dir;
  Config c = OneTask();
  c.sft.demos_per_task = 1;
  c.env.cameras = "sideview,wrist,agentview";
  absl::StatusOr<std::vector<TaskSpec>> tasks = SftTasks(c);
  ASSERT_TRUE(tasks.ok()) << tasks.status();
  const DemoOptions o = DemoOptionsFromConfig(c);
  ASSERT_EQ(o.env.cameras.size(), 3u);
  absl::StatusOr<std::vector<std::string>> files =
      ExportDemonstrations(o, *tasks, dir.File("demos"));
  ASSERT_TRUE(files.ok()) << files.status();
  absl::StatusOr<DemoRecording> r = ReadLiberoHdf5(files->front());
  ASSERT_TRUE(r.ok()) << r.status();
  std::vector<std::string> names;
  for (const DemoCamera& cam : r->cameras) names.push_back(cam.name);
  std::sort(names.begin(), names.end());  // the file lists them by name
  EXPECT_EQ(names,
            (std::vector<std::string>{"agentview", "eye_in_hand", "sideview"}));
  absl::StatusOr<DemoSet> file =
      ReadDemonstrations(*files, o.chunk, *tasks, 32, 32, o.env.cameras);
  ASSERT_TRUE(file.ok()) << file.status();
  absl::StatusOr<DemoSet> live = CollectDemonstrations(o, *tasks);
  ASSERT_TRUE(live.ok()) << live.status();
  EXPECT_EQ(file->cameras, o.env.cameras);
  EXPECT_EQ(file->images.size(), file->size() * 3 * 32 * 32 * 3);
  EXPECT_EQ(file->images, live->images);
  const size_t image = 32 * 32 * 3;  // the cameras see differently
  EXPECT_FALSE(std::equal(file->images.begin(), file->images.begin() + image,
                          file->images.begin() + 2 * image));
  // A one-camera run reads its camera out of the three.
  absl::StatusOr<DemoSet> one =
      ReadDemonstrations(*files, o.chunk, *tasks, 32, 32, {"wrist"});
  ASSERT_TRUE(one.ok()) << one.status();
  ASSERT_EQ(one->images.size(), file->size() * image);
  EXPECT_TRUE(std::equal(one->images.begin(), one->images.begin() + image,
                         file->images.begin() + image));  // camera 1, step 0
}

TEST(SftDemoFile, ExportWritesOneLiberoFilePerTask) {
  const testutil::TestDir dir;
  Config c = OneTask();
  c.sft.demos_per_task = 1;
  absl::StatusOr<std::vector<TaskSpec>> tasks = SftTasks(c);
  ASSERT_TRUE(tasks.ok());
  absl::StatusOr<std::vector<std::string>> files =
      ExportDemonstrations(DemoOptionsFromConfig(c), *tasks, dir.File("demos"));
  ASSERT_TRUE(files.ok()) << files.status();
  ASSERT_EQ(files->size(), 1u);
  EXPECT_EQ(files->front(), dir.File("demos") + "/lift_the_red_cube_demo.hdf5");
  absl::StatusOr<DemoRecording> r = ReadLiberoHdf5(files->front());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->episodes.size(), 1u);
  EXPECT_EQ(r->cameras[1].name, "eye_in_hand");
}

// Each exported file holds its own task's attempts: every file held the
// pool's total before, so SFT over two files reported twice the attempts.
TEST(SftDemoFile, EachExportedFileHoldsItsOwnTasksAttempts) {
  const testutil::TestDir dir;
  Config c = OneTask();
  c.sft.tasks = "lift_the_red_cube,close_the_drawer";
  c.sft.demos_per_task = 1;
  c.env.num_envs = 2;
  absl::StatusOr<std::vector<TaskSpec>> tasks = SftTasks(c);
  ASSERT_TRUE(tasks.ok()) << tasks.status();
  ASSERT_EQ(tasks->size(), 2u);
  const DemoOptions o = DemoOptionsFromConfig(c);
  absl::StatusOr<DemoRecording> all = CollectDemoRecording(o, *tasks);
  ASSERT_TRUE(all.ok()) << all.status();
  ASSERT_EQ(all->attempts_by_task.size(), 2u);
  absl::StatusOr<std::vector<std::string>> files =
      WriteRecordingPerTask(*all, *tasks, dir.File("demos"));
  ASSERT_TRUE(files.ok()) << files.status();
  ASSERT_EQ(files->size(), 2u);
  int64_t sum = 0;
  for (size_t i = 0; i < files->size(); ++i) {
    absl::StatusOr<DemoRecording> r = ReadLiberoHdf5((*files)[i]);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->attempts, all->attempts_by_task.at((*tasks)[i].name));
    sum += r->attempts;
  }
  EXPECT_EQ(sum, all->attempts);
  absl::StatusOr<DemoSet> both =
      ReadDemonstrations(*files, o.chunk, *tasks, 32, 32, o.env.cameras);
  ASSERT_TRUE(both.ok()) << both.status();
  EXPECT_EQ(both->attempts, all->attempts);
}

// `rl-vla3 sft` with sft.demos naming the exported file trains as from the
// live experts: the same samples, so the same optimizer steps and loss.
TEST(SftDemoFile, SftFromTheExportedFileTrainsTheSameLossAsFromTheExperts) {
  const testutil::TestDir dir;
  absl::StatusOr<Config> c = LoadConfig(
      "", {"sft.tasks=lift_the_red_cube", "sft.demos_per_task=2",
           "env.num_envs=1", "env.image_width=32", "env.image_height=32",
           "policy.chunk=3", "policy.d_model=32", "policy.layers=1",
           "policy.grid=2", "policy.patch=8", "policy.stem_channels=8",
           "threads.env_workers=1", "sft.epochs=2", "sft.batch_size=16",
           "sft.eval_episodes=0", "metrics.progress=off"});
  ASSERT_TRUE(c.ok()) << c.status();
  c->sft.checkpoint = dir.File("live");
  absl::StatusOr<SftOptions> live = SftOptionsFromConfig(*c);
  ASSERT_TRUE(live.ok()) << live.status();
  absl::StatusOr<std::vector<std::string>> files =
      ExportDemonstrations(live->demos, live->tasks, dir.File("demos"));
  ASSERT_TRUE(files.ok()) << files.status();
  auto quiet = [](const std::string&) {};
  absl::StatusOr<SftResult> a = RunSft(*live, dir.path(), quiet);
  ASSERT_TRUE(a.ok()) << a.status();

  c->sft.demos = dir.File("demos");  // the folder: every *.hdf5 in it
  c->sft.demos_per_task = 1;  // the experts would give 1 episode, the file 2
  c->sft.checkpoint = dir.File("file");
  absl::StatusOr<SftOptions> file = SftOptionsFromConfig(*c);
  ASSERT_TRUE(file.ok()) << file.status();
  ASSERT_EQ(file->demo_files, *files);
  absl::StatusOr<SftResult> b = RunSft(*file, dir.path(), quiet);
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(b->demo_samples, a->demo_samples);
  EXPECT_EQ(b->demo_episodes, 2);
  EXPECT_GT(a->optimizer_steps, 0);
  EXPECT_EQ(b->optimizer_steps, a->optimizer_steps);
  EXPECT_NEAR(b->final_loss, a->final_loss, 1e-5);

  c->sft.demos = dir.File("nowhere");
  EXPECT_NE(SftOptionsFromConfig(*c).status().message().find(
                "sft.demos: " + dir.File("nowhere") + ": no such file"),
            std::string::npos);
}

// A folder of demos holding a symlink loop and a dangling link lists the
// files it can (the loop is skipped, never an uncaught filesystem_error).
TEST(SftDemoFile, AFolderWithALinkLoopListsItsFiles) {
  const testutil::TestDir dir;
  std::filesystem::create_directories(dir.File("demos"));
  std::ofstream(dir.File("demos/a.hdf5")) << "x";
  std::filesystem::create_symlink("loop.hdf5", dir.File("demos/loop.hdf5"));
  std::filesystem::create_symlink("gone", dir.File("demos/dangling.hdf5"));
  absl::StatusOr<Config> c = LoadConfig(
      "", {"sft.tasks=lift_the_red_cube", "sft.demos=" + dir.File("demos")});
  ASSERT_TRUE(c.ok()) << c.status();
  absl::StatusOr<SftOptions> o = SftOptionsFromConfig(*c);
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->demo_files, std::vector<std::string>{dir.File("demos/a.hdf5")});
}

// A field's file names no task (LIBERO's instruction is in problem_info,
// robomimic's nowhere): the task whose instruction it is (case, spacing and
// a full stop aside), or sft.demo_task's; a held-out episode (mask/valid) is
// flagged, one in neither split left out.
TEST(SftDemoFile, ATasklessEpisodeIsMatchedByItsInstructionOrTheKey) {
  const Config c = OneTask();
  absl::StatusOr<std::vector<TaskSpec>> tasks = SftTasks(c);
  ASSERT_TRUE(tasks.ok()) << tasks.status();
  DemoRecording r;
  r.cameras = {{"agentview", 32, 32}};
  r.proprio = {{"ee_pos", 3}, {"ee_ori", 3}, {"gripper_states", 2}};
  DemoEpisode e;
  e.name = "demo_0";
  e.instruction = "  " + tasks->front().instruction + ".";
  for (char& ch : e.instruction) ch = static_cast<char>(std::toupper(ch));
  e.steps = 2;
  e.images.assign(1, std::vector<uint8_t>(2 * 32 * 32 * 3, 0));
  e.proprio = {std::vector<float>(6), std::vector<float>(6),
               std::vector<float>(4)};
  e.actions.assign(14, 0.0f);
  DemoEpisode held = e, unused = e;
  held.split = DemoSplit::kValid;
  unused.split = DemoSplit::kUnused;
  r.episodes = {e, held, unused};
  const std::vector<std::string> cam = {"agentview"};
  absl::StatusOr<DemoSet> d =
      DemoSetFromRecording(r, 3, *tasks, 32, 32, cam, "f.hdf5");
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->episodes, 2);
  EXPECT_EQ(d->valid_episodes, 1);
  EXPECT_EQ(d->valid, (std::vector<uint8_t>{0, 0, 1, 1}));
  EXPECT_EQ(d->task, (std::vector<int32_t>{0, 0, 0, 0}));

  r.episodes = {e};
  r.episodes[0].instruction = "open the drawer";
  d = DemoSetFromRecording(r, 3, *tasks, 32, 32, cam, "f.hdf5");
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find(
                "f.hdf5: episode 0 (demo_0) names no task, and its instruction "
                "\"open the drawer\" is none of the run's tasks' "
                "(lift_the_red_cube: "),
            std::string::npos)
      << d.status();
  EXPECT_NE(d.status().message().find("name its task with sft.demo_task"),
            std::string::npos);
  d = DemoSetFromRecording(r, 3, *tasks, 32, 32, cam, "f.hdf5",
                           "lift_the_red_cube");
  EXPECT_TRUE(d.ok()) << d.status();
}

}  // namespace
}  // namespace rlvla3
