// File: policies/sentencepiece_model.h
// -----------------------------------------------------------------------------
// SentencePieceModel: a policy's own SentencePiece tokenizer (a .model file
// trained with spm_train or Python's sentencepiece), through Debian's
// libsentencepiece. The library is never linked into the process: it
// exports the protobuf-lite it bundles, which replaces the system
// libprotobuf's symbols (gRPC, LibTorch) and crashes the process at start.
// policies/sentencepiece_shim.cc wraps it in a module with a C API
// (librlvla3_sentencepiece.so) that this class loads deep-bound and local
// (RTLD_DEEPBIND | RTLD_LOCAL), on first use. Its header also defines
// absl::string_view, which clashes with Debian's Abseil: only the shim
// includes it. policies/instruction_encoder.h wraps this in a Status.
//
// Example:
//   std::string error;
//   std::unique_ptr<SentencePieceModel> m =
//       SentencePieceModel::Load("tok.model", &error);
//   if (m == nullptr) return error;
//   std::vector<int> ids;
//   if (!m->Encode("pick up the red cube", &ids, &error)) return error;
// -----------------------------------------------------------------------------
#ifndef RLVLA3_POLICIES_SENTENCEPIECE_MODEL_H_
#define RLVLA3_POLICIES_SENTENCEPIECE_MODEL_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace rlvla3 {

class SentencePieceModel {
 public:
  // The model at `path`; nullptr with `*error` naming the file and the
  // library's reason when it does not load.
  // Models larger than this are refused unread (the largest public ones,
  // multilingual 256k-piece vocabularies, are ~5 MB).
  static constexpr uintmax_t kMaxModelBytes = uintmax_t{64} << 20;
  static std::unique_ptr<SentencePieceModel> Load(const std::string& path,
                                                  std::string* error);
  ~SentencePieceModel();
  SentencePieceModel(const SentencePieceModel&) = delete;
  SentencePieceModel& operator=(const SentencePieceModel&) = delete;

  // The pieces' ids of `text` (no BOS or EOS added); false with `*error`
  // set where the library refuses.
  bool Encode(const std::string& text, std::vector<int>* ids,
              std::string* error) const;
  int vocab_size() const;

 private:
  struct Impl;
  explicit SentencePieceModel(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace rlvla3

#endif  // RLVLA3_POLICIES_SENTENCEPIECE_MODEL_H_
