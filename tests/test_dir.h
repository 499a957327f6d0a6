// One fresh directory per test, so a test never sees another test's files or
// the files an earlier run left behind.
//
//   TEST(Config, RejectsBadValue) {
//     const rlvla3::testutil::TestDir dir;
//     std::ofstream(dir.File("bad.yaml")) << "batcher:\n  max_batch: -3\n";
//     ...
//   }
//
// The directory is <TempDir>/<Suite>.<Test>.XXXXXX, made by mkdtemp(3): it is
// empty when the test starts and unique under `ctest -j` and across runs. It
// is removed when the test passes and kept (its path printed) when it fails.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <system_error>

namespace rlvla3::testutil {

class TestDir {
 public:
  TestDir() {
    const ::testing::TestInfo* info =
        ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name = "rlvla3";
    if (info != nullptr)
      name = std::string(info->test_suite_name()) + "." + info->name();
    for (char& c : name)
      if (c == '/') c = '_';  // parameterised tests: Suite/Name/0
    std::string pattern = ::testing::TempDir() + "/" + name + ".XXXXXX";
    if (mkdtemp(pattern.data()) == nullptr) {
      std::perror(("mkdtemp " + pattern).c_str());
      std::abort();  // no test can run without its directory
    }
    path_ = pattern;
  }
  ~TestDir() {
    if (::testing::Test::HasFailure()) {
      std::fprintf(stderr, "test files kept in %s\n", path_.c_str());
      return;
    }
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TestDir(const TestDir&) = delete;
  TestDir& operator=(const TestDir&) = delete;

  const std::string& path() const { return path_; }
  // `name` inside the directory.
  std::string File(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

}  // namespace rlvla3::testutil
