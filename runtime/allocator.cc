#include "runtime/allocator.h"

#include <dlfcn.h>
#include <gnu/libc-version.h>

#include <cstddef>
#include <string>

namespace rlvla3 {
namespace {

// `name` as the dynamic linker resolves it for this process: the definition
// that won symbol interposition (link order, LD_PRELOAD).
template <typename Fn>
Fn Lookup(const char* name) {
  return reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, name));
}

// The file (shared library or executable) that defines malloc.
std::string MallocProvider() {
  Dl_info info{};
  void* malloc_fn = dlsym(RTLD_DEFAULT, "malloc");
  if (malloc_fn == nullptr || dladdr(malloc_fn, &info) == 0 ||
      info.dli_fname == nullptr)
    return "";
  return info.dli_fname;
}

bool Contains(const std::string& s, const char* part) {
  return s.find(part) != std::string::npos;
}

}  // namespace

std::string AllocatorInUse() {
  const std::string lib = MallocProvider();
  if (Contains(lib, "tcmalloc")) {
    using TcVersion = const char* (*)(int*, int*, const char**);
    auto tc = Lookup<TcVersion>("tc_version");
    return tc ? std::string("tcmalloc (") + tc(nullptr, nullptr, nullptr) + ")"
              : "tcmalloc";
  }
  if (Contains(lib, "jemalloc")) {
    using Mallctl = int (*)(const char*, void*, size_t*, void*, size_t);
    const char* version = nullptr;
    size_t size = sizeof(version);
    auto mallctl = Lookup<Mallctl>("mallctl");
    if (mallctl && mallctl("version", &version, &size, nullptr, 0) == 0 &&
        version != nullptr)
      return std::string("jemalloc (") + version + ")";
    return "jemalloc";
  }
  if (Contains(lib, "mimalloc")) {
    using MiVersion = int (*)();
    auto mi = Lookup<MiVersion>("mi_version");
    return mi ? "mimalloc (" + std::to_string(mi()) + ")" : "mimalloc";
  }
  if (Contains(lib, "libc.so"))
    return std::string("glibc malloc (") + gnu_get_libc_version() + ")";
  // Sanitizer runtimes and static allocators define malloc in the executable.
  return "malloc from " +
         (lib.empty() ? std::string("an unknown object") : lib);
}

}  // namespace rlvla3
