// File: envs/renderer.h
// -----------------------------------------------------------------------------
// Renders a model's named cameras offscreen into uint8 HWC RGB buffers
// (row 0 = top of the image). Owns MuJoCo's mjvScene and mjrContext; must be
// created and used on a thread where an EGL context (envs/egl_context.h) is
// current. Shadows and multisampling are off: on llvmpipe the shadow map costs
// more than the image.
//
// Example:
//   absl::StatusOr<std::unique_ptr<Renderer>> r = Renderer::Create(model, 128,
//   128); std::vector<uint8_t> rgb(128 * 128 * 3);
//   (*r)->Render(model, data, (*r)->CameraId(model, "agentview"), rgb.data());
// -----------------------------------------------------------------------------
#ifndef RLVLA3_ENVS_RENDERER_H_
#define RLVLA3_ENVS_RENDERER_H_

#include <mujoco/mujoco.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"

namespace rlvla3 {

// Where one Render call's wall time went, in nanoseconds (accumulated).
// `render` is the CPU side of drawing (scene update, GL commands); `readback`
// is glReadPixels plus the vertical flip: on a GPU it also waits for the
// drawing to finish, on llvmpipe the drawing has happened by then.
struct RenderTimes {
  int64_t render_ns = 0;
  int64_t readback_ns = 0;
};

class Renderer {
 public:
  // `width` x `height` must fit the model's offscreen buffer (visual/global).
  static absl::StatusOr<std::unique_ptr<Renderer>> Create(const mjModel* m,
                                                          int width,
                                                          int height);
  ~Renderer();
  Renderer(const Renderer&) = delete;
  Renderer& operator=(const Renderer&) = delete;

  // Id of camera `name`, or -1.
  static int CameraId(const mjModel* m, const char* name);
  // Renders camera `camera_id` of the state in `d` into `rgb` (height*width*3
  // bytes); adds its phases' times to `times` if given.
  void Render(const mjModel* m, mjData* d, int camera_id, uint8_t* rgb,
              RenderTimes* times = nullptr);
  int width() const { return width_; }
  int height() const { return height_; }

 private:
  Renderer() = default;
  int width_ = 0;
  int height_ = 0;
  mjvScene scene_;
  mjrContext context_;
  mjvOption option_;
  mjvCamera camera_;
  std::vector<uint8_t> flip_;  // one row, for the vertical flip
};

}  // namespace rlvla3

#endif  // RLVLA3_ENVS_RENDERER_H_
