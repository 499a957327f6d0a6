// File: runtime/enum_names.h
// -----------------------------------------------------------------------------
// EnumNames: one table per enum for its names, read both ways. The table's
// order is the order a config key's choices are listed in.
//
// Example:
//   enum class Color { kRed, kBlue };
//   inline constexpr EnumNames<Color, 2> kColorNames{
//       {{{Color::kRed, "red"}, {Color::kBlue, "blue"}}}};
//   kColorNames.Name(Color::kBlue);   // "blue"
//   kColorNames.Parse("red");         // Color::kRed; "green": nullopt
//   kColorNames.Names();              // {"red", "blue"}
// -----------------------------------------------------------------------------
#ifndef RLVLA3_RUNTIME_ENUM_NAMES_H_
#define RLVLA3_RUNTIME_ENUM_NAMES_H_

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"

namespace rlvla3 {

template <typename E, size_t N>
struct EnumNames {
  std::array<std::pair<E, const char*>, N> table;

  // `unknown` for a value outside the table (a cast integer).
  constexpr const char* Name(E e, const char* unknown = "?") const {
    for (const auto& [value, name] : table) {
      if (value == e) return name;
    }
    return unknown;
  }
  std::optional<E> Parse(absl::string_view name) const {
    for (const auto& [value, n] : table) {
      if (name == n) return value;
    }
    return std::nullopt;
  }
  std::vector<std::string> Names() const {
    std::vector<std::string> out;
    for (const auto& entry : table) out.emplace_back(entry.second);
    return out;
  }
};

}  // namespace rlvla3

#endif  // RLVLA3_RUNTIME_ENUM_NAMES_H_
