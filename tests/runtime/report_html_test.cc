// report.html charts: round axis ends and ticks, the legend on its own row.
#include "runtime/report_html.h"

#include <gtest/gtest.h>

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
