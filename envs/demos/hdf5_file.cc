#include "envs/demos/hdf5_file.h"

#include <hdf5.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "envs/demos/hdf5_handle.h"

namespace rlvla3 {
namespace {

using hdf5_internal::Handle;
using hdf5_internal::kMaxAttributeBytes;
using hdf5_internal::QuietErrors;
using hdf5_internal::Space;

std::string ShapeText(const std::vector<int64_t>& s) {
  return absl::StrCat("[", absl::StrJoin(s, ", "), "]");
}

}  // namespace

absl::StatusOr<Hdf5File> Hdf5File::Create(const std::string& path) {
  QuietErrors quiet;
  const hid_t id =
      H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  if (id < 0) {
    return absl::UnavailableError(
        absl::StrCat(path, ": cannot create an HDF5 file here"));
  }
  return Hdf5File(path, id);
}

absl::StatusOr<Hdf5File> Hdf5File::Open(const std::string& path) {
  QuietErrors quiet;
  if (H5Fis_hdf5(path.c_str()) <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": not an HDF5 file (or not readable)"));
  }
  const hid_t id = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (id < 0) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": cannot open"));
  }
  return Hdf5File(path, id);
}

Hdf5File::Hdf5File(Hdf5File&& o) noexcept
    : path_(std::move(o.path_)), id_(std::exchange(o.id_, -1)) {}

Hdf5File& Hdf5File::operator=(Hdf5File&& o) noexcept {
  if (this != &o) {
    if (id_ >= 0) H5Fclose(id_);
    path_ = std::move(o.path_);
    id_ = std::exchange(o.id_, -1);
  }
  return *this;
}

Hdf5File::~Hdf5File() {
  if (id_ >= 0) H5Fclose(id_);
}

absl::Status Hdf5File::Error(const std::string& object,
                             const std::string& why) const {
  return absl::InvalidArgumentError(
      absl::StrCat(path_, ": ", object, ": ", why));
}

absl::Status Hdf5File::MakeGroups(const std::string& dataset) {
  std::string at;
  const std::vector<std::string> parts =
      absl::StrSplit(dataset, '/', absl::SkipEmpty());
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    at += "/" + parts[i];
    if (H5Lexists(id_, at.c_str(), H5P_DEFAULT) > 0) continue;
    Handle g(
        H5Gcreate2(id_, at.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
    if (!g.ok()) return Error(at, "cannot create the group");
  }
  return absl::OkStatus();
}

absl::Status Hdf5File::Write(const std::string& dataset,
                             const std::vector<int64_t>& shape,
                             int64_t file_type, int64_t mem_type,
                             const void* data) {
  QuietErrors quiet;
  if (absl::Status s = MakeGroups(dataset); !s.ok()) return s;
  Handle space = Space(shape);
  Handle d(H5Dcreate2(id_, dataset.c_str(), file_type, space.get(), H5P_DEFAULT,
                      H5P_DEFAULT, H5P_DEFAULT));
  if (!d.ok() ||
      H5Dwrite(d.get(), mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) < 0) {
    return Error(dataset, "cannot write");
  }
  return absl::OkStatus();
}

absl::Status Hdf5File::WriteFloats(const std::string& dataset,
                                   const std::vector<int64_t>& shape,
                                   const float* data) {
  return Write(dataset, shape, H5T_IEEE_F64LE, H5T_NATIVE_FLOAT, data);
}

absl::Status Hdf5File::WriteBytes(const std::string& dataset,
                                  const std::vector<int64_t>& shape,
                                  const uint8_t* data) {
  return Write(dataset, shape, H5T_STD_U8LE, H5T_NATIVE_UINT8, data);
}

absl::Status Hdf5File::SetString(const std::string& object,
                                 const std::string& name,
                                 const std::string& value) {
  QuietErrors quiet;
  Handle type(H5Tcopy(H5T_C_S1));
  H5Tset_size(type.get(), H5T_VARIABLE);
  H5Tset_cset(type.get(), H5T_CSET_UTF8);
  Handle space(H5Screate(H5S_SCALAR));
  Handle a(H5Acreate_by_name(id_, object.c_str(), name.c_str(), type.get(),
                             space.get(), H5P_DEFAULT, H5P_DEFAULT,
                             H5P_DEFAULT));
  const char* text = value.c_str();
  if (!a.ok() || H5Awrite(a.get(), type.get(), &text) < 0) {
    return Error(object, absl::StrCat("cannot write attribute ", name));
  }
  return absl::OkStatus();
}

absl::Status Hdf5File::SetInt(const std::string& object,
                              const std::string& name, int64_t value) {
  QuietErrors quiet;
  Handle space(H5Screate(H5S_SCALAR));
  Handle a(H5Acreate_by_name(id_, object.c_str(), name.c_str(), H5T_STD_I64LE,
                             space.get(), H5P_DEFAULT, H5P_DEFAULT,
                             H5P_DEFAULT));
  if (!a.ok() || H5Awrite(a.get(), H5T_NATIVE_INT64, &value) < 0) {
    return Error(object, absl::StrCat("cannot write attribute ", name));
  }
  return absl::OkStatus();
}

bool Hdf5File::Exists(const std::string& path) const {
  QuietErrors quiet;
  std::string at;
  for (const std::string& part :
       std::vector<std::string>(absl::StrSplit(path, '/', absl::SkipEmpty()))) {
    at += "/" + part;
    if (H5Lexists(id_, at.c_str(), H5P_DEFAULT) <= 0) return false;
  }
  return true;
}

absl::StatusOr<int64_t> Hdf5File::OpenChecked(
    const std::string& dataset, bool floats, const std::vector<int64_t>& shape,
    std::vector<int64_t>* dims) const {
  if (!Exists(dataset)) return Error(dataset, "missing");
  const hid_t id = H5Dopen2(id_, dataset.c_str(), H5P_DEFAULT);
  if (id < 0) return Error(dataset, "not a dataset");
  Handle d(id);
  Handle type(H5Dget_type(id));
  const H5T_class_t cls = H5Tget_class(type.get());
  const bool is_float = cls == H5T_FLOAT;
  const bool is_int = cls == H5T_INTEGER;
  if (floats ? !(is_float || is_int)
             : !(is_int && H5Tget_size(type.get()) == 1)) {
    return Error(dataset, floats ? "not numbers" : "not uint8");
  }
  Handle space(H5Dget_space(id));
  const int rank = H5Sget_simple_extent_ndims(space.get());
  std::vector<hsize_t> ext(static_cast<size_t>(std::max(rank, 0)));
  if (rank < 0 ||
      H5Sget_simple_extent_dims(space.get(), ext.data(), nullptr) < 0) {
    return Error(dataset, "unreadable extents");
  }
  for (hsize_t e : ext) {
    if (e > static_cast<hsize_t>(kMaxReadElements)) {
      return Error(dataset, absl::StrCat("an extent of ", e, " (over ",
                                         kMaxReadElements, ")"));
    }
  }
  dims->assign(ext.begin(), ext.end());
  bool fits = dims->size() == shape.size();
  for (size_t i = 0; fits && i < shape.size(); ++i) {
    fits = shape[i] < 0 || shape[i] == (*dims)[i];
  }
  if (!fits) {
    return Error(dataset,
                 absl::StrCat("shape ", ShapeText(*dims), ", expected ",
                              ShapeText(shape), " (-1: any)"));
  }
  return static_cast<int64_t>(d.release());
}

absl::StatusOr<std::vector<int64_t>> Hdf5File::Dims(
    const std::string& dataset, bool floats,
    const std::vector<int64_t>& shape) const {
  QuietErrors quiet;
  std::vector<int64_t> dims;
  absl::StatusOr<int64_t> id = OpenChecked(dataset, floats, shape, &dims);
  if (!id.ok()) return id.status();
  Handle d(*id);
  return dims;
}

absl::Status Hdf5File::Read(const std::string& dataset, bool floats,
                            const std::vector<int64_t>& shape, int64_t mem_type,
                            const std::function<void*(int64_t)>& alloc,
                            std::vector<int64_t>* got) const {
  QuietErrors quiet;
  std::vector<int64_t> dims;
  absl::StatusOr<int64_t> id = OpenChecked(dataset, floats, shape, &dims);
  if (!id.ok()) return id.status();
  Handle d(*id);
  int64_t n = 1;
  for (int64_t e : dims) {
    if (e != 0 && n > kMaxReadElements / e) {
      return Error(dataset,
                   absl::StrCat("shape ", ShapeText(dims), " holds more than ",
                                kMaxReadElements, " elements; not read"));
    }
    n *= e;
  }
  void* out = alloc(n);
  if (n > 0 &&
      H5Dread(d.get(), mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, out) < 0) {
    return Error(dataset, "cannot read");
  }
  if (got != nullptr) *got = dims;
  return absl::OkStatus();
}

absl::StatusOr<std::vector<float>> Hdf5File::ReadFloats(
    const std::string& dataset, const std::vector<int64_t>& shape,
    std::vector<int64_t>* got) const {
  std::vector<float> out;
  absl::Status s = Read(
      dataset, /*floats=*/true, shape, H5T_NATIVE_FLOAT,
      [&](int64_t n) -> void* {
        out.resize(static_cast<size_t>(n));
        return out.data();
      },
      got);
  if (!s.ok()) return s;
  return out;
}

absl::StatusOr<std::vector<uint8_t>> Hdf5File::ReadBytes(
    const std::string& dataset, const std::vector<int64_t>& shape,
    std::vector<int64_t>* got) const {
  std::vector<uint8_t> out;
  absl::Status s = Read(
      dataset, /*floats=*/false, shape, H5T_NATIVE_UINT8,
      [&](int64_t n) -> void* {
        out.resize(static_cast<size_t>(n));
        return out.data();
      },
      got);
  if (!s.ok()) return s;
  return out;
}

bool Hdf5File::HasAttribute(const std::string& object,
                            const std::string& name) const {
  QuietErrors quiet;
  return H5Aexists_by_name(id_, object.c_str(), name.c_str(), H5P_DEFAULT) > 0;
}

absl::StatusOr<int64_t> Hdf5File::OpenAttribute(const std::string& object,
                                                const std::string& name) const {
  if (H5Aexists_by_name(id_, object.c_str(), name.c_str(), H5P_DEFAULT) <= 0) {
    return Error(object, absl::StrCat("attribute ", name, " missing"));
  }
  Handle a(H5Aopen_by_name(id_, object.c_str(), name.c_str(), H5P_DEFAULT,
                           H5P_DEFAULT));
  if (!a.ok())
    return Error(object, absl::StrCat("attribute ", name, ": unreadable"));
  Handle space(H5Aget_space(a.get()));
  const hssize_t points = H5Sget_simple_extent_npoints(space.get());
  if (points != 1) {
    return Error(object, absl::StrCat("attribute ", name, " holds ",
                                      std::max<hssize_t>(points, 0),
                                      " values, not one"));
  }
  return static_cast<int64_t>(a.release());
}

absl::StatusOr<std::string> Hdf5File::GetString(const std::string& object,
                                                const std::string& name) const {
  QuietErrors quiet;
  absl::StatusOr<int64_t> id = OpenAttribute(object, name);
  if (!id.ok()) return id.status();
  Handle a(*id);
  Handle type(H5Aget_type(a.get()));
  if (H5Tget_class(type.get()) != H5T_STRING) {
    return Error(object, absl::StrCat("attribute ", name, ": not a string"));
  }
  if (H5Tis_variable_str(type.get()) > 0) {
    Handle mem(H5Tcopy(H5T_C_S1));
    H5Tset_size(mem.get(), H5T_VARIABLE);
    H5Tset_cset(mem.get(), H5Tget_cset(type.get()));
    char* text = nullptr;
    if (H5Aread(a.get(), mem.get(), &text) < 0 || text == nullptr) {
      return Error(object, absl::StrCat("attribute ", name, ": unreadable"));
    }
    const size_t length = strnlen(text, kMaxAttributeBytes + 1);
    std::string out(text, std::min(length, kMaxAttributeBytes));
    H5free_memory(text);
    if (length > kMaxAttributeBytes) {
      return Error(object, absl::StrCat("attribute ", name, ": a string over ",
                                        kMaxAttributeBytes, " bytes"));
    }
    return out;
  }
  const size_t size = H5Tget_size(type.get());
  if (size == 0 || size > kMaxAttributeBytes) {
    return Error(object,
                 absl::StrCat("attribute ", name, ": a string of ", size,
                              " bytes (at most ", kMaxAttributeBytes, ")"));
  }
  std::string out(size, '\0');
  if (H5Aread(a.get(), type.get(), out.data()) < 0) {
    return Error(object, absl::StrCat("attribute ", name, ": unreadable"));
  }
  out.resize(out.find('\0') == std::string::npos ? out.size() : out.find('\0'));
  return out;
}

absl::StatusOr<int64_t> Hdf5File::GetInt(const std::string& object,
                                         const std::string& name) const {
  QuietErrors quiet;
  absl::StatusOr<int64_t> id = OpenAttribute(object, name);
  if (!id.ok()) return id.status();
  Handle a(*id);
  Handle type(H5Aget_type(a.get()));
  int64_t v = 0;
  if (H5Tget_class(type.get()) != H5T_INTEGER ||
      H5Aread(a.get(), H5T_NATIVE_INT64, &v) < 0) {
    return Error(object, absl::StrCat("attribute ", name, ": not an integer"));
  }
  return v;
}

absl::StatusOr<std::vector<std::string>> Hdf5File::Members(
    const std::string& group) const {
  QuietErrors quiet;
  if (!Exists(group)) return Error(group, "missing");
  Handle g(H5Gopen2(id_, group.c_str(), H5P_DEFAULT));
  if (!g.ok()) return Error(group, "not a group");
  H5G_info_t info;
  if (H5Gget_info(g.get(), &info) < 0) return Error(group, "unreadable");
  std::vector<std::string> out;
  for (hsize_t i = 0; i < info.nlinks; ++i) {
    const ssize_t n = H5Lget_name_by_idx(
        g.get(), ".", H5_INDEX_NAME, H5_ITER_INC, i, nullptr, 0, H5P_DEFAULT);
    if (n < 0) return Error(group, "unreadable member name");
    std::string name(static_cast<size_t>(n) + 1, '\0');
    H5Lget_name_by_idx(g.get(), ".", H5_INDEX_NAME, H5_ITER_INC, i, name.data(),
                       name.size(), H5P_DEFAULT);
    name.resize(static_cast<size_t>(n));
    out.push_back(std::move(name));
  }
  return out;
}

int64_t OpenHdf5Objects() {
  return static_cast<int64_t>(
      H5Fget_obj_count(static_cast<hid_t>(H5F_OBJ_ALL), H5F_OBJ_ALL));
}

}  // namespace rlvla3
