#include "policies/policy_interface.h"

#include <cmath>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "absl/strings/str_cat.h"
#include "runtime/camera_limits.h"

namespace rlvla3 {
namespace {

using nlohmann::json;

// Ranges a declaration must keep (the wire, the segment layout and the
// action chunk's upper bound set them).
constexpr int64_t kMinImage = 8, kMaxImage = 1024;
constexpr int64_t kMaxProprio = 256;
constexpr int64_t kMaxActionSize = 64;
constexpr int64_t kMaxBins = 65536;
constexpr int64_t kMaxChunk = 64;
constexpr int64_t kMaxTextLen = 4096;
// A declared action range: ends within +-kMaxMagnitude, at least kMinWidth
// wide (a float32 action carries both; 1e308 or a 5e-324 width it does not).
constexpr double kMaxMagnitude = 1e6;
constexpr double kMinWidth = 1e-6;

absl::Status Bad(const std::string& origin, const std::string& field,
                 const std::string& why) {
  return absl::InvalidArgumentError(
      absl::StrCat(origin, ": ", field, ": ", why));
}

absl::Status InRange(const std::string& origin, const std::string& field,
                     int64_t v, int64_t lo, int64_t hi) {
  if (v >= lo && v <= hi) return absl::OkStatus();
  return Bad(origin, field, absl::StrCat(v, " (", lo, " to ", hi, ")"));
}

bool ValidName(const std::string& name) {
  if (name.empty() || name.size() > 64) return false;
  for (char c : name) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) {
      return false;
    }
  }
  return true;
}

const char* KindName(ActionKind k) {
  return k == ActionKind::kBins ? "bins" : "gaussian";
}

const char* TokenizerName(InstructionKind k) {
  switch (k) {
    case InstructionKind::kWords:
      return "words";
    case InstructionKind::kBytes:
      return "bytes";
    case InstructionKind::kSentencePiece:
      return "sentencepiece";
  }
  return "words";
}

// A declared integer: a JSON integer within int64 (64.9, 1e300 and "8" are
// refused, never truncated).
absl::StatusOr<int64_t> Integer(const json& v, const std::string& origin,
                                const std::string& field) {
  if (!v.is_number_integer() ||
      (v.is_number_unsigned() &&
       v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))) {
    return Bad(origin, field, absl::StrCat(v.dump(), " (an integer)"));
  }
  return v.get<int64_t>();
}

// A declared real number: a JSON number whose magnitude a float32 action
// carries with room to spare (at most kMaxMagnitude).
absl::StatusOr<double> Real(const json& v, const std::string& origin,
                            const std::string& field) {
  if (!v.is_number() || !std::isfinite(v.get<double>()) ||
      std::abs(v.get<double>()) > kMaxMagnitude) {
    return Bad(origin, field,
               absl::StrCat(v.dump(), " (a number of magnitude at most ",
                            kMaxMagnitude, ")"));
  }
  return v.get<double>();
}

absl::StatusOr<int64_t> Convert(const json& v, const std::string& origin,
                                const std::string& field, int64_t*) {
  return Integer(v, origin, field);
}
absl::StatusOr<double> Convert(const json& v, const std::string& origin,
                               const std::string& field, double*) {
  return Real(v, origin, field);
}

// `key` of `action` as `size` values: one number for all, or a list of size.
// Without the key: `fallback` for every dimension, or an error if none.
template <typename T>
absl::StatusOr<std::vector<T>> PerDimension(
    const json& action, const char* key, int64_t size,
    const std::string& origin, std::optional<T> fallback = std::nullopt) {
  const std::string field = absl::StrCat("action.", key);
  if (!action.contains(key)) {
    if (!fallback) return Bad(origin, field, "missing");
    return std::vector<T>(static_cast<size_t>(size), *fallback);
  }
  const json& v = action.at(key);
  if (v.is_number()) {
    absl::StatusOr<T> one = Convert(v, origin, field, static_cast<T*>(nullptr));
    if (!one.ok()) return one.status();
    return std::vector<T>(static_cast<size_t>(size), *one);
  }
  if (!v.is_array()) return Bad(origin, field, "a number or a list");
  if (static_cast<int64_t>(v.size()) != size) {
    return Bad(origin, field,
               absl::StrCat(v.size(), " values for action.size ", size));
  }
  std::vector<T> out;
  for (size_t d = 0; d < v.size(); ++d) {
    absl::StatusOr<T> one =
        Convert(v[d], origin, absl::StrCat(field, "[", d, "]"),
                static_cast<T*>(nullptr));
    if (!one.ok()) return one.status();
    out.push_back(*one);
  }
  return out;
}

absl::Status ParseAction(const json& a, const std::string& origin,
                         ActionSpace* out) {
  const std::string kind = a.value("kind", std::string("bins"));
  if (kind == "bins") {
    out->kind = ActionKind::kBins;
  } else if (kind == "gaussian") {
    out->kind = ActionKind::kGaussian;
  } else {
    return Bad(origin, "action.kind",
               absl::StrCat("\"", kind, "\" (bins or gaussian)"));
  }
  absl::StatusOr<int64_t> size = Integer(a.at("size"), origin, "action.size");
  if (!size.ok()) return size.status();
  out->size = *size;
  if (absl::Status s =
          InRange(origin, "action.size", out->size, 1, kMaxActionSize);
      !s.ok()) {
    return s;
  }
  out->bins.clear();
  if (out->kind == ActionKind::kBins) {
    auto bins = PerDimension<int64_t>(a, "bins", out->size, origin);
    if (!bins.ok()) return bins.status();
    out->bins = *std::move(bins);
  } else if (a.contains("bins")) {
    return Bad(origin, "action.bins", "a gaussian head has no bins");
  }
  auto low = PerDimension<double>(a, "low", out->size, origin, -1.0);
  if (!low.ok()) return low.status();
  auto high = PerDimension<double>(a, "high", out->size, origin, 1.0);
  if (!high.ok()) return high.status();
  out->low = *std::move(low);
  out->high = *std::move(high);
  return absl::OkStatus();
}

absl::Status ParseInstruction(const json& i, const std::string& origin,
                              InstructionSpec* out) {
  const std::string t = i.value("tokenizer", std::string("words"));
  if (t == "words") {
    out->tokenizer = InstructionKind::kWords;
  } else if (t == "bytes") {
    out->tokenizer = InstructionKind::kBytes;
  } else if (t == "sentencepiece") {
    out->tokenizer = InstructionKind::kSentencePiece;
  } else {
    return Bad(origin, "instruction.tokenizer",
               absl::StrCat("\"", t, "\" (words, bytes or sentencepiece)"));
  }
  out->max_len = 16;
  if (i.contains("max_len")) {
    absl::StatusOr<int64_t> n =
        Integer(i.at("max_len"), origin, "instruction.max_len");
    if (!n.ok()) return n.status();
    out->max_len = *n;
  }
  out->model = i.value("model", std::string());
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateActionSpace(const ActionSpace& a,
                                 const std::string& origin) {
  if (absl::Status s =
          InRange(origin, "action.size", a.size, 1, kMaxActionSize);
      !s.ok()) {
    return s;
  }
  const size_t n = static_cast<size_t>(a.size);
  if (a.low.size() != n || a.high.size() != n) {
    return Bad(origin, "action.low/high",
               absl::StrCat("one value per dimension (", n, ")"));
  }
  if (a.kind == ActionKind::kBins && a.bins.size() != n) {
    return Bad(origin, "action.bins",
               absl::StrCat("one value per dimension (", n, ")"));
  }
  for (size_t d = 0; d < n; ++d) {
    if (a.kind == ActionKind::kBins) {
      const std::string f = absl::StrCat("action.bins[", d, "]");
      if (a.bins[d] < 2) {
        return Bad(origin, f, absl::StrCat(a.bins[d], " (at least 2)"));
      }
      if (a.bins[d] > kMaxBins) {
        return Bad(origin, f,
                   absl::StrCat(a.bins[d], " (at most ", kMaxBins, ")"));
      }
    }
    // The range maps to [-1, 1] in float32 (2 (a - low) / (high - low) - 1):
    // both ends and the width must be numbers float32 carries.
    const double lo = a.low[d], hi = a.high[d];
    if (!std::isfinite(lo) || !std::isfinite(hi) ||
        std::abs(lo) > kMaxMagnitude || std::abs(hi) > kMaxMagnitude ||
        !(hi - lo >= kMinWidth)) {
      return Bad(origin, absl::StrCat("action.low/high[", d, "]"),
                 absl::StrCat("[", lo, ", ", hi,
                              "] (finite, magnitudes at most ", kMaxMagnitude,
                              ", high - low at least ", kMinWidth, ")"));
    }
  }
  return absl::OkStatus();
}

absl::Status ValidatePolicyInterface(const PolicyInterface& p,
                                     const std::string& origin) {
  if (p.cameras.empty() ||
      static_cast<int64_t>(p.cameras.size()) > kMaxCameras) {
    return Bad(origin, "cameras",
               absl::StrCat(p.cameras.size(), " (1 to ", kMaxCameras, ")"));
  }
  std::set<std::string> names;
  for (size_t c = 0; c < p.cameras.size(); ++c) {
    const CameraSpec& cam = p.cameras[c];
    const std::string f = absl::StrCat("cameras[", c, "]");
    if (!ValidName(cam.name)) {
      return Bad(origin, f + ".name",
                 absl::StrCat("\"", cam.name, "\" (a-z, 0-9, _)"));
    }
    if (!names.insert(cam.name).second) {
      return Bad(origin, f + ".name",
                 absl::StrCat("\"", cam.name, "\" named twice"));
    }
    for (const auto& [what, v] :
         {std::pair<const char*, int64_t>{".height", cam.height},
          {".width", cam.width}}) {
      if (absl::Status s = InRange(origin, f + what, v, kMinImage, kMaxImage);
          !s.ok()) {
        return s;
      }
    }
  }
  if (absl::Status s = InRange(origin, "proprio", p.proprio, 0, kMaxProprio);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = ValidateActionSpace(p.action, origin); !s.ok()) return s;
  if (absl::Status s = InRange(origin, "chunk", p.chunk, 1, kMaxChunk);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = InRange(origin, "instruction.max_len",
                               p.instruction.max_len, 1, kMaxTextLen);
      !s.ok()) {
    return s;
  }
  if (p.instruction.tokenizer == InstructionKind::kSentencePiece &&
      p.instruction.model.empty()) {
    return Bad(origin, "instruction.model",
               "a sentencepiece tokenizer names its model file");
  }
  return absl::OkStatus();
}

absl::StatusOr<PolicyInterface> ParsePolicyInterface(
    const std::string& text, const std::string& origin) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {  // NaN, 1e400, a cut file: where
    return absl::InvalidArgumentError(
        absl::StrCat(origin, ": not JSON: ", e.what()));
  }
  if (!j.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat(origin, ": not a JSON object"));
  }
  PolicyInterface p;
  try {
    if (j.value("format", std::string()) != kPolicyInterfaceFormat) {
      return Bad(origin, "format",
                 absl::StrCat("not ", kPolicyInterfaceFormat));
    }
    p.cameras.clear();
    const json& cameras = j.at("cameras");
    if (!cameras.is_array()) return Bad(origin, "cameras", "a list");
    if (cameras.size() > kMaxCameras) {  // before any is read
      return Bad(origin, "cameras",
                 absl::StrCat(cameras.size(), " (1 to ", kMaxCameras, ")"));
    }
    for (const json& c : cameras) {
      const std::string at = absl::StrCat("cameras[", p.cameras.size(), "]");
      absl::StatusOr<int64_t> h =
          Integer(c.at("height"), origin, at + ".height");
      if (!h.ok()) return h.status();
      absl::StatusOr<int64_t> w = Integer(c.at("width"), origin, at + ".width");
      if (!w.ok()) return w.status();
      p.cameras.push_back({c.at("name").get<std::string>(), *h, *w});
    }
    absl::StatusOr<int64_t> proprio =
        Integer(j.at("proprio"), origin, "proprio");
    if (!proprio.ok()) return proprio.status();
    p.proprio = *proprio;
    if (absl::Status s = ParseAction(j.at("action"), origin, &p.action);
        !s.ok()) {
      return s;
    }
    absl::StatusOr<int64_t> chunk = Integer(j.at("chunk"), origin, "chunk");
    if (!chunk.ok()) return chunk.status();
    p.chunk = *chunk;
    if (absl::Status s = ParseInstruction(
            j.value("instruction", json::object()), origin, &p.instruction);
        !s.ok()) {
      return s;
    }
  } catch (const json::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(origin, ": ", e.what()));
  }
  if (absl::Status s = ValidatePolicyInterface(p, origin); !s.ok()) return s;
  return p;
}

std::string PolicyInterfaceJson(const PolicyInterface& p) {
  json cams = json::array();
  for (const CameraSpec& c : p.cameras) {
    cams.push_back(
        {{"name", c.name}, {"height", c.height}, {"width", c.width}});
  }
  json action = {{"kind", KindName(p.action.kind)},
                 {"size", p.action.size},
                 {"low", p.action.low},
                 {"high", p.action.high}};
  if (p.action.kind == ActionKind::kBins) action["bins"] = p.action.bins;
  json instruction = {{"tokenizer", TokenizerName(p.instruction.tokenizer)},
                      {"max_len", p.instruction.max_len}};
  if (!p.instruction.model.empty()) instruction["model"] = p.instruction.model;
  const json j = {{"format", kPolicyInterfaceFormat},
                  {"cameras", cams},
                  {"proprio", p.proprio},
                  {"action", action},
                  {"chunk", p.chunk},
                  {"instruction", instruction}};
  return j.dump(2);
}

PolicyInterface TinyVLAInterface(int64_t height, int64_t width, int64_t chunk,
                                 int64_t max_text_len) {
  PolicyInterface p;
  p.cameras = {{"agentview", height, width}, {"wrist", height, width}};
  p.proprio = 8;
  p.action.kind = ActionKind::kBins;
  p.action.size = 7;
  p.action.bins.assign(7, 256);
  p.action.low.assign(7, -1.0);
  p.action.high.assign(7, 1.0);
  p.chunk = chunk;
  p.instruction.tokenizer = InstructionKind::kWords;
  p.instruction.max_len = max_text_len;
  return p;
}

}  // namespace rlvla3
