#include "envs/renderer.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "runtime/steady_clock.h"

namespace rlvla3 {
namespace {

constexpr int kMaxSceneGeoms = 2000;

}  // namespace

absl::StatusOr<std::unique_ptr<Renderer>> Renderer::Create(const mjModel* m,
                                                           int width,
                                                           int height) {
  if (width > m->vis.global.offwidth || height > m->vis.global.offheight) {
    return absl::InvalidArgumentError(
        absl::StrCat("render size ", width, "x", height,
                     " exceeds the model's offscreen buffer ",
                     m->vis.global.offwidth, "x", m->vis.global.offheight));
  }
  std::unique_ptr<Renderer> r(new Renderer);
  r->width_ = width;
  r->height_ = height;
  mjv_defaultScene(&r->scene_);
  mjr_defaultContext(&r->context_);
  mjv_defaultOption(&r->option_);
  mjv_defaultCamera(&r->camera_);
  mjv_makeScene(m, &r->scene_, kMaxSceneGeoms);
  mjr_makeContext(m, &r->context_, mjFONTSCALE_100);
  if (r->context_.offFBO == 0) {
    return absl::UnavailableError(
        "mjr_makeContext created no offscreen framebuffer");
  }
  mjr_setBuffer(mjFB_OFFSCREEN, &r->context_);
  r->scene_.flags[mjRND_SHADOW] = 0;
  r->scene_.flags[mjRND_REFLECTION] = 0;
  r->camera_.type = mjCAMERA_FIXED;
  r->flip_.resize(static_cast<size_t>(width) * 3);
  return r;
}

Renderer::~Renderer() {
  mjr_freeContext(&context_);
  mjv_freeScene(&scene_);
}

int Renderer::CameraId(const mjModel* m, const char* name) {
  return mj_name2id(m, mjOBJ_CAMERA, name);
}

void Renderer::Render(const mjModel* m, mjData* d, int camera_id, uint8_t* rgb,
                      RenderTimes* times) {
  const int64_t t0 = SteadyNowNs();
  camera_.fixedcamid = camera_id;
  mjv_updateScene(m, d, &option_, nullptr, &camera_, mjCAT_ALL, &scene_);
  const mjrRect viewport = {0, 0, width_, height_};
  mjr_setBuffer(mjFB_OFFSCREEN, &context_);
  mjr_render(viewport, &scene_, &context_);
  const int64_t t1 = SteadyNowNs();
  mjr_readPixels(rgb, nullptr, viewport, &context_);
  // OpenGL's rows start at the bottom; images start at the top.
  const size_t row = static_cast<size_t>(width_) * 3;
  for (int y = 0; y < height_ / 2; ++y) {
    uint8_t* a = rgb + y * row;
    uint8_t* b = rgb + (height_ - 1 - y) * row;
    std::memcpy(flip_.data(), a, row);
    std::memcpy(a, b, row);
    std::memcpy(b, flip_.data(), row);
  }
  if (times != nullptr) {
    times->render_ns += t1 - t0;
    times->readback_ns += SteadyNowNs() - t1;
  }
}

}  // namespace rlvla3
