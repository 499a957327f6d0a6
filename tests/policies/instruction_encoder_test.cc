// The policy's own tokenizer (issue 50, item 3): instructions encoded as the
// interface declares: UTF-8 bytes (each byte's value its id, cut to
// max_len), a SentencePiece model's ids equal to what Python's sentencepiece
// gives for the same model, rl-vla3's word ids by default; a model file that
// does not load is an error naming it.
#include "policies/instruction_encoder.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "tests/test_dir.h"

namespace rlvla3 {
namespace {

InstructionSpec Spec(InstructionKind kind, int64_t max_len,
                     const std::string& model = "") {
  InstructionSpec s;
  s.tokenizer = kind;
  s.max_len = max_len;
  s.model = model;
  return s;
}

TEST(InstructionEncoder, BytesAreTheUtf8ValuesCutToMaxLen) {
  absl::StatusOr<InstructionEncoder> e = InstructionEncoder::Make(
      Spec(InstructionKind::kBytes, 6), TextTokenizer());
  ASSERT_TRUE(e.ok()) << e.status();
  absl::StatusOr<std::vector<int64_t>> ids = e->Encode("ab\xc3\xbc");  // abü
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(*ids, (std::vector<int64_t>{97, 98, 0xc3, 0xbc}));
  at::Tensor text, lens;
  ASSERT_TRUE(e->EncodeTable({"open the drawer", "go"}, &text, &lens).ok());
  EXPECT_EQ(text.sizes(), (std::vector<int64_t>{2, 6}));
  EXPECT_EQ(lens[0].item<int64_t>(), 6);
  EXPECT_EQ(lens[1].item<int64_t>(), 2);
  EXPECT_EQ(text[0][4].item<int64_t>(), ' ');
  EXPECT_EQ(text[1][2].item<int64_t>(), 0);  // padding
}

TEST(InstructionEncoder, WordsAreRlVla3sOwnIds) {
  const TextTokenizer words = TextTokenizer::Build({"open the drawer"});
  absl::StatusOr<InstructionEncoder> e =
      InstructionEncoder::Make(Spec(InstructionKind::kWords, 16), words);
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(*e->Encode("Open the DRAWER"), words.Encode("open the drawer", 16));
}

TEST(InstructionEncoder, SentencePieceIdsAreWhatPythonGives) {
  if (std::string(RLVLA3_PYTHON).empty()) {
    GTEST_SKIP() << "no python3 with sentencepiece at configure time";
  }
  const testutil::TestDir dir;
  const std::string prefix = dir.File("tok");
  const std::string out = dir.File("ids.txt");
  const std::string text = "put the red cube in the blue bowl";
  const std::string script =
      "import sentencepiece as spm\n"
      "lines = ['put the red cube in the basket', 'open the drawer',\n"
      "         'lift the red cube', 'put the blue cube in the bowl',\n"
      "         'stack the green cube on the red cube'] * 20\n"
      "open('" +
      dir.File("corpus.txt") +
      "', 'w').write('\\n'.join(lines))\n"
      "spm.SentencePieceTrainer.train(input='" +
      dir.File("corpus.txt") + "', model_prefix='" + prefix +
      "', vocab_size=40, hard_vocab_limit=False, minloglevel=2)\n"
      "sp = spm.SentencePieceProcessor(model_file='" +
      prefix +
      ".model')\n"
      "open('" +
      out + "', 'w').write(' '.join(map(str, sp.encode('" + text + "'))))\n";
  std::ofstream(dir.File("train.py")) << script;
  const std::string cmd = std::string(RLVLA3_PYTHON) + " " +
                          dir.File("train.py") + " > /dev/null 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::ifstream in(out);
  std::vector<int64_t> want;
  for (int64_t id; in >> id;) want.push_back(id);
  ASSERT_FALSE(want.empty());
  absl::StatusOr<InstructionEncoder> e = InstructionEncoder::Make(
      Spec(InstructionKind::kSentencePiece, 64, prefix + ".model"),
      TextTokenizer());
  ASSERT_TRUE(e.ok()) << e.status();
  absl::StatusOr<std::vector<int64_t>> ids = e->Encode(text);
  ASSERT_TRUE(ids.ok()) << ids.status();
  EXPECT_EQ(*ids, want);
  // Cut to max_len like any other tokenizer.
  e = InstructionEncoder::Make(
      Spec(InstructionKind::kSentencePiece, 3, prefix + ".model"),
      TextTokenizer());
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(*e->Encode(text),
            std::vector<int64_t>(want.begin(), want.begin() + 3));
}

TEST(InstructionEncoder, AModelFileThatDoesNotLoadIsAnErrorNamingIt) {
  const testutil::TestDir dir;
  const std::string bad = dir.File("broken.model");
  std::ofstream(bad) << "not a sentencepiece model";
  for (const std::string& path : {bad, dir.File("missing.model")}) {
    absl::StatusOr<InstructionEncoder> e = InstructionEncoder::Make(
        Spec(InstructionKind::kSentencePiece, 16, path), TextTokenizer());
    ASSERT_FALSE(e.ok()) << path;
    EXPECT_EQ(std::string(e.status().message())
                  .rfind(path + ": not a SentencePiece model that loads", 0),
              0u)
        << e.status();
  }
}

// A folder or a device as the model is refused before SentencePiece reads it
// (issue 60: `.` threw an uncaught ios_failure; /dev/zero read 3.1 GB).
TEST(InstructionEncoder, AModelPathThatIsNotARegularFileIsRefusedUnread) {
  const testutil::TestDir dir;
  for (const std::string& path : {dir.path(), std::string("/dev/zero")}) {
    absl::StatusOr<InstructionEncoder> e = InstructionEncoder::Make(
        Spec(InstructionKind::kSentencePiece, 16, path), TextTokenizer());
    ASSERT_FALSE(e.ok()) << path;
    EXPECT_NE(
        std::string(e.status().message()).find(path + ": not a regular file"),
        std::string::npos)
        << e.status();
  }
}

}  // namespace
}  // namespace rlvla3
