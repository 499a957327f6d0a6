#include "envs/renderer.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "envs/mujoco_handles.h"
#include "runtime/steady_clock.h"

namespace rlvla3 {
namespace {

constexpr int kMaxSceneGeoms = 2000;

}  // namespace

absl::StatusOr<std::unique_ptr<Renderer>> Renderer::Create(const mjModel* m,
                                                           int width,
                                                           int height,
                                                           int tiles) {
  if (width < 1 || height < 1 || width > kMaxBufferSide ||
      height > kMaxBufferSide) {
    return absl::InvalidArgumentError(absl::StrCat("render size ", width, "x",
                                                   height, " is not within 1..",
                                                   kMaxBufferSide));
  }
  const int per_row = kMaxBufferSide / width;
  const int per_column = kMaxBufferSide / height;
  tiles = std::clamp(tiles, 1, std::min(kMaxTiles, per_row * per_column));
  int columns = std::min(
      per_row,
      static_cast<int>(std::ceil(std::sqrt(static_cast<double>(tiles)))));
  const int rows = (tiles + columns - 1) / columns;
  // A batch's buffer is the model's offscreen buffer resized to the grid.
  MjModelPtr grid;
  if (tiles > 1) {
    grid.reset(mj_copyModel(nullptr, m));
    if (grid == nullptr) return absl::InternalError("mj_copyModel failed");
    grid->vis.global.offwidth = columns * width;
    grid->vis.global.offheight = rows * height;
    m = grid.get();
  } else if (width > m->vis.global.offwidth ||
             height > m->vis.global.offheight) {
    return absl::InvalidArgumentError(
        absl::StrCat("render size ", width, "x", height,
                     " exceeds the model's offscreen buffer ",
                     m->vis.global.offwidth, "x", m->vis.global.offheight));
  }
  std::unique_ptr<Renderer> r(new Renderer);
  r->width_ = width;
  r->height_ = height;
  r->tiles_ = tiles;
  r->columns_ = columns;
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
  r->pending_.reserve(static_cast<size_t>(tiles));
  r->staging_.resize(static_cast<size_t>(columns) * width *
                     static_cast<size_t>(rows) * height * 3);
  return r;
}

Renderer::~Renderer() {
  mjr_freeContext(&context_);
  mjv_freeScene(&scene_);
}

int Renderer::CameraId(const mjModel* m, const char* name) {
  return mj_name2id(m, mjOBJ_CAMERA, name);
}

void Renderer::Draw(const mjModel* m, mjData* d, int camera_id, uint8_t* rgb,
                    RenderTimes* times) {
  if (pending() == tiles_) Flush(times);
  const int64_t t0 = SteadyNowNs();
  const int tile = pending();
  camera_.fixedcamid = camera_id;
  mjv_updateScene(m, d, &option_, nullptr, &camera_, mjCAT_ALL, &scene_);
  // mjr_render clears only its viewport (scissored), so earlier tiles stay.
  const mjrRect viewport = {(tile % columns_) * width_,
                            (tile / columns_) * height_, width_, height_};
  mjr_setBuffer(mjFB_OFFSCREEN, &context_);
  mjr_render(viewport, &scene_, &context_);
  pending_.push_back(rgb);
  if (times != nullptr) times->render_ns += SteadyNowNs() - t0;
}

void Renderer::Flush(RenderTimes* times) {
  if (pending_.empty()) return;
  const int64_t t0 = SteadyNowNs();
  const int n = pending();
  const int used_rows = (n + columns_ - 1) / columns_;
  const int buffer_width = (n < columns_ ? n : columns_) * width_;
  const mjrRect rect = {0, 0, buffer_width, used_rows * height_};
  mjr_readPixels(staging_.data(), nullptr, rect, &context_);
  // OpenGL's rows start at the bottom; images start at the top.
  const size_t row = static_cast<size_t>(width_) * 3;
  const size_t stride = static_cast<size_t>(buffer_width) * 3;
  for (int tile = 0; tile < n; ++tile) {
    const uint8_t* origin =
        staging_.data() +
        static_cast<size_t>(tile / columns_) * height_ * stride +
        static_cast<size_t>(tile % columns_) * row;
    uint8_t* image = pending_[static_cast<size_t>(tile)];
    for (int y = 0; y < height_; ++y) {
      std::memcpy(image + static_cast<size_t>(y) * row,
                  origin + static_cast<size_t>(height_ - 1 - y) * stride, row);
    }
  }
  pending_.clear();
  if (times != nullptr) times->readback_ns += SteadyNowNs() - t0;
}

void Renderer::Render(const mjModel* m, mjData* d, int camera_id, uint8_t* rgb,
                      RenderTimes* times) {
  Draw(m, d, camera_id, rgb, times);
  Flush(times);
}

}  // namespace rlvla3
