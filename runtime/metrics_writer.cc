#include "runtime/metrics_writer.h"

#include <unistd.h>

#include <cmath>

#include "absl/strings/str_cat.h"
#include "runtime/text_file.h"

namespace rlvla3 {
namespace {

std::string Number(double v) {
  if (!std::isfinite(v)) return "null";
  return absl::StrCat(v);
}

std::string JsonString(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  out.push_back('"');
  return out;
}

}  // namespace

absl::StatusOr<std::unique_ptr<JsonlWriter>> JsonlWriter::Open(
    const std::string& path) {
  std::ofstream out(path, std::ios::out | std::ios::trunc);
  if (!out)
    return absl::UnavailableError(
        absl::StrCat("cannot open ", path, " for writing"));
  return std::unique_ptr<JsonlWriter>(new JsonlWriter(std::move(out), path));
}

absl::Status JsonlWriter::Write(const MetricsSnapshot& s) {
  std::string line = absl::StrCat("{\"elapsed_s\":", Number(s.elapsed_s));
  for (const auto& [k, v] : s.values)
    absl::StrAppend(&line, ",", JsonString(k), ":", Number(v));
  line += "}\n";
  out_ << line;
  out_.flush();
  return StreamStatus(out_, path_);
}

absl::StatusOr<std::unique_ptr<CsvWriter>> CsvWriter::Open(
    const std::string& path) {
  std::ofstream out(path, std::ios::out | std::ios::trunc);
  if (!out)
    return absl::UnavailableError(
        absl::StrCat("cannot open ", path, " for writing"));
  return std::unique_ptr<CsvWriter>(new CsvWriter(std::move(out), path));
}

absl::Status CsvWriter::Write(const MetricsSnapshot& s) {
  if (columns_.empty()) {
    std::string header = "elapsed_s";
    for (const auto& kv : s.values) {
      columns_.push_back(kv.first);
      absl::StrAppend(&header, ",", kv.first);
    }
    out_ << header << "\n";
  }
  std::string row = absl::StrCat(s.elapsed_s);
  for (const auto& c : columns_) {
    row += ",";
    for (const auto& [k, v] : s.values) {
      if (k == c) {
        if (std::isfinite(v)) absl::StrAppend(&row, v);
        break;
      }
    }
  }
  out_ << row << "\n";
  out_.flush();
  return StreamStatus(out_, path_);
}

ProgressLine::Mode ProgressLine::ParseMode(const std::string& name) {
  if (name == "tty") return Mode::kTty;
  if (name == "plain") return Mode::kPlain;
  if (name == "off") return Mode::kOff;
  return Mode::kAuto;
}

ProgressLine::ProgressLine(std::FILE* out, Mode mode,
                           absl::Duration plain_period)
    : out_(out), mode_(mode), plain_period_(plain_period) {
  if (mode_ == Mode::kAuto)
    mode_ = isatty(fileno(out_)) ? Mode::kTty : Mode::kPlain;
}

void ProgressLine::Update(const std::string& line) {
  switch (mode_) {
    case Mode::kOff:
    case Mode::kAuto:
      return;
    case Mode::kTty:
      // Carriage return, the line, then clear to end of line.
      std::fprintf(out_, "\r%s\033[K", line.c_str());
      std::fflush(out_);
      live_ = true;
      return;
    case Mode::kPlain: {
      const auto now = std::chrono::steady_clock::now();
      if (printed_plain_ && absl::FromChrono(now - last_plain_) < plain_period_)
        return;
      std::fprintf(out_, "%s\n", line.c_str());
      std::fflush(out_);
      last_plain_ = now;
      printed_plain_ = true;
      return;
    }
  }
}

void ProgressLine::Finish() {
  if (mode_ == Mode::kTty && live_) {
    std::fprintf(out_, "\n");
    std::fflush(out_);
    live_ = false;
  }
}

}  // namespace rlvla3
