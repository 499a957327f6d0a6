// The renderer's batched readback (envs/renderer.h) on Mesa llvmpipe here.
#include "envs/renderer.h"

#include <gtest/gtest.h>

#include <vector>

#include "envs/egl_context.h"
#include "envs/manipulation_env.h"
#include "tests/envs/images_near.h"

namespace rlvla3 {
namespace {

constexpr int kSize = 64;
using Image = std::vector<uint8_t>;
using testutil::ImagesNear;

class RendererTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ConfigureSoftwareRasterizer(0);
    auto gl = EglContext::Create(RenderBackend::kMesa);
    ASSERT_TRUE(gl.ok()) << gl.status();
    gl_ = *std::move(gl);
    EnvOptions o;
    o.render = false;
    auto model = TaskModel::Create(*FindTask("put_red_cube_on_plate"), o);
    ASSERT_TRUE(model.ok()) << model.status();
    model_ = *model;
    // Five states: each env reset from its own seed + env_id.
    for (int id = 0; id < 5; ++id) {
      auto env = ManipulationEnv::Create(model_, o, /*seed=*/3, id);
      ASSERT_TRUE(env.ok()) << env.status();
      envs_.push_back(*std::move(env));
    }
  }
  std::unique_ptr<EglContext> gl_;
  std::shared_ptr<const TaskModel> model_;
  std::vector<std::unique_ptr<ManipulationEnv>> envs_;
};

// Five images through three tiles (a full batch is flushed by the fourth
// Draw) equal five single renders, image by image (the first tile bitwise).
TEST_F(RendererTest, TiledDrawsReadBackTheImagesOfSingleRenders) {
  const mjModel* m = model_->model();
  auto single = Renderer::Create(m, kSize, kSize);
  ASSERT_TRUE(single.ok()) << single.status();
  auto tiled = Renderer::Create(m, kSize, kSize, /*tiles=*/3);
  ASSERT_TRUE(tiled.ok()) << tiled.status();
  EXPECT_EQ((*tiled)->tiles(), 3);
  const int camera = Renderer::CameraId(m, "wrist");
  ASSERT_GE(camera, 0);
  std::vector<Image> expected(envs_.size(), Image(kSize * kSize * 3));
  std::vector<Image> got(envs_.size(), Image(kSize * kSize * 3));
  for (size_t i = 0; i < envs_.size(); ++i) {
    (*single)->Render(m, envs_[i]->data(), camera, expected[i].data());
    (*tiled)->Draw(m, envs_[i]->data(), camera, got[i].data());
  }
  EXPECT_EQ((*tiled)->pending(), 2);  // 3 flushed by the 4th Draw, 2 left
  (*tiled)->Flush();
  EXPECT_EQ((*tiled)->pending(), 0);
  EXPECT_EQ(got[0], expected[0]);
  for (size_t i = 0; i < envs_.size(); ++i) {
    EXPECT_TRUE(ImagesNear(got[i], expected[i])) << "image " << i;
  }
  // The states differ, so a tile read from the wrong place would show.
  EXPECT_FALSE(ImagesNear(expected[0], expected[1]));
}

// An env's observation holds the cameras its options name, in that order:
// each the image that camera renders alone.
TEST_F(RendererTest, AnObservationHoldsTheNamedCamerasInOrder) {
  EnvOptions o;
  o.image_width = o.image_height = kSize;
  o.cameras = {"sideview", "agentview", "wrist"};
  auto env = ManipulationEnv::Create(model_, o, /*seed=*/3, 0);
  ASSERT_TRUE(env.ok()) << env.status();
  const Observation& obs = (*env)->observation();
  const size_t bytes = kSize * kSize * 3;
  ASSERT_EQ(obs.images.size(), 3 * bytes);
  const mjModel* m = model_->model();
  auto single = Renderer::Create(m, kSize, kSize);
  ASSERT_TRUE(single.ok()) << single.status();
  std::vector<Image> alone;
  for (const std::string& name : o.cameras) {
    alone.emplace_back(bytes);
    (*single)->Render(m, (*env)->data(), Renderer::CameraId(m, name.c_str()),
                      alone.back().data());
  }
  for (int c = 0; c < 3; ++c) {
    const Image got(obs.camera(c, bytes), obs.camera(c, bytes) + bytes);
    EXPECT_TRUE(ImagesNear(got, alone[c])) << o.cameras[c];
  }
  EXPECT_FALSE(ImagesNear(alone[0], alone[1]));  // sideview is its own view
  o.cameras = {"agentview", "side"};
  auto bad = ManipulationEnv::Create(model_, o, 3, 0);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(std::string(bad.status().message()).find("no camera 'side'"),
            std::string::npos);
}

TEST_F(RendererTest, TilesAreCappedToWhatTheBufferHolds) {
  auto big = Renderer::Create(model_->model(), 1024, 1024, /*tiles=*/64);
  ASSERT_TRUE(big.ok()) << big.status();
  EXPECT_EQ((*big)->tiles(), 16);  // 4 x 4 tiles of 1024 in 4096
  EXPECT_FALSE(Renderer::Create(model_->model(), 0, 64).ok());
}

}  // namespace
}  // namespace rlvla3
