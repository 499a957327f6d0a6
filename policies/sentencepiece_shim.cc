// The one file that includes SentencePiece, built as its own module
// (librlvla3_sentencepiece.so) and loaded by sentencepiece_model.cc with
// dlopen(RTLD_LOCAL | RTLD_DEEPBIND). Debian's libsentencepiece exports the
// protobuf-lite it bundles; linked into a process that also loads the
// system libprotobuf (gRPC, LibTorch), one copy's symbols replace the
// other's and the process crashes at start. Loaded deep-bound and local,
// the library keeps its own copy and the process never sees it. A C API
// crosses the boundary: no C++ object or allocation passes it.
#include <sentencepiece_processor.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

namespace {

void CopyError(const std::string& what, char* error, size_t error_len) {
  if (error == nullptr || error_len == 0) return;
  const size_t n = std::min(what.size(), error_len - 1);
  std::memcpy(error, what.data(), n);
  error[n] = '\0';
}

}  // namespace

extern "C" {

// A loaded model, or null with `error` set.
// No exception crosses this C boundary: what SentencePiece or the streams
// under it throw becomes `error`.
void* rlvla3_spm_load(const char* path, char* error, size_t error_len) {
  auto* p = new sentencepiece::SentencePieceProcessor();
  try {
    const sentencepiece::util::Status s = p->Load(path);
    if (s.ok()) return p;
    CopyError(s.ToString(), error, error_len);
  } catch (const std::exception& e) {
    CopyError(e.what(), error, error_len);
  } catch (...) {
    CopyError("an unknown exception while loading", error, error_len);
  }
  delete p;
  return nullptr;
}

// The ids of `text` (len bytes): returns how many there are (the first
// `capacity` written to `ids`), or -1 with `error` set.
int rlvla3_spm_encode(void* model, const char* text, size_t len, int* ids,
                      int capacity, char* error, size_t error_len) {
  std::vector<int> out;
  try {
    const sentencepiece::util::Status s =
        static_cast<sentencepiece::SentencePieceProcessor*>(model)->Encode(
            std::string(text, len), &out);
    if (!s.ok()) {
      CopyError(s.ToString(), error, error_len);
      return -1;
    }
  } catch (const std::exception& e) {
    CopyError(e.what(), error, error_len);
    return -1;
  }
  for (size_t i = 0; i < out.size() && i < static_cast<size_t>(capacity); ++i) {
    ids[i] = out[i];
  }
  return static_cast<int>(out.size());
}

int rlvla3_spm_vocab_size(void* model) {
  return static_cast<sentencepiece::SentencePieceProcessor*>(model)
      ->GetPieceSize();
}

void rlvla3_spm_free(void* model) {
  delete static_cast<sentencepiece::SentencePieceProcessor*>(model);
}

}  // extern "C"
