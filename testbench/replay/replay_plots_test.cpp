// The plots of one run directory (replay/plots.h) and the CSV reader under them
// (replay/csv_table.h): what each data file and script holds for a small hand-written run, that
// a missing file skips its plot and a malformed one names file and line, that the same files give
// the same bytes, and, where gnuplot is installed, that it draws every plot.
#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>

#include "replay/csv_table.h"
#include "replay/gnuplot.h"
#include "replay/plots.h"
#include "replay/subprocess.h"
#include "testbench/replay/temp_files.h"

namespace hcaemu::replay {
namespace {

using testing::exists;
using testing::expect_png_and_svg;
using testing::read_file;
using testing::TempDir;
using testing::write_file;

// Two opcodes, one message incomplete, a column this reader does not know.
constexpr const char* kMessages =
    "qp,op,opcode,bytes,post_ns,first_packet_ns,done_ns,fct_ns,ideal_fct_ns,slowdown,status,captured_fct_ns\n"
    "0,0,write,65536,0.000,1.000,2000.000,2000.000,1000.000,2.000,ok,\n"
    "0,1,write,65536,0.000,1.000,4000.000,4000.000,1000.000,4.000,ok,\n"
    "0,2,write,1000,0.000,1.000,1500.000,1500.000,500.000,3.000,ok,\n"
    "1,0,read,64,0.000,1.000,1000.000,1000.000,1000.000,1.000,ok,\n"
    "1,1,read,64,0.000,,,,,,incomplete,\n";
constexpr const char* kSummary =
    "opcode,size,count,fct_p50_ns,fct_p99_ns,fct_p999_ns,slowdown_p50,slowdown_p99,slowdown_p999\n"
    "all,all,4,2000.000,4000.000,4000.000,2.000,4.000,4.000\n"
    "read,64B,1,1000.000,1000.000,1000.000,1.000,1.000,1.000\n"
    "write,1KiB,1,1500.000,1500.000,1500.000,3.000,3.000,3.000\n"
    "write,64KiB,2,2000.000,4000.000,4000.000,2.000,4.000,4.000\n";
// Bins of 10 us; QP 0 skips two bins and is rate-limited from its second bin on.
constexpr const char* kQps =
    "qp,bin_start_ns,bytes,gbps,rate_gbps,cnps\n"
    "0,0.000,65536,52.429,,0\n"
    "0,10000.000,65536,52.429,50.000,1\n"
    "0,40000.000,65536,52.429,25.000,0\n"
    "10,0.000,1000,0.800,,0\n"
    "2,20000.000,64,0.051,,0\n";
// host0->switch0 never holds more than a frame; switch0->host1 does, marks and pauses, and has
// no row for the bin at 20 us.
constexpr const char* kLinks =
    "link,bin_start_ns,bytes,gbps,queue_bytes,ecn_marks,pause_frames,drops\n"
    "host0->switch0,0.000,4000,3.200,4100,0,0,0\n"
    "switch0->host1,0.000,9000,7.200,9000,2,0,0\n"
    "switch0->host1,10000.000,9000,7.200,20000,3,1,0\n"
    "switch0->host1,30000.000,100,0.080,74,0,0,0\n";

void write_run(const TempDir& dir) {
  write_file(dir / "messages.csv", kMessages);
  write_file(dir / "summary.csv", kSummary);
  write_file(dir / "qps.csv", kQps);
  write_file(dir / "links.csv", kLinks);
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// ---- the CSV reader ----

TEST(CsvTable, ReadsQuotedFieldsCrlfAndBlankLinesWithTheirLineNumbers) {
  TempDir dir;
  write_file(dir / "t.csv", "a,b\r\n\"x,1\",\"say \"\"hi\"\"\"\r\n\r\n2,3\r\n");
  const CsvRead read = read_csv(dir / "t.csv", {"b"});
  ASSERT_TRUE(read.table) << read.error;
  EXPECT_EQ(read.table->rows, (std::vector<std::vector<std::string>>{{"x,1", "say \"hi\""}, {"2", "3"}}));
  EXPECT_EQ(read.table->lines, (std::vector<size_t>{2, 4}));
  EXPECT_EQ(read.table->where(1), dir / "t.csv:4");
}

TEST(CsvTable, AMissingFileIsToldApartFromAMalformedOne) {
  TempDir dir;
  EXPECT_TRUE(read_csv(dir / "none.csv").missing);
  write_file(dir / "short.csv", "a,b\n1,2\n3\n");
  const CsvRead read = read_csv(dir / "short.csv");
  EXPECT_FALSE(read.missing);
  EXPECT_EQ(read.error, dir / "short.csv:3: 1 fields, the header has 2 (a,b)");
}

TEST(CsvTable, ARequiredColumnMissingNamesTheHeader) {
  TempDir dir;
  write_file(dir / "t.csv", "a,b\n1,2\n");
  EXPECT_EQ(read_csv(dir / "t.csv", {"c"}).error, dir / "t.csv:1: no column \"c\" (header: a,b)");
}

TEST(CsvTable, AnUnterminatedQuoteIsAnErrorAtItsLine) {
  TempDir dir;
  write_file(dir / "t.csv", "a\n\"open\n");
  EXPECT_EQ(read_csv(dir / "t.csv").error, dir / "t.csv:2: unterminated or misplaced quote");
}

TEST(CsvTable, NumbersParseWholeOrNotAtAll) {
  EXPECT_EQ(parse_number("1.5"), 1.5);
  EXPECT_EQ(parse_number("+2"), 2.0);
  EXPECT_EQ(parse_number("-1e3"), -1000.0);
  for (const char* bad : {"", "abc", "1.5x", "nan", "inf", "+-1", " 1"}) EXPECT_FALSE(parse_number(bad)) << bad;
}

TEST(CsvTable, FieldsAreQuotedOnlyWhenTheyMustBe) {
  EXPECT_EQ(csv_field("plain.value"), "plain.value");
  EXPECT_EQ(csv_field("a,b"), "\"a,b\"");
  EXPECT_EQ(csv_field("say \"x\""), "\"say \"\"x\"\"\"");
}

// ---- the plots ----

TEST(RunPlots, WritesTheFourScriptsInOrder) {
  TempDir dir;
  write_run(dir);
  const RunPlots plots = write_run_plots(dir.path());
  EXPECT_TRUE(plots.errors.empty()) << plots.errors[0];
  EXPECT_TRUE(plots.notes.empty());
  EXPECT_EQ(plots.scripts,
            (std::vector<std::string>{"fct_cdf.gp", "slowdown_by_size.gp", "throughput.gp", "queue_depth.gp"}));
}

TEST(RunPlots, FctCdfHasOneBlockPerOpcodeOfCompletedMessagesInMicroseconds) {
  TempDir dir;
  write_run(dir);
  write_run_plots(dir.path());
  EXPECT_EQ(read_file(dir / "plots/fct_cdf.dat"),
            "# read: 1 messages\n1 1\n\n\n"
            "# write: 3 messages\n1.5 0.333333333333\n2 0.666666666667\n4 1\n\n\n");
  const std::string gp = read_file(dir / "plots/fct_cdf.gp");
  EXPECT_TRUE(contains(gp, "set logscale x\n"));
  expect_png_and_svg(gp, "fct_cdf");
  EXPECT_TRUE(contains(gp,
                       "plot 'fct_cdf.dat' index 0 using 1:2 with steps lw 2 title 'read (1)', \\\n"
                       "     'fct_cdf.dat' index 1 using 1:2 with steps lw 2 title 'write (3)'\n"));
}

TEST(RunPlots, SlowdownBySizeOrdersBucketsBySize) {
  TempDir dir;
  write_run(dir);
  write_run_plots(dir.path());
  EXPECT_EQ(read_file(dir / "plots/slowdown_by_size.dat"), "# read\n0 1 1\n\n\n# write\n1 3 3\n2 2 4\n\n\n");
  const std::string gp = read_file(dir / "plots/slowdown_by_size.gp");
  EXPECT_TRUE(contains(gp, "set xtics ('64B' 0, '1KiB' 1, '64KiB' 2)\n"));
  EXPECT_TRUE(contains(gp, "using 1:3 with linespoints lw 2 pt 6 dt 2 lc rgb '#ff7f0e' title 'write p99'"));
}

TEST(RunPlots, SlowdownBySizeIsComputedFromTheMessagesWithoutASummary) {
  TempDir with_summary, without;
  write_run(with_summary);
  write_file(without / "messages.csv", kMessages);
  write_run_plots(with_summary.path());
  const RunPlots plots = write_run_plots(without.path());
  EXPECT_EQ(read_file(without / "plots/slowdown_by_size.dat"), read_file(with_summary / "plots/slowdown_by_size.dat"));
  EXPECT_TRUE(contains(read_file(without / "plots/slowdown_by_size.gp"), "../messages.csv (no summary.csv)"));
  EXPECT_EQ(plots.notes,
            (std::vector<std::string>{"throughput: skipped, no qps.csv", "queue_depth: skipped, no links.csv"}));
  EXPECT_TRUE(plots.errors.empty());
}

TEST(RunPlots, ThroughputFallsToZeroOverMissingBinsAndKeepsTheRate) {
  TempDir dir;
  write_run(dir);
  write_run_plots(dir.path());
  EXPECT_EQ(read_file(dir / "plots/throughput.dat"),
            "# QP 0\n0 52.429 NaN\n10 52.429 50\n20 0 50\n40 52.429 25\n50 0 25\n\n\n"
            "# QP 2\n20 0.051 NaN\n30 0 NaN\n\n\n"
            "# QP 10\n0 0.8 NaN\n10 0 NaN\n\n\n");
  const std::string gp = read_file(dir / "plots/throughput.gp");
  EXPECT_TRUE(contains(gp, "index 0 using 1:3 with steps lw 2 dt 2 lc rgb '#1f77b4' title 'QP 0 rate'"));
  EXPECT_FALSE(contains(gp, "QP 2 rate")) << "a QP never limited has no rate line";
}

TEST(RunPlots, QueueDepthShowsOnlyLinksThatQueueAndBreaksOverMissingBins) {
  TempDir dir;
  write_run(dir);
  write_run_plots(dir.path());
  EXPECT_EQ(read_file(dir / "plots/queue_depth.dat"),
            "# switch0->host1\n0 9\n10 20\n20 20\n\n30 0.074\n40 0.074\n\n\n");
  EXPECT_EQ(read_file(dir / "plots/queue_depth_marks.dat"), "0 2 0\n10 3 1\n");
  const std::string gp = read_file(dir / "plots/queue_depth.gp");
  EXPECT_FALSE(contains(gp, "host0->switch0"));
  EXPECT_TRUE(contains(gp, "'queue_depth_marks.dat' using 1:2 axes x1y2 with impulses"));
  EXPECT_TRUE(contains(gp, "'queue_depth_marks.dat' using 1:3 axes x1y2 with impulses"));
}

TEST(RunPlots, AMalformedLineIsAnErrorNamingFileAndLineAndTheOtherPlotsAreWritten) {
  TempDir dir;
  write_run(dir);
  write_file(dir / "links.csv",
             "link,bin_start_ns,bytes,gbps,queue_bytes,ecn_marks,pause_frames,drops\n"
             "a->b,0.000,1,1,1,0,0,0\n"
             "a->b,10000.000,1,1,1,0,0\n");
  write_file(dir / "qps.csv", "qp,bin_start_ns,bytes,gbps,rate_gbps,cnps\n0,0.000,1,fast,,0\n");
  const RunPlots plots = write_run_plots(dir.path());
  EXPECT_EQ(plots.errors, (std::vector<std::string>{dir / "qps.csv:2: gbps \"fast\" is not a number",
                                                    dir / "links.csv:3: 7 fields, the header has 8 "
                                                          "(link,bin_start_ns,bytes,gbps,queue_bytes,ecn_marks,"
                                                          "pause_frames,drops)"}));
  EXPECT_EQ(plots.scripts, (std::vector<std::string>{"fct_cdf.gp", "slowdown_by_size.gp"}));
}

TEST(RunPlots, TheSameFilesGiveTheSameBytes) {
  TempDir a, b;
  write_run(a);
  write_run(b);
  write_run_plots(a.path());
  write_run_plots(b.path());
  for (const char* name : {"fct_cdf.gp", "fct_cdf.dat", "slowdown_by_size.gp", "slowdown_by_size.dat", "throughput.gp",
                           "throughput.dat", "queue_depth.gp", "queue_depth.dat", "queue_depth_marks.dat"})
    EXPECT_EQ(read_file(a / (std::string("plots/") + name)), read_file(b / (std::string("plots/") + name))) << name;
}

TEST(RunPlots, NothingToPlotIsAnError) {
  TempDir dir;
  const RunPlots plots = write_run_plots(dir.path());
  EXPECT_EQ(plots.errors.size(), 1u);
  EXPECT_TRUE(contains(plots.errors[0], "nothing to plot"));
}

// PATH changed for one test and put back.
class ScopedPath {
 public:
  explicit ScopedPath(const std::string& path) {
    if (const char* old = std::getenv("PATH")) old_ = old;
    setenv("PATH", path.c_str(), 1);
  }
  ~ScopedPath() {
    if (old_)
      setenv("PATH", old_->c_str(), 1);
    else
      unsetenv("PATH");
  }

 private:
  std::optional<std::string> old_;
};

TEST(RunPlots, WithoutGnuplotTheErrorSaysHowToInstallItAndTheScriptsAreWritten) {
  TempDir dir, empty_path;
  write_run(dir);
  std::string error;
  {
    const ScopedPath path(empty_path.path());
    EXPECT_FALSE(plot_run(dir.path(), &error));
  }
  EXPECT_EQ(error, kGnuplotMissing);
  EXPECT_TRUE(exists(dir / "plots/fct_cdf.gp"));
}

TEST(RunPlots, GnuplotDrawsEveryPlotTheSameTwice) {
  if (find_program("gnuplot").empty()) GTEST_SKIP() << "gnuplot is not installed";
  TempDir dir;
  write_run(dir);
  std::string error;
  std::vector<std::string> notes;
  ASSERT_TRUE(plot_run(dir.path(), &error, &notes)) << error;
  std::vector<std::string> first;
  for (const char* name : {"fct_cdf", "slowdown_by_size", "throughput", "queue_depth"}) {
    for (const char* ext : {".png", ".svg"}) {
      const std::string path = dir / (std::string("plots/") + name + ext);
      first.push_back(read_file(path));
      EXPECT_GT(first.back().size(), 1000u) << path;
    }
  }
  EXPECT_EQ(first[1].rfind("<?xml", 0), 0u);
  ASSERT_TRUE(plot_run(dir.path(), &error)) << error;
  size_t i = 0;
  for (const char* name : {"fct_cdf", "slowdown_by_size", "throughput", "queue_depth"})
    for (const char* ext : {".png", ".svg"})
      EXPECT_EQ(read_file(dir / (std::string("plots/") + name + ext)), first[i++]) << name << ext;
}

}  // namespace
}  // namespace hcaemu::replay
