// Hdf5File's string datasets (hdf5_file.h): robomimic's masks.
#include <hdf5.h>

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "envs/demos/hdf5_file.h"
#include "envs/demos/hdf5_handle.h"

namespace rlvla3 {

using hdf5_internal::Handle;
using hdf5_internal::QuietErrors;
using hdf5_internal::Space;

absl::Status Hdf5File::WriteStrings(const std::string& dataset,
                                    const std::vector<std::string>& values) {
  QuietErrors quiet;
  if (absl::Status s = MakeGroups(dataset); !s.ok()) return s;
  size_t width = 1;
  for (const std::string& v : values) width = std::max(width, v.size());
  std::string packed(values.size() * width, '\0');
  for (size_t i = 0; i < values.size(); ++i) {
    std::memcpy(packed.data() + i * width, values[i].data(), values[i].size());
  }
  Handle type(H5Tcopy(H5T_C_S1));
  H5Tset_size(type.get(), width);
  H5Tset_strpad(type.get(), H5T_STR_NULLPAD);
  Handle space = Space({static_cast<int64_t>(values.size())});
  Handle d(H5Dcreate2(id_, dataset.c_str(), type.get(), space.get(),
                      H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
  if (!d.ok() ||
      (!values.empty() && H5Dwrite(d.get(), type.get(), H5S_ALL, H5S_ALL,
                                   H5P_DEFAULT, packed.data()) < 0)) {
    return Error(dataset, "cannot write");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>> Hdf5File::ReadStrings(
    const std::string& dataset, int64_t max_count, size_t max_bytes) const {
  QuietErrors quiet;
  if (!Exists(dataset)) return Error(dataset, "missing");
  Handle d(H5Dopen2(id_, dataset.c_str(), H5P_DEFAULT));
  if (!d.ok()) return Error(dataset, "not a dataset");
  Handle type(H5Dget_type(d.get()));
  if (H5Tget_class(type.get()) != H5T_STRING) {
    return Error(dataset, "not strings");
  }
  Handle space(H5Dget_space(d.get()));
  hsize_t n = 0;
  if (H5Sget_simple_extent_ndims(space.get()) != 1 ||
      H5Sget_simple_extent_dims(space.get(), &n, nullptr) < 0) {
    return Error(dataset, "not a 1-D list of strings");
  }
  if (n > static_cast<hsize_t>(max_count)) {
    return Error(dataset, absl::StrCat(n, " strings, over ", max_count));
  }
  std::vector<std::string> out;
  if (H5Tis_variable_str(type.get()) > 0) {
    Handle mem(H5Tcopy(H5T_C_S1));
    H5Tset_size(mem.get(), H5T_VARIABLE);
    std::vector<char*> text(n, nullptr);
    if (n > 0 && H5Dread(d.get(), mem.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT,
                         text.data()) < 0) {
      return Error(dataset, "cannot read");
    }
    bool too_long = false;
    for (char* t : text) {
      const size_t len = t == nullptr ? 0 : strnlen(t, max_bytes + 1);
      too_long = too_long || len > max_bytes;
      out.emplace_back(t == nullptr ? ""
                                    : std::string(t, std::min(len, max_bytes)));
    }
    H5Dvlen_reclaim(mem.get(), space.get(), H5P_DEFAULT, text.data());
    if (too_long) {
      return Error(dataset,
                   absl::StrCat("a string over ", max_bytes, " bytes"));
    }
    return out;
  }
  const size_t width = H5Tget_size(type.get());
  if (width == 0 || width > max_bytes) {
    return Error(dataset, absl::StrCat("strings of ", width, " bytes (at most ",
                                       max_bytes, ")"));
  }
  std::string packed(n * width, '\0');
  if (n > 0 && H5Dread(d.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT,
                       packed.data()) < 0) {
    return Error(dataset, "cannot read");
  }
  for (hsize_t i = 0; i < n; ++i) {
    std::string v = packed.substr(i * width, width);
    v.resize(std::min(v.size(), v.find('\0')));
    out.push_back(std::move(v));
  }
  return out;
}

}  // namespace rlvla3
