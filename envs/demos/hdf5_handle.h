// File: envs/demos/hdf5_handle.h
// -----------------------------------------------------------------------------
// Internal to the demo_files library (the .cc files over HDF5's C API): a
// handle of any HDF5 kind closed when it goes, and a scope in which HDF5's
// own error printing is silenced (the Status is the report).
// -----------------------------------------------------------------------------
#ifndef RLVLA3_ENVS_DEMOS_HDF5_HANDLE_H_
#define RLVLA3_ENVS_DEMOS_HDF5_HANDLE_H_

#include <hdf5.h>

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace rlvla3::hdf5_internal {

static_assert(sizeof(hid_t) == sizeof(int64_t), "hid_t is 64-bit");

// A fixed-length string attribute longer than this is refused unread.
constexpr size_t kMaxAttributeBytes = size_t{1} << 16;

// Closes one HDF5 handle of any kind when it goes.
class Handle {
 public:
  explicit Handle(hid_t id = -1) : id_(id) {}
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  ~Handle() {
    if (id_ >= 0) CloseAny(id_);
  }
  hid_t get() const { return id_; }
  bool ok() const { return id_ >= 0; }
  hid_t release() { return std::exchange(id_, -1); }

 private:
  static void CloseAny(hid_t id) {
    switch (H5Iget_type(id)) {
      case H5I_FILE:
        H5Fclose(id);
        break;
      case H5I_GROUP:
        H5Gclose(id);
        break;
      case H5I_DATASET:
        H5Dclose(id);
        break;
      case H5I_DATASPACE:
        H5Sclose(id);
        break;
      case H5I_DATATYPE:
        H5Tclose(id);
        break;
      case H5I_ATTR:
        H5Aclose(id);
        break;
      default:
        break;
    }
  }
  hid_t id_;
};

// HDF5 prints its error stack to stderr on every failed call; the Status
// is the report here. Restores the previous handler when it goes.
class QuietErrors {
 public:
  QuietErrors() {
    H5Eget_auto2(H5E_DEFAULT, &func_, &data_);
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  }
  ~QuietErrors() { H5Eset_auto2(H5E_DEFAULT, func_, data_); }

 private:
  H5E_auto2_t func_ = nullptr;
  void* data_ = nullptr;
};

// A simple dataspace of `shape`.
inline Handle Space(const std::vector<int64_t>& shape) {
  std::vector<hsize_t> dims(shape.begin(), shape.end());
  return Handle(
      H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr));
}

}  // namespace rlvla3::hdf5_internal

#endif  // RLVLA3_ENVS_DEMOS_HDF5_HANDLE_H_
