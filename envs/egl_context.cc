#include "envs/egl_context.h"

#include <EGL/egl.h>
#include <EGL/eglext.h>
#include <stdlib.h>

#include <mutex>
#include <string>

#include "absl/strings/str_cat.h"

namespace rlvla3 {
namespace {

constexpr int kMaxDevices = 16;

std::string EglError(const char* call) {
  return absl::StrCat(call, " failed (EGL error 0x", absl::Hex(eglGetError()),
                      ")");
}

// One display per backend, initialised once (EGL displays are process-wide
// in EGL itself), shared by every context of that backend.
struct Display {
  EGLDisplay dpy = EGL_NO_DISPLAY;
  std::string platform;
  std::string error;
};

// A GPU vendor's EGL device (NVIDIA's driver on GPU machines; dm_control's
// route): the first device whose vendor is not Mesa.
Display OpenGpuDevice() {
  Display out;
  auto get_platform_display = reinterpret_cast<PFNEGLGETPLATFORMDISPLAYEXTPROC>(
      eglGetProcAddress("eglGetPlatformDisplayEXT"));
  auto query_devices = reinterpret_cast<PFNEGLQUERYDEVICESEXTPROC>(
      eglGetProcAddress("eglQueryDevicesEXT"));
  EGLDeviceEXT devices[kMaxDevices];
  EGLint n = 0;
  EGLint major = 0, minor = 0;
  if (get_platform_display != nullptr && query_devices != nullptr &&
      query_devices(kMaxDevices, devices, &n)) {
    for (EGLint i = 0; i < n; ++i) {
      EGLDisplay dpy =
          get_platform_display(EGL_PLATFORM_DEVICE_EXT, devices[i], nullptr);
      if (dpy == EGL_NO_DISPLAY || !eglInitialize(dpy, &major, &minor))
        continue;
      const char* vendor = eglQueryString(dpy, EGL_VENDOR);
      if (vendor != nullptr &&
          std::string(vendor).find("Mesa") == std::string::npos) {
        out.dpy = dpy;
        out.platform = absl::StrCat("EGL device (", vendor, ")");
        return out;
      }
      eglTerminate(dpy);
    }
  }
  out.error = absl::StrCat(
      "no GPU EGL device (env.render_backend gpu): ", n,
      " EGL device(s), none from a GPU vendor; use env.render_backend mesa");
  return out;
}

// Mesa llvmpipe through the surfaceless platform (software, on every core).
Display OpenMesa() {
  Display out;
  auto get_platform_display = reinterpret_cast<PFNEGLGETPLATFORMDISPLAYEXTPROC>(
      eglGetProcAddress("eglGetPlatformDisplayEXT"));
  EGLint major = 0, minor = 0;
  if (get_platform_display != nullptr) {
    EGLDisplay dpy = get_platform_display(EGL_PLATFORM_SURFACELESS_MESA,
                                          EGL_DEFAULT_DISPLAY, nullptr);
    if (dpy != EGL_NO_DISPLAY && eglInitialize(dpy, &major, &minor)) {
      out.dpy = dpy;
      out.platform = "surfaceless (Mesa)";
      return out;
    }
  }
  out.error =
      "no Mesa EGL display: the surfaceless platform did not initialise "
      "(install libegl-mesa0 and libgl1-mesa-dri)";
  return out;
}

const Display& SharedDisplay(RenderBackend backend) {
  if (backend == RenderBackend::kGpu) {
    static const Display* gpu = new Display(OpenGpuDevice());
    return *gpu;
  }
  static const Display* mesa = new Display(OpenMesa());
  return *mesa;
}

}  // namespace

bool HasGpuEglDevice() {
  return SharedDisplay(RenderBackend::kGpu).dpy != EGL_NO_DISPLAY;
}

RenderBackend ResolveRenderBackend(RenderBackend backend, int render_threads) {
  if (backend != RenderBackend::kAuto) return backend;
  return HasGpuEglDevice() && render_threads <= kMaxGpuRenderThreads
             ? RenderBackend::kGpu
             : RenderBackend::kMesa;
}

void ConfigureSoftwareRasterizer(int lp_num_threads) {
  setenv("LP_NUM_THREADS", std::to_string(lp_num_threads).c_str(),
         /*overwrite=*/0);
}

absl::StatusOr<std::unique_ptr<EglContext>> EglContext::Create(
    RenderBackend backend) {
  const Display& disp = SharedDisplay(ResolveRenderBackend(backend, 1));
  if (disp.dpy == EGL_NO_DISPLAY) return absl::UnavailableError(disp.error);
  const EGLint config_attribs[] = {EGL_SURFACE_TYPE,
                                   EGL_PBUFFER_BIT,
                                   EGL_RED_SIZE,
                                   8,
                                   EGL_GREEN_SIZE,
                                   8,
                                   EGL_BLUE_SIZE,
                                   8,
                                   EGL_ALPHA_SIZE,
                                   8,
                                   EGL_DEPTH_SIZE,
                                   24,
                                   EGL_RENDERABLE_TYPE,
                                   EGL_OPENGL_BIT,
                                   EGL_NONE};
  EGLConfig config;
  EGLint n = 0;
  if (!eglChooseConfig(disp.dpy, config_attribs, &config, 1, &n) || n < 1) {
    return absl::UnavailableError(EglError("eglChooseConfig"));
  }
  if (!eglBindAPI(EGL_OPENGL_API))
    return absl::UnavailableError(EglError("eglBindAPI"));
  EGLContext ctx = eglCreateContext(disp.dpy, config, EGL_NO_CONTEXT, nullptr);
  if (ctx == EGL_NO_CONTEXT)
    return absl::UnavailableError(EglError("eglCreateContext"));
  std::unique_ptr<EglContext> c(new EglContext);
  c->display_ = disp.dpy;
  c->context_ = ctx;
  c->platform_ = disp.platform;
  if (absl::Status s = c->MakeCurrent(); !s.ok()) return s;
  return c;
}

absl::Status EglContext::MakeCurrent() {
  if (!eglMakeCurrent(display_, EGL_NO_SURFACE, EGL_NO_SURFACE, context_)) {
    return absl::UnavailableError(EglError("eglMakeCurrent"));
  }
  return absl::OkStatus();
}

EglContext::~EglContext() {
  if (eglGetCurrentContext() == context_) {
    eglMakeCurrent(display_, EGL_NO_SURFACE, EGL_NO_SURFACE, EGL_NO_CONTEXT);
  }
  eglDestroyContext(display_, context_);
}

}  // namespace rlvla3
