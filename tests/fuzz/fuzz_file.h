// A fuzz input as a file, for targets whose door is a path (an HDF5 demo
// file, a task file): written to a private temporary folder, removed with
// it. A failed write aborts: a fuzz run must not silently test nothing.
#pragma once

#include <stdlib.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace rlvla3::fuzz {

class FuzzFile {
 public:
  FuzzFile(const uint8_t* data, size_t size, const std::string& name) {
    std::string dir =
        (std::filesystem::temp_directory_path() / "rlvla3_fuzz_XXXXXX")
            .string();
    if (mkdtemp(dir.data()) == nullptr) std::abort();
    dir_ = dir;
    path_ = dir_ + "/" + name;
    std::ofstream out(path_, std::ios::binary);
    out.write(reinterpret_cast<const char*>(data),
              static_cast<std::streamsize>(size));
    out.close();
    if (!out) std::abort();
  }
  FuzzFile(const FuzzFile&) = delete;
  FuzzFile& operator=(const FuzzFile&) = delete;
  ~FuzzFile() {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  const std::string& path() const { return path_; }
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_, path_;
};

}  // namespace rlvla3::fuzz
