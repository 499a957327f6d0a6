#include "runtime/text_file.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"

namespace rlvla3 {

absl::Status StreamStatus(const std::ostream& out, const std::string& path) {
  if (out.good()) return absl::OkStatus();
  return absl::DataLossError(
      absl::StrCat(path, ": write failed: ", std::strerror(errno)));
}

absl::StatusOr<std::string> ReadTextFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return absl::NotFoundError(
        absl::StrCat(path, ": cannot be read: ", std::strerror(errno)));
  }
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

absl::Status CheckRegularFile(const std::string& path, uint64_t max_bytes) {
  std::error_code ec;
  const std::filesystem::file_status st = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(st)) {
    return absl::NotFoundError(absl::StrCat(path, ": cannot open file"));
  }
  if (!std::filesystem::is_regular_file(st)) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": not a regular file"));
  }
  const uintmax_t size = std::filesystem::file_size(path, ec);
  if (ec) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": size unreadable: ", ec.message()));
  }
  if (size > max_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": ", size, " bytes (at most ", max_bytes, " for this file)"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadBoundedFile(const std::string& path,
                                            uint64_t max_bytes) {
  if (absl::Status s = CheckRegularFile(path, max_bytes); !s.ok()) return s;
  return ReadTextFile(path);
}

absl::Status WriteTextFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::out | std::ios::trunc);
  if (!out) {
    return absl::UnavailableError(absl::StrCat(
        path, ": cannot open for writing: ", std::strerror(errno)));
  }
  out << text;
  out.flush();
  return StreamStatus(out, path);
}

}  // namespace rlvla3
