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

// The process-wide display: initialised once, shared by every context.
struct Display {
  EGLDisplay dpy = EGL_NO_DISPLAY;
  std::string platform;
  std::string error;
};

Display OpenDisplay() {
  Display out;
  auto get_platform_display = reinterpret_cast<PFNEGLGETPLATFORMDISPLAYEXTPROC>(
      eglGetProcAddress("eglGetPlatformDisplayEXT"));
  auto query_devices = reinterpret_cast<PFNEGLQUERYDEVICESEXTPROC>(
      eglGetProcAddress("eglQueryDevicesEXT"));
  EGLint major = 0, minor = 0;
  // 1) An EGL device (NVIDIA's driver on GPU machines, dm_control's route).
  if (get_platform_display != nullptr && query_devices != nullptr &&
      getenv("RLVLA3_EGL_SURFACELESS") == nullptr) {
    EGLDeviceEXT devices[kMaxDevices];
    EGLint n = 0;
    if (query_devices(kMaxDevices, devices, &n) && n > 0) {
      for (EGLint i = 0; i < n; ++i) {
        EGLDisplay dpy =
            get_platform_display(EGL_PLATFORM_DEVICE_EXT, devices[i], nullptr);
        if (dpy != EGL_NO_DISPLAY && eglInitialize(dpy, &major, &minor)) {
          const char* vendor = eglQueryString(dpy, EGL_VENDOR);
          // Mesa's software device works too, but surfaceless is its native
          // path.
          if (vendor != nullptr &&
              std::string(vendor).find("Mesa") == std::string::npos) {
            out.dpy = dpy;
            out.platform = absl::StrCat("device (", vendor, ")");
            return out;
          }
          eglTerminate(dpy);
        }
      }
    }
  }
  // 2) Mesa surfaceless (llvmpipe on machines without a GPU).
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
      "no EGL display: neither an EGL device nor Mesa's surfaceless platform "
      "initialised "
      "(install libegl-mesa0 and libgl1-mesa-dri)";
  return out;
}

const Display& SharedDisplay() {
  static const Display* d = new Display(OpenDisplay());
  return *d;
}

}  // namespace

void ConfigureSoftwareRasterizer(int lp_num_threads) {
  setenv("LP_NUM_THREADS", std::to_string(lp_num_threads).c_str(),
         /*overwrite=*/0);
}

absl::StatusOr<std::unique_ptr<EglContext>> EglContext::Create() {
  const Display& disp = SharedDisplay();
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
