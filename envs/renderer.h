// File: envs/renderer.h
// -----------------------------------------------------------------------------
// Renders a model's named cameras offscreen into uint8 HWC RGB buffers
// (row 0 = top of the image). Owns MuJoCo's mjvScene and mjrContext; must be
// created and used on a thread where an EGL context (envs/egl_context.h) is
// current. Shadows and multisampling are off: on llvmpipe the shadow map costs
// more than the image.
//
// Batched readback: a renderer made for `tiles` images draws each image into
// its own tile of one offscreen buffer (Draw) and reads every drawn tile back
// with one glReadPixels (Flush). A readback waits for the GPU (or, on
// llvmpipe, runs the rasteriser), so one per batch instead of one per image
// saves a round trip per image; the GPU draws while the CPU steps the next
// env. Render() is Draw + Flush of one image.
//
// Example:
//   absl::StatusOr<std::unique_ptr<Renderer>> r =
//       Renderer::Create(model, 128, 128, /*tiles=*/16);
//   (*r)->Draw(model, data_a, (*r)->CameraId(model, "agentview"), rgb_a);
//   (*r)->Draw(model, data_b, (*r)->CameraId(model, "agentview"), rgb_b);
//   (*r)->Flush();  // rgb_a and rgb_b hold their images now
// -----------------------------------------------------------------------------
#ifndef RLVLA3_ENVS_RENDERER_H_
#define RLVLA3_ENVS_RENDERER_H_

#include <mujoco/mujoco.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"

namespace rlvla3 {

// Where the rendering's wall time went, in nanoseconds (accumulated).
// `render` is the CPU side of drawing (scene update, GL commands); `readback`
// is glReadPixels plus the copy out of the tiles with the vertical flip: on a
// GPU it also waits for the drawing to finish, on llvmpipe it rasterises.
struct RenderTimes {
  int64_t render_ns = 0;
  int64_t readback_ns = 0;
};

class Renderer {
 public:
  // The most images one batch holds, and the largest offscreen side.
  static constexpr int kMaxTiles = 64;
  static constexpr int kMaxBufferSide = 4096;

  // Images of `width` x `height`; up to `tiles` of them (capped at kMaxTiles
  // and at what fits kMaxBufferSide) are read back together. With one tile
  // the size must fit the model's offscreen buffer (visual/global).
  static absl::StatusOr<std::unique_ptr<Renderer>> Create(const mjModel* m,
                                                          int width, int height,
                                                          int tiles = 1);
  ~Renderer();
  Renderer(const Renderer&) = delete;
  Renderer& operator=(const Renderer&) = delete;

  // Id of camera `name`, or -1.
  static int CameraId(const mjModel* m, const char* name);
  // Draws camera `camera_id` of the state in `d` into the next tile; its
  // image lands in `rgb` (height*width*3 bytes, alive until then) at the next
  // Flush. A full batch is flushed first.
  void Draw(const mjModel* m, mjData* d, int camera_id, uint8_t* rgb,
            RenderTimes* times = nullptr);
  // Reads every drawn tile back into its image (nothing to do if none).
  void Flush(RenderTimes* times = nullptr);
  // Draw + Flush: renders one image now.
  void Render(const mjModel* m, mjData* d, int camera_id, uint8_t* rgb,
              RenderTimes* times = nullptr);
  int width() const { return width_; }
  int height() const { return height_; }
  int tiles() const { return tiles_; }
  int pending() const { return static_cast<int>(pending_.size()); }

 private:
  Renderer() = default;
  int width_ = 0;
  int height_ = 0;
  int tiles_ = 1;
  int columns_ = 1;  // tiles per row of the offscreen buffer
  mjvScene scene_;
  mjrContext context_;
  mjvOption option_;
  mjvCamera camera_;
  std::vector<uint8_t*> pending_;  // tile i's image, drawn and not read back
  std::vector<uint8_t> staging_;   // the read-back rows of tiles
};

}  // namespace rlvla3

#endif  // RLVLA3_ENVS_RENDERER_H_
