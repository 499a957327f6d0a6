// File: envs/demos/hdf5_file.h
// -----------------------------------------------------------------------------
// A small RAII layer over HDF5's C API for demonstration files: a file's
// groups, typed datasets of any rank, and string and integer attributes.
// Reads check the dataset's type class and shape and return errors naming
// the file and the dataset path ("demo.hdf5: /data/demo_3/actions: shape
// [10, 6], expected [10, 7]"). HDF5's own error printing is silenced while a
// call runs (restored after), so the Status is the only report.
//
// Example:
//   absl::StatusOr<Hdf5File> f = Hdf5File::Create("demo.hdf5");
//   f->WriteFloats("/data/demo_0/actions", {steps, 7}, actions);
//   f->SetString("/data", "env_args", "{...}");
//   absl::StatusOr<Hdf5File> r = Hdf5File::Open("demo.hdf5");
//   absl::StatusOr<std::vector<float>> a =
//       r->ReadFloats("/data/demo_0/actions", {steps, 7});
// -----------------------------------------------------------------------------
#ifndef RLVLA3_ENVS_DEMOS_HDF5_FILE_H_
#define RLVLA3_ENVS_DEMOS_HDF5_FILE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace rlvla3 {

class Hdf5File {
 public:
  static absl::StatusOr<Hdf5File> Create(const std::string& path);
  static absl::StatusOr<Hdf5File> Open(const std::string& path);
  Hdf5File(Hdf5File&&) noexcept;
  Hdf5File& operator=(Hdf5File&&) noexcept;
  ~Hdf5File();

  const std::string& path() const { return path_; }

  // Writing: groups on the way are created. Floats are stored as float64
  // (as robomimic's tools write them), bytes as uint8.
  absl::Status WriteFloats(const std::string& dataset,
                           const std::vector<int64_t>& shape,
                           const float* data);
  absl::Status WriteBytes(const std::string& dataset,
                          const std::vector<int64_t>& shape,
                          const uint8_t* data);
  absl::Status SetString(const std::string& object, const std::string& name,
                         const std::string& value);
  absl::Status SetInt(const std::string& object, const std::string& name,
                      int64_t value);
  // A 1-D dataset of fixed-length byte strings, as numpy's "S" arrays are
  // (robomimic's mask/<split>: the names of a split's demos).
  absl::Status WriteStrings(const std::string& dataset,
                            const std::vector<std::string>& values);

  // Reading. `shape`: -1 matches any extent; the extents read come back in
  // `got` when given. A read whose extents hold more than kMaxReadElements
  // is refused before anything is allocated: callers learn the extents with
  // Dims, check them against what they expect, then read that exact shape.
  // Attributes are read only from a scalar (or one-element) dataspace.
  static constexpr int64_t kMaxReadElements = int64_t{1} << 31;
  bool Exists(const std::string& path) const;
  // `dataset`'s extents, its class and shape checked as a read checks them;
  // nothing is read.
  absl::StatusOr<std::vector<int64_t>> Dims(
      const std::string& dataset, bool floats,
      const std::vector<int64_t>& shape) const;
  absl::StatusOr<std::vector<float>> ReadFloats(
      const std::string& dataset, const std::vector<int64_t>& shape,
      std::vector<int64_t>* got = nullptr) const;
  absl::StatusOr<std::vector<uint8_t>> ReadBytes(
      const std::string& dataset, const std::vector<int64_t>& shape,
      std::vector<int64_t>* got = nullptr) const;
  bool HasAttribute(const std::string& object, const std::string& name) const;
  absl::StatusOr<std::string> GetString(const std::string& object,
                                        const std::string& name) const;
  absl::StatusOr<int64_t> GetInt(const std::string& object,
                                 const std::string& name) const;
  // A 1-D dataset of strings (fixed-length or variable-length): at most
  // `max_count` of them, each at most `max_bytes`, else refused unread.
  absl::StatusOr<std::vector<std::string>> ReadStrings(
      const std::string& dataset, int64_t max_count, size_t max_bytes) const;
  // The names of `group`'s members, in HDF5's name order.
  absl::StatusOr<std::vector<std::string>> Members(
      const std::string& group) const;

 private:
  Hdf5File(std::string path, int64_t id) : path_(std::move(path)), id_(id) {}
  absl::Status Error(const std::string& object, const std::string& why) const;
  absl::Status MakeGroups(const std::string& dataset);
  // Creates `dataset` of HDF5 type `file_type` from `data` of `mem_type`.
  absl::Status Write(const std::string& dataset,
                     const std::vector<int64_t>& shape, int64_t file_type,
                     int64_t mem_type, const void* data);
  // Reads `dataset` (checked as OpenChecked) as `mem_type` into the storage
  // `alloc(elements)` returns; its extents into `got` when given.
  absl::Status Read(const std::string& dataset, bool floats,
                    const std::vector<int64_t>& shape, int64_t mem_type,
                    const std::function<void*(int64_t)>& alloc,
                    std::vector<int64_t>* got) const;
  // Opens attribute `name` of `object`: present, with one element.
  absl::StatusOr<int64_t> OpenAttribute(const std::string& object,
                                        const std::string& name) const;
  // Opens `dataset`, checks its class and shape; its extents into `dims`.
  absl::StatusOr<int64_t> OpenChecked(const std::string& dataset, bool floats,
                                      const std::vector<int64_t>& shape,
                                      std::vector<int64_t>* dims) const;

  std::string path_;
  int64_t id_ = -1;  // hid_t
};

// HDF5 objects (files, groups, datasets, types, attributes) open in this
// process: 0 whenever no Hdf5File is alive, on every path through a read
// (the demo-file fuzz target checks it after each input).
int64_t OpenHdf5Objects();

}  // namespace rlvla3

#endif  // RLVLA3_ENVS_DEMOS_HDF5_FILE_H_
