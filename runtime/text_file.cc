#include "runtime/text_file.h"

#include <cerrno>
#include <cstring>
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
