#include "envs/task_file.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "envs/manipulation_env.h"
#include "tests/test_dir.h"

namespace rlvla3 {
namespace {

std::string Write(const testutil::TestDir& dir, const std::string& name,
                  const std::string& text) {
  const std::string path = dir.File(name);
  std::ofstream(path) << text;
  return path;
}

TEST(TaskFile, ShippedExampleLoadsAndBuildsAScene) {
  absl::StatusOr<TaskSpec> t = LoadTaskFile(
      std::string(RLVLA3_SOURCE_DIR) + "/configs/tasks/lift_purple_block.yaml");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->name, "lift_the_purple_block");
  EXPECT_EQ(t->family, TaskFamily::kGoal);
  EXPECT_EQ(t->objects.size(), 2u);
  EXPECT_NE(t->extra_worldbody.find("purple_block"), std::string::npos);
  EnvOptions o;
  o.render = false;
  auto model = TaskModel::Create(*t, o);
  ASSERT_TRUE(model.ok()) << model.status();
  auto env = ManipulationEnv::Create(*model, o, 0, 0);
  ASSERT_TRUE(env.ok()) << env.status();
  EXPECT_FALSE((*model)->goal().Satisfied((*env)->model(), (*env)->data()));
  // Its scene_mjcf adds a camera an observation may hold, beside the
  // built-in ones; a camera no scene has is named with those it has.
  EXPECT_TRUE((*model)->CameraIds({"sideview", "overhead", "wrist"}).ok());
  absl::StatusOr<std::vector<int>> none = (*model)->CameraIds({"side"});
  ASSERT_FALSE(none.ok());
  EXPECT_NE(std::string(none.status().message())
                .find("task lift_the_purple_block has no camera 'side' (its "
                      "scene has: agentview, sideview, "),
            std::string::npos)
      << none.status();
}

TEST(TaskFile, ErrorsNameTheFileAndTheKey) {
  const testutil::TestDir dir;
  std::string p = Write(dir, "unknown.yaml", "name: x\ninstrution: y\n");
  EXPECT_EQ(
      LoadTaskFile(p).status().message(),
      p + ": instrution: unknown key (expected one of: name, family, "
          "instruction, "
          "max_steps, objects, scene_mjcf, placements, goal, drawer_open)");
  p = Write(dir, "obj.yaml",
            "name: x\ninstruction: y\nobjects: [pink_cube]\ngoal: []\n");
  EXPECT_EQ(LoadTaskFile(p).status().message(),
            p + ": objects: \"pink_cube\": expected red_cube, green_cube, "
                "blue_cube, yellow_cube, "
                "bowl, plate, basket or drawer");
  p = Write(dir, "pred.yaml",
            "name: x\ninstruction: y\nobjects: [red_cube]\ngoal: [{predicate: "
            "above, a: red_cube}]\n");
  EXPECT_EQ(LoadTaskFile(p).status().message(),
            p + ": goal: predicate \"above\": expected on, in, lifted, open, "
                "closed or near");
  // Found by task_file_fuzz: a bare tag made the name empty, and yaml-cpp
  // kept one of two `goal` keys; both were accepted.
  p = Write(dir, "tag.yaml",
            "name: !x\ninstruction: y\nobjects: [red_cube]\ngoal: []\n");
  EXPECT_EQ(LoadTaskFile(p).status().message(),
            p + ": name: \"\": expected 1 to 64 letters, digits, '_' or '-'");
  p = Write(dir, "twice.yaml",
            "name: x\ninstruction: y\nobjects: [red_cube]\ngoal: []\n"
            "goal: []\n");
  EXPECT_EQ(LoadTaskFile(p).status().message(), p + ": goal: given twice");
  p = Write(dir, "missing.yaml", "name: x\nobjects: [red_cube]\n");
  EXPECT_EQ(LoadTaskFile(p).status().message(), p + ": instruction: missing");
  EXPECT_EQ(LoadTaskFile("/nonexistent/t.yaml").status().message(),
            "/nonexistent/t.yaml: cannot open file");
}

// A scene_mjcf or a task file that is a folder or a device is refused
// before MuJoCo or yaml-cpp reads it (issue 60: /dev/zero read forever).
TEST(TaskFile, AFileThatIsNotARegularFileIsRefusedUnread) {
  const testutil::TestDir dir;
  const std::string p =
      Write(dir, "zero.yaml",
            "name: x\ninstruction: x\nobjects: [red_cube]\n"
            "scene_mjcf: /dev/zero\ngoal:\n  - {predicate: lifted, a: "
            "red_cube}\n");
  EXPECT_EQ(LoadTaskFile(p).status().message(),
            "/dev/zero: not a regular file");
  EXPECT_EQ(LoadTaskFile(dir.path()).status().message(),
            dir.path() + ": not a regular file");
}

TEST(TaskFile, InvalidMjcfGivesMujocosMessageAndTheMjcfFile) {
  const testutil::TestDir dir;
  const std::string mjcf = Write(dir, "broken_scene.xml",
                                 "<mujoco><worldbody><body><geom type='box'/>");
  const std::string p =
      Write(dir, "uses_broken.yaml",
            "name: x\ninstruction: y\nobjects: [red_cube]\n"
            "scene_mjcf: broken_scene.xml\n"
            "goal: [{predicate: lifted, a: red_cube, value: 0.1}]\n");
  absl::StatusOr<TaskSpec> t = LoadTaskFile(p);
  ASSERT_FALSE(t.ok());
  const std::string normal =
      std::filesystem::path(mjcf).lexically_normal().string();
  EXPECT_EQ(t.status().message().rfind(normal + ": MuJoCo: ", 0), 0u)
      << t.status();
}

TEST(TaskFile, ResolveTaskAcceptsNamesAndFiles) {
  EXPECT_TRUE(ResolveTask("open_the_drawer").ok());
  EXPECT_EQ(ResolveTask("juggle").status().message(), "unknown task 'juggle'");
  EXPECT_FALSE(ResolveTask("/nonexistent/x.yaml").ok());
}

}  // namespace
}  // namespace rlvla3
