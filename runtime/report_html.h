// File: runtime/report_html.h
// -----------------------------------------------------------------------------
// report.html: one self-contained page (inline SVG, no scripts, no network)
// with tables and charts, so it opens anywhere, including headless browsers.
// Line charts plot series of (x, y) points; bar charts plot one value per
// label. Axes end at round numbers with ticks at 1, 2 or 5 x 10^k; the
// legend has its own row under the title. Labels should carry units.
//
// Example:
//   Report r{"rl-vla3 bench"};
//   r.sections.push_back({"Throughput", "env frames/s over time", {},
//                         {LineChart{"frames/s", "s", "frames/s",
//                                    {{"async", xs, ys}}}}, {}});
//   WriteReportHtml(r, "runs/bench/report.html");
// -----------------------------------------------------------------------------
#ifndef RLVLA3_RUNTIME_REPORT_HTML_H_
#define RLVLA3_RUNTIME_REPORT_HTML_H_

#include <string>
#include <vector>

#include "absl/status/status.h"

namespace rlvla3 {

struct Series {
  std::string name;
  std::vector<double> x, y;
};

struct LineChart {
  std::string title, x_label, y_label;
  std::vector<Series> series;
};

struct BarChart {
  std::string title, y_label;
  std::vector<std::string> labels;
  std::vector<Series> series;  // y[i] is the value for labels[i]
  std::string x_label;         // what the labels are (with their unit)
};

struct ReportSection {
  std::string heading;
  std::string text;                             // a paragraph (escaped)
  std::vector<std::vector<std::string>> table;  // first row is the header
  std::vector<LineChart> lines;
  std::vector<BarChart> bars;
};

struct Report {
  std::string title;
  std::vector<ReportSection> sections;
};

std::string RenderReportHtml(const Report& report);
absl::Status WriteReportHtml(const Report& report, const std::string& path);
std::string HtmlEscape(const std::string& s);

}  // namespace rlvla3

#endif  // RLVLA3_RUNTIME_REPORT_HTML_H_
