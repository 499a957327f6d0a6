#include "policies/sentencepiece_model.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <system_error>

#include "runtime/text_file.h"

namespace rlvla3 {
namespace {

using LoadFn = void* (*)(const char*, char*, size_t);
using EncodeFn = int (*)(void*, const char*, size_t, int*, int, char*, size_t);
using SizeFn = int (*)(void*);
using FreeFn = void (*)(void*);

constexpr char kModule[] = "librlvla3_sentencepiece.so";

// Where the module may be: the build tree's (tests, a build run in place),
// beside the binary or in ../lib (an install, the image), then the linker's
// search path.
std::vector<std::string> ModuleCandidates() {
  std::vector<std::string> out;
#ifdef RLVLA3_SENTENCEPIECE_MODULE
  out.push_back(RLVLA3_SENTENCEPIECE_MODULE);
#endif
  std::error_code ec;
  const std::filesystem::path exe =
      std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    out.push_back((exe.parent_path() / kModule).string());
    out.push_back((exe.parent_path().parent_path() / "lib" / kModule).string());
  }
  out.push_back(kModule);
  return out;
}

}  // namespace

struct SentencePieceModel::Impl {
  void* module = nullptr;  // dlopen handle
  void* model = nullptr;
  EncodeFn encode = nullptr;
  SizeFn vocab_size = nullptr;
  FreeFn free = nullptr;
  ~Impl() {
    if (model != nullptr && free != nullptr) free(model);
    if (module != nullptr) dlclose(module);
  }
};

SentencePieceModel::SentencePieceModel(std::unique_ptr<Impl> impl)
    : impl_(std::move(impl)) {}

SentencePieceModel::~SentencePieceModel() = default;

std::unique_ptr<SentencePieceModel> SentencePieceModel::Load(
    const std::string& path, std::string* error) {
  // A folder, a device (/dev/zero) or a file past any real model's size is
  // refused before SentencePiece reads a byte of it.
  if (absl::Status s = CheckRegularFile(path, kMaxModelBytes); !s.ok()) {
    *error = path + ": not a SentencePiece model that loads: " +
             std::string(s.message());
    return nullptr;
  }
  auto impl = std::make_unique<Impl>();
  std::string tried;
  for (const std::string& candidate : ModuleCandidates()) {
    if (candidate.find('/') != std::string::npos &&
        access(candidate.c_str(), R_OK) != 0) {
      continue;
    }
    impl->module =
        dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
    if (impl->module != nullptr) break;
    const char* why = dlerror();
    tried += "; " + candidate + ": " + (why != nullptr ? why : "?");
  }
  if (impl->module == nullptr) {
    *error = path + ": cannot read a SentencePiece model: " + kModule +
             " (built with rl-vla3; needs Debian's libsentencepiece0) did not "
             "load" +
             tried;
    return nullptr;
  }
  const auto load =
      reinterpret_cast<LoadFn>(dlsym(impl->module, "rlvla3_spm_load"));
  impl->encode =
      reinterpret_cast<EncodeFn>(dlsym(impl->module, "rlvla3_spm_encode"));
  impl->vocab_size =
      reinterpret_cast<SizeFn>(dlsym(impl->module, "rlvla3_spm_vocab_size"));
  impl->free = reinterpret_cast<FreeFn>(dlsym(impl->module, "rlvla3_spm_free"));
  if (load == nullptr || impl->encode == nullptr ||
      impl->vocab_size == nullptr || impl->free == nullptr) {
    *error = path + ": " + kModule + " lacks the rlvla3_spm_* functions";
    return nullptr;
  }
  char why[512] = {0};
  impl->model = load(path.c_str(), why, sizeof(why));
  if (impl->model == nullptr) {
    *error = path + ": not a SentencePiece model that loads: " + why;
    return nullptr;
  }
  return std::unique_ptr<SentencePieceModel>(
      new SentencePieceModel(std::move(impl)));
}

bool SentencePieceModel::Encode(const std::string& text, std::vector<int>* ids,
                                std::string* error) const {
  char why[512] = {0};
  ids->resize(64);
  for (;;) {
    const int n =
        impl_->encode(impl_->model, text.data(), text.size(), ids->data(),
                      static_cast<int>(ids->size()), why, sizeof(why));
    if (n < 0) {
      *error = why;
      return false;
    }
    if (static_cast<size_t>(n) <= ids->size()) {
      ids->resize(static_cast<size_t>(n));
      return true;
    }
    ids->resize(static_cast<size_t>(n));  // longer than guessed: once more
  }
}

int SentencePieceModel::vocab_size() const {
  return impl_->vocab_size(impl_->model);
}

}  // namespace rlvla3
