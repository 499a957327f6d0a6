// File: envs/egl_context.h
// -----------------------------------------------------------------------------
// A headless OpenGL context through EGL: Mesa's surfaceless platform on
// machines without a GPU (llvmpipe), an EGL device on GPU machines. One
// context per rendering thread; MakeCurrent() binds it to the calling thread.
// Set LP_NUM_THREADS (threads.lp_num_threads) before the first context.
//
// Example:
//   absl::StatusOr<std::unique_ptr<EglContext>> gl = EglContext::Create();
//   if (!gl.ok()) return gl.status();   // says which EGL call failed
//   (*gl)->MakeCurrent();               // now mjr_makeContext etc. work here
// -----------------------------------------------------------------------------
#ifndef RLVLA3_ENVS_EGL_CONTEXT_H_
#define RLVLA3_ENVS_EGL_CONTEXT_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace rlvla3 {

class EglContext {
 public:
  // Creates a context and makes it current on the calling thread.
  static absl::StatusOr<std::unique_ptr<EglContext>> Create();
  ~EglContext();
  EglContext(const EglContext&) = delete;
  EglContext& operator=(const EglContext&) = delete;

  // Binds the context to the calling thread.
  absl::Status MakeCurrent();
  // "surfaceless" or "device": which EGL platform was used.
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
