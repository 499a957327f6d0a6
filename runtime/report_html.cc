#include "runtime/report_html.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "runtime/text_file.h"

namespace rlvla3 {
namespace {

constexpr const char* kColours[] = {"#1f77b4", "#d62728", "#2ca02c",
                                    "#ff7f0e", "#9467bd", "#8c564b"};
constexpr int kWidth = 640, kHeight = 300;
// The title on the first row, the legend on its own row below it (never
// over the title), then the plot.
// kRight: half the widest x tick label ("12.5k"), so the last is not cut.
constexpr int kLeft = 64, kRight = 24, kTop = 46, kBottom = 44;
constexpr int kTitleY = 16, kLegendY = 34;

// A value as people write it: 0.25, 437, 12.3k, 1.5M (never 1e+04).
std::string Num(double v) {
  const double a = std::fabs(v);
  if (v == 0) return "0";
  if (a >= 1e6) return absl::StrFormat("%.3gM", v / 1e6);
  if (a >= 1e4) return absl::StrFormat("%.3gk", v / 1e3);
  if (a < 1e-2) return absl::StrFormat("%.2g", v);
  return absl::StrFormat("%.4g", v);
}

// A tick value as people write it: 0, 0.25, 0.5, 2, 437, 5k, 12.5k, 1.5M;
// never exponent notation (1e+04, 1.5e+06), and a million reads 1M rather
// than 1000k. Ticks are round multiples of 1, 2 or 5 x 10^k, so four
// significant digits (trailing zeros dropped) show them exactly.
std::string TickLabel(double v) {
  const double a = std::fabs(v);
  if (!(a > 0) || !std::isfinite(v)) return "0";
  const char* unit = a >= 1e6 ? "M" : a >= 1e3 ? "k" : "";
  const double scaled = a >= 1e6 ? v / 1e6 : a >= 1e3 ? v / 1e3 : v;
  const int magnitude =
      static_cast<int>(std::floor(std::log10(std::fabs(scaled))));
  const int decimals = std::clamp(3 - magnitude, 0, 12);
  std::string s = absl::StrFormat("%.*f", decimals, scaled);
  if (s.find('.') != std::string::npos) {
    s.erase(s.find_last_not_of('0') + 1);
    if (s.back() == '.') s.pop_back();
  }
  if (s == "-0") s = "0";
  return s + unit;
}

// Tick `i` of an axis with round step `step`.
std::string Tick(double step, int i) {
  if (i == 0) return "0";
  return TickLabel(step * i);
}

// A round tick step (1, 2 or 5 x 10^k) giving about `target` intervals up
// to `max`, and the axis end: the first tick at or above max.
struct Ticks {
  double step = 1, end = 1;
  int count = 1;  // intervals
};
Ticks NiceTicks(double max, int target = 4) {
  Ticks t;
  if (!(max > 0) || !std::isfinite(max)) max = 1;
  const double raw = max / target;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  const double f = raw / mag;
  t.step = (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * mag;
  t.count = std::max(1, static_cast<int>(std::ceil(max / t.step - 1e-9)));
  t.end = t.step * t.count;
  return t;
}

// Draws the title and the y axis with round ticks up to `y.end`.
void Axes(const std::string& title, const std::string& x_label,
          const std::string& y_label, const Ticks& y, std::string* out) {
  const int plot_h = kHeight - kTop - kBottom;
  absl::StrAppendFormat(out,
                        "<svg width=\"%d\" height=\"%d\" "
                        "xmlns=\"http://www.w3.org/2000/svg\" "
                        "font-family=\"sans-serif\" font-size=\"11\">\n"
                        "<text x=\"%d\" y=\"%d\" font-size=\"13\" "
                        "font-weight=\"bold\">%s</text>\n",
                        kWidth, kHeight, kLeft, kTitleY, HtmlEscape(title));
  for (int i = 0; i <= y.count; ++i) {
    const double py = kTop + plot_h - plot_h * static_cast<double>(i) / y.count;
    absl::StrAppendFormat(out,
                          "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" "
                          "stroke=\"#ddd\"/>\n<text x=\"%d\" y=\"%.1f\" "
                          "text-anchor=\"end\">%s</text>\n",
                          kLeft, py, kWidth - kRight, py, kLeft - 4, py + 4,
                          Tick(y.step, i));
  }
  absl::StrAppendFormat(
      out,
      "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">%s</text>\n"
      "<text x=\"12\" y=\"%d\" transform=\"rotate(-90 12 %d)\" "
      "text-anchor=\"middle\">%s</text>\n",
      (kLeft + kWidth - kRight) / 2, kHeight - 6, HtmlEscape(x_label),
      kTop + plot_h / 2, kTop + plot_h / 2, HtmlEscape(y_label));
}

void Legend(const std::vector<Series>& series, std::string* out) {
  int x = kLeft;
  for (size_t i = 0; i < series.size(); ++i) {
    absl::StrAppendFormat(out,
                          "<rect x=\"%d\" y=\"%d\" width=\"10\" "
                          "height=\"10\" fill=\"%s\"/><text x=\"%d\" "
                          "y=\"%d\">%s</text>\n",
                          x, kLegendY - 9, kColours[i % 6], x + 14, kLegendY,
                          HtmlEscape(series[i].name));
    x += 24 + 7 * static_cast<int>(series[i].name.size());
  }
}

std::string RenderLine(const LineChart& c) {
  double x_max = 0, y_max = 0;
  for (const auto& s : c.series) {
    for (double v : s.x) x_max = std::max(x_max, v);
    for (double v : s.y)
      if (std::isfinite(v)) y_max = std::max(y_max, v);
  }
  const Ticks xt = NiceTicks(x_max, 5), yt = NiceTicks(y_max);
  x_max = xt.end;
  y_max = yt.end;
  std::string out;
  Axes(c.title, c.x_label, c.y_label, yt, &out);
  const int plot_w = kWidth - kLeft - kRight, plot_h = kHeight - kTop - kBottom;
  for (int i = 0; i <= xt.count; ++i) {
    absl::StrAppendFormat(
        &out, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%s</text>\n",
        kLeft + plot_w * static_cast<double>(i) / xt.count, kTop + plot_h + 14,
        Tick(xt.step, i));
  }
  for (size_t i = 0; i < c.series.size(); ++i) {
    const Series& s = c.series[i];
    std::string pts;
    for (size_t k = 0; k < std::min(s.x.size(), s.y.size()); ++k) {
      if (!std::isfinite(s.y[k])) continue;
      absl::StrAppendFormat(&pts, "%.1f,%.1f ", kLeft + plot_w * s.x[k] / x_max,
                            kTop + plot_h - plot_h * s.y[k] / y_max);
    }
    absl::StrAppendFormat(&out,
                          "<polyline fill=\"none\" stroke=\"%s\" "
                          "stroke-width=\"1.8\" points=\"%s\"/>\n",
                          kColours[i % 6], pts);
  }
  Legend(c.series, &out);
  out += "</svg>\n";
  return out;
}

std::string RenderBars(const BarChart& c) {
  double y_max = 0;
  for (const auto& s : c.series)
    for (double v : s.y)
      if (std::isfinite(v)) y_max = std::max(y_max, v);
  const Ticks yt = NiceTicks(y_max);
  y_max = yt.end;
  std::string out;
  Axes(c.title, c.x_label, c.y_label, yt, &out);
  const int plot_w = kWidth - kLeft - kRight, plot_h = kHeight - kTop - kBottom;
  const size_t n = std::max<size_t>(1, c.labels.size());
  const double slot = static_cast<double>(plot_w) / n;
  const double bar = slot * 0.8 / std::max<size_t>(1, c.series.size());
  for (size_t k = 0; k < c.labels.size(); ++k) {
    absl::StrAppendFormat(
        &out, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%s</text>\n",
        kLeft + slot * (k + 0.5), kTop + plot_h + 14, HtmlEscape(c.labels[k]));
    for (size_t i = 0; i < c.series.size(); ++i) {
      const double v = k < c.series[i].y.size() ? c.series[i].y[k] : 0;
      const double h = std::isfinite(v) ? plot_h * v / y_max : 0;
      absl::StrAppendFormat(
          &out,
          "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
          "height=\"%.1f\" fill=\"%s\"><title>%s</title></rect>\n",
          kLeft + slot * k + slot * 0.1 + bar * i, kTop + plot_h - h, bar, h,
          kColours[i % 6], Num(v));
    }
  }
  Legend(c.series, &out);
  out += "</svg>\n";
  return out;
}

}  // namespace

std::string HtmlEscape(const std::string& s) {
  std::string out;
  for (char ch : s) {
    switch (ch) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += ch;
    }
  }
  return out;
}

std::string RenderReportHtml(const Report& r) {
  std::string out = absl::StrCat(
      "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>",
      HtmlEscape(r.title),
      "</"
      "title>\n<style>body{font-family:sans-serif;margin:24px;max-width:1400px}"
      "table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #ccc;"
      "padding:3px 8px;text-align:right}th{background:#f3f3f3}"
      "td:first-child,th:first-child{text-align:left}"
      "svg{margin:6px;border:1px solid #eee}</style></head><body>\n<h1>",
      HtmlEscape(r.title), "</h1>\n");
  for (const auto& s : r.sections) {
    absl::StrAppend(&out, "<h2>", HtmlEscape(s.heading), "</h2>\n");
    if (!s.text.empty())
      absl::StrAppend(&out, "<pre>", HtmlEscape(s.text), "</pre>\n");
    if (!s.table.empty()) {
      out += "<table>\n";
      for (size_t i = 0; i < s.table.size(); ++i) {
        out += "<tr>";
        for (const auto& cell : s.table[i]) {
          absl::StrAppend(&out, i == 0 ? "<th>" : "<td>", HtmlEscape(cell),
                          i == 0 ? "</th>" : "</td>");
        }
        out += "</tr>\n";
      }
      out += "</table>\n";
    }
    out += "<div>\n";
    for (const auto& c : s.lines) out += RenderLine(c);
    for (const auto& c : s.bars) out += RenderBars(c);
    out += "</div>\n";
  }
  out += "</body></html>\n";
  return out;
}

absl::Status WriteReportHtml(const Report& r, const std::string& path) {
  return WriteTextFile(path, RenderReportHtml(r));
}

}  // namespace rlvla3
