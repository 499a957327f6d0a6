#include "envs/mujoco_handles.h"

#include <gtest/gtest.h>

#include <cmath>

namespace rlvla3 {
namespace {

constexpr char kFallingBox[] = R"(
<mujoco model="falling_box">
  <option timestep="0.002"/>
  <worldbody>
    <geom name="floor" type="plane" size="1 1 0.1"/>
    <body name="box" pos="0 0 0.5">
      <freejoint/>
      <geom type="box" size="0.05 0.05 0.05" mass="0.1"/>
    </body>
  </worldbody>
</mujoco>)";

TEST(MujocoHandles, LoadsFromStringAndSimulates) {
  absl::StatusOr<MjModelPtr> m =
      LoadModelFromString(kFallingBox, "falling_box.xml");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ((*m)->nq, 7);
  absl::StatusOr<MjDataPtr> d = MakeData(m->get());
  ASSERT_TRUE(d.ok());
  for (int i = 0; i < 1000; ++i) mj_step(m->get(), d->get());
  // After 2 s the box rests on the floor: its centre is at its half-size.
  EXPECT_NEAR((*d)->qpos[2], 0.05, 0.005);
}

TEST(MujocoHandles, InvalidXmlGivesMujocosMessageAndTheName) {
  absl::StatusOr<MjModelPtr> m = LoadModelFromString(
      "<mujoco><worldbody><body><geom type='sphere'/></body>", "broken.xml");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(m.status().message().rfind("broken.xml: MuJoCo: ", 0), 0u)
      << m.status();
  EXPECT_GT(m.status().message().size(),
            std::string("broken.xml: MuJoCo: ").size());
}

TEST(MujocoHandles, MissingFileAndBadName) {
  absl::StatusOr<MjModelPtr> m = LoadModelFromFile("/nonexistent/scene.xml");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().message().rfind("/nonexistent/scene.xml: MuJoCo: ", 0),
            0u);
  EXPECT_FALSE(LoadModelFromString(kFallingBox, "scene.txt").ok());
}

}  // namespace
}  // namespace rlvla3
