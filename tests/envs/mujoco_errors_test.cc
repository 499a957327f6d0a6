#include "envs/mujoco_errors.h"

#include <gtest/gtest.h>
#include <mujoco/mujoco.h>

#include <string>

#include "envs/mujoco_handles.h"

namespace rlvla3 {
namespace {

// A box whose mjData stack (nstack, in mjtNums) holds a step without
// contacts but not one with them: once the box lands, mj_stackAlloc reports
// the overflow through mju_error from deep inside mj_step.
constexpr char kTinyStack[] = R"(
<mujoco model="tiny_stack">
  <size nstack="200"/>
  <worldbody>
    <geom name="floor" type="plane" size="1 1 0.1"/>
    <body name="box" pos="0 0 0.1">
      <freejoint/>
      <geom type="box" size="0.05 0.05 0.05" mass="0.1"/>
    </body>
  </worldbody>
</mujoco>)";

class MujocoErrors : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { InstallMujocoErrorHandlers(); }
};

TEST_F(MujocoErrors, AnErrorThrowsWithMujocosMessageInsteadOfExiting) {
  try {
    mju_error("boom");
    FAIL() << "mju_error returned";
  } catch (const MujocoError& e) {
    EXPECT_STREQ(e.what(), "MuJoCo: boom");
  }
}

TEST_F(MujocoErrors, AStackOverflowInsideAStepUnwindsThroughMujoco) {
  absl::StatusOr<MjModelPtr> m = LoadModelFromString(kTinyStack, "tiny.xml");
  ASSERT_TRUE(m.ok()) << m.status();
  absl::StatusOr<MjDataPtr> d = MakeData(m->get());
  ASSERT_TRUE(d.ok()) << d.status();
  std::string what;
  try {
    for (int i = 0; i < 500; ++i) mj_step(m->get(), d->get());
  } catch (const MujocoError& e) {
    what = e.what();
  }
  EXPECT_EQ(what, "MuJoCo: Stack overflow");
  // The interrupted data is reset and usable again (what the env worker does).
  mj_resetData(m->get(), d->get());
  EXPECT_EQ((*d)->pstack, 0);
}

}  // namespace
}  // namespace rlvla3
