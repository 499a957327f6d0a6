// report.html charts: round axis ends and ticks, the legend on its own row.
#include "runtime/report_html.h"

#include <gtest/gtest.h>

#include <regex>
#include <string>
#include <vector>

namespace rlvla3 {
namespace {

TEST(ReportHtml, AxesEndAtRoundNumbersWithRoundTicks) {
  Report r{"t", {}};
  ReportSection s;
  s.lines.push_back(LineChart{"throughput",
                              "wall time (s)",
                              "frames/s",
                              {{"async", {0, 100, 437}, {0.1, 0.5, 0.73}}}});
  r.sections.push_back(s);
  const std::string html = RenderReportHtml(r);
  // y: 0.73 -> ticks 0, 0.2, ..., 0.8; x: 437 -> 0, 100, ..., 500.
  for (const char* tick :
       {">0<", ">0.2<", ">0.4<", ">0.6<", ">0.8<", ">100<", ">300<", ">500<"}) {
    EXPECT_NE(html.find(tick), std::string::npos) << tick;
  }
  EXPECT_EQ(html.find(">0.7665<"), std::string::npos);  // no raw max * 1.05
  EXPECT_EQ(html.find(">109.2<"), std::string::npos);   // no max / 4
  EXPECT_NE(html.find(">wall time (s)<"), std::string::npos);
  EXPECT_NE(html.find(">frames/s<"), std::string::npos);
}

TEST(ReportHtml, ThousandsReadAsPeopleWriteThemAndTheLastTickFits) {
  Report r{"t", {}};
  ReportSection s;
  s.lines.push_back(LineChart{"success vs trained samples",
                              "trained samples",
                              "success",
                              {{"async", {0, 7000, 14600}, {0, 0.4, 0.5}}}});
  r.sections.push_back(s);
  const std::string html = RenderReportHtml(r);
  for (const char* tick : {">5k<", ">10k<", ">15k<"}) {
    EXPECT_NE(html.find(tick), std::string::npos) << tick;
  }
  EXPECT_EQ(html.find(">5000<"), std::string::npos);
  EXPECT_EQ(html.find("e+"), std::string::npos);  // no 1e+04, no 1.5e+0
  // The last x tick's centre leaves room for half a label before the edge.
  const size_t last = html.find(">15k<");
  ASSERT_NE(last, std::string::npos);
  const size_t x_at = html.rfind("x=\"", last);
  const double x = std::stod(html.substr(x_at + 3));
  EXPECT_LE(x + 12, 640.0);  // "15k" is about 20 px wide at 11 px
}

// The tick labels of one rendered line chart, in order: the x axis's
// (centred under the plot, with their x) and the y axis's (right-aligned,
// bottom to top).
struct TickLabels {
  std::vector<std::string> x, y;
  std::vector<double> x_at;
};
TickLabels TicksOf(const LineChart& chart) {
  Report r{"t", {}};
  ReportSection s;
  s.lines.push_back(chart);
  r.sections.push_back(s);
  const std::string html = RenderReportHtml(r);
  const std::regex text(
      R"re(<text x="([0-9.]+)" y="[0-9.]+" text-anchor="(middle|end)">)re"
      R"re(([^<]*)</text>)re");
  TickLabels t;
  for (std::sregex_iterator it(html.begin(), html.end(), text), end; it != end;
       ++it) {
    const std::string label = (*it)[3];
    if ((*it)[2] == "end") {
      t.y.push_back(label);
    } else if (label != chart.x_label) {
      t.x.push_back(label);
      t.x_at.push_back(std::stod((*it)[1]));
    }
  }
  return t;
}

TEST(ReportHtml, TickLabelsReadAsPeopleWriteThem) {
  using Labels = std::vector<std::string>;
  // x: 1.4M -> step 500k; y: 1.8 -> step 0.5.
  const TickLabels a =
      TicksOf(LineChart{"success vs trained samples",
                        "trained samples",
                        "success",
                        {{"async", {0, 700000, 1400000}, {0, 1.2, 1.8}}}});
  EXPECT_EQ(a.x, (Labels{"0", "500k", "1M", "1.5M"}));
  EXPECT_EQ(a.y, (Labels{"0", "0.5", "1", "1.5", "2"}));
  // x: 0.25 -> step 0.05 (0.15 is 0.15000000000000002 in binary); y: 14.6k
  // -> step 5k.
  const TickLabels b = TicksOf(LineChart{
      "loss", "epoch", "loss", {{"a", {0, 0.1, 0.25}, {0, 150, 14600}}}});
  EXPECT_EQ(b.x, (Labels{"0", "0.05", "0.1", "0.15", "0.2", "0.25"}));
  EXPECT_EQ(b.y, (Labels{"0", "5k", "10k", "15k"}));
  // The last x tick ("1.5M", about 26 px wide at 11 px) is centred on its
  // tick with room for its right half before the chart's edge.
  ASSERT_FALSE(a.x_at.empty());
  EXPECT_LE(a.x_at.back() + 14, 640.0);
}

TEST(ReportHtml, TheLegendHasItsOwnRowUnderTheTitle) {
  Report r{"t", {}};
  ReportSection s;
  BarChart b{
      "a very long chart title that would run under a legend placed "
      "beside it",
      "busy (%)",
      {"env", "learner"},
      {{"sync", {}, {10, 20}}, {"async", {}, {30, 40}}},
      "stage"};
  s.bars.push_back(b);
  r.sections.push_back(s);
  const std::string html = RenderReportHtml(r);
  const size_t title = html.find("a very long chart title");
  ASSERT_NE(title, std::string::npos);
  // The y coordinate of the <text> holding position `at`.
  auto y_of = [&html](size_t at) {
    const size_t q = html.rfind("y=\"", at) + 3;
    return std::stod(html.substr(q, html.find('"', q) - q));
  };
  const size_t legend = html.find(">sync<");
  ASSERT_NE(legend, std::string::npos);
  EXPECT_GE(y_of(legend) - y_of(title), 13.0);         // a row apart
  EXPECT_NE(html.find(">stage<"), std::string::npos);  // the x axis' label
}

}  // namespace
}  // namespace rlvla3
