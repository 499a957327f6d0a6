// File: envs/egl_context.h
// -----------------------------------------------------------------------------
// A headless OpenGL context through EGL, on a chosen backend (RenderBackend):
// a GPU vendor's EGL device, or Mesa llvmpipe through the surfaceless
// platform. One context per rendering thread, made current on it once;
// MakeCurrent() binds it to the calling thread.
// Set LP_NUM_THREADS (threads.lp_num_threads) before the first context.
//
// Example:
//   absl::StatusOr<std::unique_ptr<EglContext>> gl =
//       EglContext::Create(RenderBackend::kMesa);
//   if (!gl.ok()) return gl.status();   // says which EGL call failed
//   (*gl)->MakeCurrent();               // now mjr_makeContext etc. work here
// -----------------------------------------------------------------------------
#ifndef RLVLA3_ENVS_EGL_CONTEXT_H_
#define RLVLA3_ENVS_EGL_CONTEXT_H_

#include <memory>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "runtime/render_choices.h"

namespace rlvla3 {

// Which OpenGL implementation renders (the config's env.render_backend).
//   kGpu   a GPU vendor's EGL device (NVIDIA's driver);
//   kMesa  Mesa llvmpipe through EGL's surfaceless platform (software);
//   kAuto  kGpu where there is one and a process renders on at most
//          kMaxGpuRenderThreads threads, else kMesa: threads of one process
//          wait on the vendor's driver, so beyond a few a GPU renders slower
//          than Mesa; env processes of one worker each scale instead (the
//          figures: docs/experiments.md and docs/simulators.md, "Rendering").
// RenderBackend and its names: runtime/render_choices.h.
inline constexpr int kMaxGpuRenderThreads = 2;
// True if a GPU vendor's EGL device initialises here.
bool HasGpuEglDevice();
// kAuto resolved for a process rendering on `render_threads` threads.
RenderBackend ResolveRenderBackend(RenderBackend backend, int render_threads);

class EglContext {
 public:
  // Creates a context on `backend`'s display (kAuto: as for one thread) and
  // makes it current on the calling thread. Unavailable, saying why, where
  // the backend is missing.
  static absl::StatusOr<std::unique_ptr<EglContext>> Create(
      RenderBackend backend = RenderBackend::kAuto);
  ~EglContext();
  EglContext(const EglContext&) = delete;
  EglContext& operator=(const EglContext&) = delete;

  // Binds the context to the calling thread.
  absl::Status MakeCurrent();
  // "surfaceless (Mesa)" or "EGL device (<vendor>)": the display used.
  const std::string& platform() const { return platform_; }

 private:
  EglContext() = default;
  void* display_ = nullptr;  // EGLDisplay
  void* context_ = nullptr;  // EGLContext
  std::string platform_;
};

// Sets LP_NUM_THREADS for llvmpipe (0 renders on the calling thread) unless the
// environment already sets it; call before the first context is created.
void ConfigureSoftwareRasterizer(int lp_num_threads);

}  // namespace rlvla3

#endif  // RLVLA3_ENVS_EGL_CONTEXT_H_
