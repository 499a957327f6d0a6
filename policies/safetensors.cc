#include "policies/safetensors.h"

#include <torch/torch.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"

namespace rlvla3 {
namespace {

constexpr uint64_t kMaxHeaderBytes =
    100 * 1000 * 1000;  // the format's own limit

struct DTypeName {
  at::ScalarType type;
  const char* name;
};
constexpr DTypeName kDTypes[] = {{at::kFloat, "F32"}, {at::kDouble, "F64"},
                                 {at::kHalf, "F16"},  {at::kBFloat16, "BF16"},
                                 {at::kLong, "I64"},  {at::kInt, "I32"},
                                 {at::kShort, "I16"}, {at::kChar, "I8"},
                                 {at::kByte, "U8"},   {at::kBool, "BOOL"}};

const char* NameOf(at::ScalarType t) {
  for (const auto& d : kDTypes) {
    if (d.type == t) return d.name;
  }
  return nullptr;
}

const DTypeName* FindDType(const std::string& name) {
  const DTypeName* found = nullptr;
  for (const auto& d : kDTypes) {
    if (name == d.name) found = &d;
  }
  return found;
}

absl::Status NotSafetensors(const std::string& path, const std::string& why) {
  return absl::InvalidArgumentError(
      absl::StrCat(path, ": not a valid safetensors file: ", why));
}

// The header's "__metadata__" entry: a map of strings.
absl::Status ReadMetadata(const std::string& path, const nlohmann::json& m,
                          std::map<std::string, std::string>* metadata) {
  if (!m.is_object())
    return NotSafetensors(path, "__metadata__ is not an object");
  for (auto it = m.begin(); it != m.end(); ++it) {
    if (!it->is_string()) {
      return NotSafetensors(
          path, absl::StrCat("metadata ", it.key(), " is not a string"));
    }
    (*metadata)[it.key()] = it->get<std::string>();
  }
  return absl::OkStatus();
}

// The tensor that header entry `e` describes, copied out of the `data_size`
// data bytes at `base`; `*range` is where its bytes lie (to check overlaps).
absl::StatusOr<at::Tensor> ReadTensor(const std::string& path,
                                      const std::string& name,
                                      const nlohmann::json& e, const char* base,
                                      uint64_t data_size,
                                      std::pair<uint64_t, uint64_t>* range) {
  auto bad = [&](const std::string& why) { return NotSafetensors(path, why); };
  if (!e.is_object() || !e.contains("dtype") || !e.contains("shape") ||
      !e.contains("data_offsets") || !e["dtype"].is_string() ||
      !e["shape"].is_array() || !e["data_offsets"].is_array() ||
      e["data_offsets"].size() != 2) {
    return bad(
        absl::StrCat("tensor ", name, " lacks dtype, shape or data_offsets"));
  }
  const std::string dtype = e["dtype"].get<std::string>();
  const DTypeName* dt = FindDType(dtype);
  if (dt == nullptr)
    return bad(absl::StrCat("tensor ", name, " has unknown dtype ", dtype));
  std::vector<int64_t> shape;
  uint64_t numel = 1;
  for (const auto& s : e["shape"]) {
    if (!s.is_number_unsigned())
      return bad(absl::StrCat("tensor ", name, " has a bad shape"));
    const uint64_t v = s.get<uint64_t>();
    if (v != 0 && numel > (uint64_t{1} << 62) / v) {
      return bad(absl::StrCat("tensor ", name, " shape overflows"));
    }
    numel *= v;
    shape.push_back(static_cast<int64_t>(v));
  }
  const auto& off = e["data_offsets"];
  if (!off[0].is_number_unsigned() || !off[1].is_number_unsigned()) {
    return bad(absl::StrCat("tensor ", name, " has bad data_offsets"));
  }
  const uint64_t begin = off[0].get<uint64_t>(), end = off[1].get<uint64_t>();
  const uint64_t want = numel * c10::elementSize(dt->type);
  if (end < begin || end > data_size || end - begin != want) {
    return bad(absl::StrCat("tensor ", name, " data_offsets [", begin, ", ",
                            end, ") do not match its ", want, " bytes inside ",
                            data_size));
  }
  *range = {begin, end};
  at::Tensor t = torch::empty(shape, at::TensorOptions().dtype(dt->type));
  if (want > 0) std::memcpy(t.data_ptr(), base + begin, want);
  return t;
}

}  // namespace

absl::Status WriteSafetensors(
    const std::string& path,
    const std::vector<std::pair<std::string, at::Tensor>>& tensors,
    const std::map<std::string, std::string>& metadata) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::vector<at::Tensor> data;
  uint64_t offset = 0;
  for (const auto& [name, t] : tensors) {
    const char* dtype = NameOf(t.scalar_type());
    if (dtype == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, ": tensor ", name, " has dtype ",
          c10::toString(t.scalar_type()), ", which safetensors cannot store"));
    }
    at::Tensor c = t.detach().to(at::kCPU).contiguous();
    header[name] = {{"dtype", dtype},
                    {"shape", c.sizes().vec()},
                    {"data_offsets", {offset, offset + c.nbytes()}}};
    offset += c.nbytes();
    data.push_back(c);
  }
  std::string json = header.dump();
  json.append((8 - json.size() % 8) % 8, ' ');  // align the data to 8 bytes
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return absl::UnavailableError(absl::StrCat("cannot write ", path));
  const uint64_t n = json.size();
  out.write(reinterpret_cast<const char*>(&n), sizeof(n));
  out.write(json.data(), static_cast<std::streamsize>(json.size()));
  for (const auto& c : data) {
    out.write(static_cast<const char*>(c.data_ptr()),
              static_cast<std::streamsize>(c.nbytes()));
  }
  out.close();
  if (!out) return absl::UnavailableError(absl::StrCat("cannot write ", path));
  return absl::OkStatus();
}

absl::StatusOr<SafetensorsFile> ReadSafetensors(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open file"));
  const std::string bytes((std::istreambuf_iterator<char>(in)),
                          std::istreambuf_iterator<char>());
  auto bad = [&](const std::string& why) { return NotSafetensors(path, why); };
  if (bytes.size() < 8) return bad("shorter than its 8-byte header length");
  uint64_t n = 0;
  std::memcpy(&n, bytes.data(), sizeof(n));
  if (n > kMaxHeaderBytes || n > bytes.size() - 8) {
    return bad(absl::StrCat("header length ", n, " exceeds the file"));
  }
  nlohmann::json header =
      nlohmann::json::parse(bytes.begin() + 8, bytes.begin() + 8 + n, nullptr,
                            /*allow_exceptions=*/false);
  if (header.is_discarded() || !header.is_object())
    return bad("header is not a JSON object");
  const uint64_t data_size = bytes.size() - 8 - n;
  const char* base = bytes.data() + 8 + n;
  SafetensorsFile f;
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__") {
      if (absl::Status s = ReadMetadata(path, *it, &f.metadata); !s.ok()) {
        return s;
      }
      continue;
    }
    std::pair<uint64_t, uint64_t> range;
    absl::StatusOr<at::Tensor> t =
        ReadTensor(path, it.key(), *it, base, data_size, &range);
    if (!t.ok()) return t.status();
    ranges.push_back(range);
    f.tensors.emplace_back(it.key(), *std::move(t));
  }
  std::sort(ranges.begin(), ranges.end());
  for (size_t i = 1; i < ranges.size(); ++i) {
    if (ranges[i].first < ranges[i - 1].second)
      return bad("tensor byte ranges overlap");
  }
  return f;
}

}  // namespace rlvla3
