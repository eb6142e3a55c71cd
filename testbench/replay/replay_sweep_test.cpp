// Sweeps (replay/sweep.h): the points of a sweep and their order, the checks on --set, the job
// files for GNU parallel and Slurm (run through a real shell), the local runner with a stand-in
// for hcareplay (a shell script: concurrency bound, a failing point, logs), collect over
// hand-written point directories, and the plot of a sweep's results.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <sstream>

#include "replay/collect.h"
#include "replay/point_runner.h"
#include "replay/subprocess.h"
#include "replay/sweep.h"
#include "replay/sweep_plot.h"
#include "testbench/replay/temp_files.h"

namespace hcaemu::replay {
namespace {

using testing::exists;
using testing::expect_png_and_svg;
using testing::read_file;
using testing::TempDir;
using testing::write_file;

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// Runs a command line through /bin/sh (as GNU parallel does); its exit status.
int run_shell(const std::string& shell, const std::string& line, const std::string& output = "/dev/null") {
  const int fd = open(output.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  SpawnSpec spec;
  spec.argv = {shell, "-c", line};
  spec.stdout_fd = fd;
  std::string error;
  const pid_t pid = spawn_process(spec, &error);
  close(fd);
  EXPECT_GT(pid, 0) << error;
  return pid > 0 ? wait_process(pid) : -1;
}

// ---- points ----

std::vector<SweepKey> keys_of(const std::vector<std::string>& args) {
  std::vector<SweepKey> keys;
  for (const std::string& arg : args) {
    SweepKey key;
    std::string error;
    EXPECT_TRUE(parse_sweep_key(arg, &key, &error)) << error;
    keys.push_back(key);
  }
  return keys;
}

TEST(SweepPoints, TheFirstKeyIsOutermost) {
  std::vector<SweepPoint> points;
  std::string error;
  ASSERT_TRUE(sweep_points(keys_of({"a=1,2", "b.c=x,y,z"}), &points, &error)) << error;
  const std::vector<SweepPoint> expected = {{{"a", "1"}, {"b.c", "x"}}, {{"a", "1"}, {"b.c", "y"}},
                                            {{"a", "1"}, {"b.c", "z"}}, {{"a", "2"}, {"b.c", "x"}},
                                            {{"a", "2"}, {"b.c", "y"}}, {{"a", "2"}, {"b.c", "z"}}};
  EXPECT_EQ(points, expected);
}

TEST(SweepPoints, TheCapIsAllowedAndOneRowMoreIsNot) {
  std::string hundred = "a=";
  for (int i = 0; i < 100; ++i) hundred += (i ? "," : "") + std::to_string(i);
  const std::string hundred_and_one = "b=" + hundred.substr(2) + ",100";
  std::vector<SweepPoint> points;
  std::string error;
  EXPECT_TRUE(sweep_points(keys_of({hundred, "b" + hundred.substr(1)}), &points, &error)) << error;
  EXPECT_EQ(points.size(), kMaxSweepPoints);
  EXPECT_FALSE(sweep_points(keys_of({hundred, hundred_and_one}), &points, &error));
  EXPECT_EQ(error, "the sweep has more than 10000 points");
}

TEST(SweepPoints, AKeyGivenTwiceOrNoKeyIsRefused) {
  std::vector<SweepPoint> points;
  std::string error;
  EXPECT_FALSE(sweep_points(keys_of({"a=1", "a=2"}), &points, &error));
  EXPECT_EQ(error, "--set a given twice (list its values in one --set)");
  EXPECT_FALSE(sweep_points({}, &points, &error));
}

TEST(SweepKey, ReadsTheNameAndTheValuesInOrder) {
  SweepKey key;
  std::string error;
  ASSERT_TRUE(parse_sweep_key("ecn.kmin_bytes=12500,4e3,x=y", &key, &error)) << error;
  EXPECT_EQ(key.name, "ecn.kmin_bytes");
  EXPECT_EQ(key.values, (std::vector<std::string>{"12500", "4e3", "x=y"}));
}

TEST(SweepKey, RefusesEveryMalformedArgumentWithItsReason) {
  const std::pair<const char*, const char*> cases[] = {
      {"=1", "needs KEY=V1,V2"},    {"a b=1", "needs KEY=V1,V2"},     {"a", "needs KEY=V1,V2"},
      {"a/b=1", "needs KEY=V1,V2"}, {"a=", "an empty value"},         {"a=1,,2", "an empty value"},
      {"a=1,", "an empty value"},   {"a=1,2,1", "the value 1 twice"},
  };
  for (const auto& [arg, reason] : cases) {
    SweepKey key;
    std::string error;
    EXPECT_FALSE(parse_sweep_key(arg, &key, &error)) << arg;
    EXPECT_TRUE(contains(error, reason)) << arg << ": " << error;
    EXPECT_TRUE(contains(error, std::string("--set ") + arg)) << error;
  }
}

TEST(SweepPoints, DirectoriesAreNumberedFromOneAndWidenPast9999) {
  EXPECT_EQ(point_name(0, 6), "p0001");
  EXPECT_EQ(point_name(9998, 9999), "p9999");
  EXPECT_EQ(point_name(0, 10000), "p00001");
  EXPECT_EQ(point_name(9999, 10000), "p10000");
}

TEST(SweepPoints, APointsCommandPassesTheRunOptionsOnAndIsQuiet) {
  EXPECT_EQ(point_command("/bin/hcareplay", "in.json", "out/p0002", {"--timing", "asap", "--dcqcn=paper"},
                          {{"a", "1"}, {"b", "x"}}),
            (std::vector<std::string>{"/bin/hcareplay", "run", "in.json", "--out", "out/p0002", "--timing", "asap",
                                      "--dcqcn=paper", "--set", "a=1", "--set", "b=x", "--quiet"}));
}

// ---- shell quoting and --emit-jobs ----

TEST(ShellQuote, QuotesOnlyWhatTheShellWouldChange) {
  EXPECT_EQ(shell_quote("run/p0001"), "run/p0001");
  EXPECT_EQ(shell_quote("ecn.kmin_bytes=12500"), "ecn.kmin_bytes=12500");
  EXPECT_EQ(shell_quote("a b"), "'a b'");
  EXPECT_EQ(shell_quote("it's"), "'it'\\''s'");
  EXPECT_EQ(shell_quote(""), "''");
}

TEST(ShellQuote, EveryWordComesBackFromTheShellAsItWas) {
  TempDir dir;
  const std::vector<std::string> words = {"a b", "it's", "$HOME", "", "x\"y", "back\\slash", "*", "tab\there", "; ls"};
  std::string line = "printf '%s\\n'";
  for (const std::string& word : words) line += " " + shell_quote(word);
  ASSERT_EQ(run_shell("/bin/sh", line, dir / "out.txt"), 0);
  EXPECT_EQ(lines_of(read_file(dir / "out.txt")), words);
}

// A stand-in for `hcareplay run`: writes a run's settings.csv, summary.csv and totals.csv from
// its --set values into --out, notes how many stand-ins run at once (a file each in running/
// next to it while it runs), fails with status 3 for k=3, and keeps its arguments in args.txt.
constexpr const char* kFakeHcareplay = R"(#!/bin/sh
args=$(mktemp) || exit 1
printf '%s\n' "$@" > "$args"
out= ; sets=
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out=$2; shift 2 ;;
    --set) sets="$sets $2"; shift 2 ;;
    *) shift ;;
  esac
done
mkdir -p "$out" && mv "$args" "$out/args.txt"
running="$(dirname "$0")/running"
mkdir -p "$running"
touch "$running/$$"
ls "$running" | wc -l | tr -d ' ' > "$out/concurrent.txt"
sleep 0.3
rm -f "$running/$$"
case "$sets " in *" k=3 "*) echo "bad point" >&2; exit 3 ;; esac
{ echo key,value; for s in $sets; do echo "${s%%=*},${s#*=}"; done; } > "$out/settings.csv"
k=$(echo "$sets " | sed -n 's/.* k=\([^ ]*\) .*/\1/p')
printf 'opcode,size,count,fct_p50_ns,fct_p99_ns,fct_p999_ns,slowdown_p50,slowdown_p99,slowdown_p999\n' > "$out/summary.csv"
printf 'all,all,1,%s.000,%s.000,%s.000,1.000,1.000,1.000\n' "$k" "$k" "$k" >> "$out/summary.csv"
printf 'key,value\npackets,%s\n' "$k" > "$out/totals.csv"
echo "ran $k"
)";

std::string install_fake_hcareplay(const std::string& dir) {
  std::string path = dir + "/hcareplay";
  write_file(path, kFakeHcareplay);
  chmod(path.c_str(), 0755);
  return path;
}

TEST(EmitJobs, WritesOneQuotedCommandPerPointAndRunsNothing) {
  TempDir dir;
  const std::string out = dir / "sweep 1";
  const std::string jobs = dir / "jobs's.txt";
  const std::string fake = install_fake_hcareplay(dir / "bin dir");
  EXPECT_EQ(
      sweep_command({"in put.json", "--out", out, "--set", "k=1,2", "--emit-jobs", jobs, "--timing", "asap"}, fake), 0);
  EXPECT_EQ(read_file(out + "/points.csv"), "point,k\np0001,1\np0002,2\n");
  const std::vector<std::string> lines = lines_of(read_file(jobs));
  ASSERT_EQ(lines.size(), 2u);
  const std::string cwd = std::filesystem::current_path().string();
  EXPECT_EQ(lines[1], "cd " + shell_quote(cwd) + " && " + shell_quote(fake) + " run 'in put.json' --out " +
                          shell_quote(out + "/p0002") + " --timing asap --set k=2 --quiet >" +
                          shell_quote(out + "/p0002/log.txt") + " 2>&1");
  EXPECT_TRUE(std::filesystem::is_empty(out + "/p0001")) << "nothing ran";
  const std::string slurm = read_file(jobs + ".slurm.sh");
  EXPECT_TRUE(contains(slurm, "\n#SBATCH --array=1-2\n"));
  EXPECT_TRUE(contains(slurm, "\njobs=" + shell_quote(jobs) + "\n"));
  EXPECT_TRUE(contains(slurm, "${SLURM_ARRAY_TASK_ID"));
}

TEST(EmitJobs, ALineRunsThroughTheShellAndTheSlurmScriptRunsItsTasksLine) {
  TempDir dir;
  const std::string out = dir / "it's a sweep";
  const std::string jobs = dir / "jobs.txt";
  const std::string fake = install_fake_hcareplay(dir / "bin dir");
  ASSERT_EQ(sweep_command({"in.json", "--out", out, "--set", "k=1,2", "--emit-jobs", jobs}, fake), 0);
  ASSERT_EQ(run_shell("/bin/sh", lines_of(read_file(jobs))[0]), 0);
  EXPECT_EQ(read_file(out + "/p0001/log.txt"), "ran 1\n");
  EXPECT_EQ(read_file(out + "/p0001/settings.csv"), "key,value\nk,1\n");
  setenv("SLURM_ARRAY_TASK_ID", "2", 1);
  EXPECT_EQ(run_shell("/bin/bash", "exec bash " + shell_quote(jobs + ".slurm.sh")), 0);
  unsetenv("SLURM_ARRAY_TASK_ID");
  EXPECT_EQ(read_file(out + "/p0002/log.txt"), "ran 2\n");
  EXPECT_EQ(collect_command({out}), 0);
  EXPECT_EQ(lines_of(read_file(out + "/results.csv")).size(), 3u);
}

// ---- running here ----

TEST(SweepCommand, UsageErrorsAreStatus2) {
  TempDir dir;
  const std::string out = dir / "s";
  EXPECT_EQ(sweep_command({"--out", out, "--set", "k=1", "in.json"}, "/bin/false"), 2) << "INPUT first";
  EXPECT_EQ(sweep_command({"in.json", "--set", "k=1"}, "/bin/false"), 2) << "no --out";
  EXPECT_EQ(sweep_command({"in.json", "--out", out}, "/bin/false"), 2) << "no --set";
  EXPECT_EQ(sweep_command({"in.json", "--out", out, "--set", "k=1", "-j", "0"}, "/bin/false"), 2);
  EXPECT_EQ(sweep_command({"in.json", "--out", out, "--set", "k=1", "--set", "k=2"}, "/bin/false"), 2);
  EXPECT_EQ(sweep_command({"in.json", "--out", out, "--set", "k=1", "--set"}, "/bin/false"), 2);
  EXPECT_FALSE(exists(out)) << "nothing written on a usage error";
}

TEST(SweepCommand, RefusesAnOutDirectoryThatIsNotEmpty) {
  TempDir dir;
  write_file(dir / "s/p0001/summary.csv", "from an earlier sweep\n");
  EXPECT_EQ(sweep_command({"in.json", "--out", dir / "s", "--set", "k=1"}, "/bin/false"), 1);
}

TEST(LocalSweep, RunsAtMostJAtOnceRecordsTheFailureAndCollectsTheOthers) {
  TempDir dir;
  const std::string out = dir / "sweep";
  const std::string fake = install_fake_hcareplay(dir / "bin");
  EXPECT_EQ(sweep_command({"in.json", "--out", out, "--set", "k=1,2,3,4,5,6", "-j", "2", "--timing", "asap", "--quiet"},
                          fake),
            1)
      << "a point failed";
  int most = 0;
  for (int p = 1; p <= 6; ++p)
    most = std::max(most, std::stoi(read_file(out + "/" + point_name(p - 1, 6) + "/concurrent.txt")));
  EXPECT_EQ(most, 2) << "two points at a time, never more";
  const std::vector<std::string> status = lines_of(read_file(out + "/status.csv"));
  ASSERT_EQ(status.size(), 7u);
  EXPECT_EQ(status[0], "point,exit_status,seconds");
  for (int p = 1; p <= 6; ++p)
    EXPECT_EQ(status[p].rfind(point_name(p - 1, 6) + (p == 3 ? ",3," : ",0,"), 0), 0u) << status[p];
  EXPECT_EQ(read_file(out + "/p0003/log.txt"), "bad point\n");
  EXPECT_EQ(read_file(out + "/p0001/log.txt"), "ran 1\n");
  EXPECT_EQ(read_file(out + "/p0001/args.txt"),
            "run\nin.json\n--out\n" + out + "/p0001\n--timing\nasap\n--set\nk=1\n--quiet\n");
  const std::vector<std::string> results = lines_of(read_file(out + "/results.csv"));
  ASSERT_EQ(results.size(), 6u);
  EXPECT_EQ(results[0],
            "point,k,opcode,size,count,fct_p50_ns,fct_p99_ns,fct_p999_ns,slowdown_p50,slowdown_p99,"
            "slowdown_p999,packets");
  EXPECT_EQ(results[3], "p0004,4,all,all,1,4.000,4.000,4.000,1.000,1.000,1.000,4") << "p0003 is left out";
}

TEST(PointRunner, EachPointsOutcomeIsRecordedAndAFailureDoesNotStopTheOthers) {
  TempDir dir;
  const std::vector<PointJob> jobs = {
      {"p0001", {"/bin/sh", "-c", "echo out; echo err >&2"}, dir / "1.txt"},
      {"p0002", {dir / "no such program"}, dir / "2.txt"},
      {"p0003", {"/bin/sh", "-c", "exit 5"}, dir / "3.txt"},
      {"p0004", {"/bin/sh", "-c", "kill -9 $$"}, dir / "4.txt"},
  };
  std::ostringstream progress;
  const std::vector<PointOutcome> outcomes = run_points(jobs, 3, &progress);
  ASSERT_EQ(outcomes.size(), 4u);
  EXPECT_EQ(outcomes[0].exit_status, 0);
  EXPECT_EQ(outcomes[1].exit_status, 127);
  EXPECT_TRUE(contains(outcomes[1].error, "no such program")) << outcomes[1].error;
  EXPECT_EQ(outcomes[2].exit_status, 5);
  EXPECT_EQ(outcomes[3].exit_status, 128 + 9);
  EXPECT_EQ(read_file(dir / "1.txt"), "out\nerr\n");
  const std::vector<std::string> lines = lines_of(progress.str());
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_TRUE(contains(lines[3], "4/4 points, 3 failed")) << lines[3];
  EXPECT_TRUE(contains(progress.str(), "p0003 failed (exit 5")) << progress.str();
  EXPECT_TRUE(contains(progress.str(), "s to go")) << progress.str();
}

// ---- collect ----

constexpr const char* kSummaryHeader =
    "opcode,size,count,fct_p50_ns,fct_p99_ns,fct_p999_ns,slowdown_p50,slowdown_p99,slowdown_p999\n";

void write_point_fixtures(const TempDir& dir) {
  write_file(dir / "p0001/settings.csv", "key,value\nk,1\nm,\"a,b\"\n");
  write_file(dir / "p0001/summary.csv", std::string(kSummaryHeader) +
                                            "all,all,2,1.000,2.000,3.000,1.500,2.500,3.500\n"
                                            "write,64KiB,2,1.000,2.000,3.000,1.500,2.500,3.500\n");
  write_file(dir / "p0001/totals.csv", "key,value\npackets,10\ndrops,0\n");
  // No totals.csv.
  write_file(dir / "p0002/settings.csv", "key,value\nk,2\n");
  write_file(dir / "p0002/summary.csv", kSummaryHeader);
  // A summary line with a field missing.
  write_file(dir / "p0003/settings.csv", "key,value\nk,3\n");
  write_file(dir / "p0003/summary.csv", std::string(kSummaryHeader) + "all,all,1,1,1,1,1,1,1\nall,all,1,1,1,1,1,1\n");
  write_file(dir / "p0003/totals.csv", "key,value\n");
  // Nothing completed (an empty summary), a totals key the others lack.
  write_file(dir / "p0004/settings.csv", "key,value\nk,4\n");
  write_file(dir / "p0004/summary.csv", kSummaryHeader);
  write_file(dir / "p0004/totals.csv", "key,value\ndrops,1\necn_marks,5\n");
  // Columns in another order and one this reader does not know; numbered after p0004.
  write_file(dir / "p0010/settings.csv", "key,value\nk,10\nm,c\n");
  write_file(dir / "p0010/summary.csv",
             "size,opcode,extra,count,fct_p50_ns,fct_p99_ns,fct_p999_ns,slowdown_p50,"
             "slowdown_p99,slowdown_p999\nall,all,?,1,5.000,6.000,7.000,,,\n");
  write_file(dir / "p0010/totals.csv", "key,value\npackets,100\n");
  // Not points.
  write_file(dir / "plots/x.txt", "");
  write_file(dir / "p12x/summary.csv", "");
  write_file(dir / "p0020", "a file");
}

TEST(Collect, OneRowPerPointAndSummaryRowTheUnreadablePointsLeftOut) {
  TempDir dir;
  write_point_fixtures(dir);
  Collected collected;
  std::string error;
  ASSERT_TRUE(collect_sweep(dir.path(), &collected, &error)) << error;
  EXPECT_EQ(read_file(dir / "results.csv"),
            "point,k,m,opcode,size,count,fct_p50_ns,fct_p99_ns,fct_p999_ns,slowdown_p50,slowdown_p99,slowdown_p999,"
            "packets,drops,ecn_marks\n"
            "p0001,1,\"a,b\",all,all,2,1.000,2.000,3.000,1.500,2.500,3.500,10,0,\n"
            "p0001,1,\"a,b\",write,64KiB,2,1.000,2.000,3.000,1.500,2.500,3.500,10,0,\n"
            "p0004,4,,,,,,,,,,,,1,5\n"
            "p0010,10,c,all,all,1,5.000,6.000,7.000,,,,100,,\n");
  EXPECT_EQ(collected.points, 3u);
  EXPECT_EQ(collected.rows, 4u);
  EXPECT_EQ(collected.skipped,
            (std::vector<std::string>{"p0002: " + (dir / "p0002/totals.csv: missing"),
                                      "p0003: " + (dir / "p0003/summary.csv:3: 8 fields, the header has 9 "
                                                         "(opcode,size,count,fct_p50_ns,fct_p99_ns,fct_p999_ns,"
                                                         "slowdown_p50,slowdown_p99,slowdown_p999)")}));
}

TEST(Collect, FailsOnlyWhenNoPointCanBeRead) {
  TempDir empty, unreadable;
  EXPECT_EQ(collect_command({empty.path()}), 1);
  write_file(unreadable / "p0001/settings.csv", "key,value\n");
  EXPECT_EQ(collect_command({unreadable.path()}), 1);
  EXPECT_FALSE(exists(unreadable / "results.csv"));
  EXPECT_EQ(collect_command({}), 2);
}

// ---- plot of a sweep ----

// Keys a (numeric, 1 and 100) and b (x, y); an "all" row and two size rows per point.
void write_results(const TempDir& dir) {
  std::string text = "point,a,b,opcode,size,count,fct_p99_ns,goodput_gbps\n";
  int point = 0;
  for (const char* a : {"1", "100"}) {
    for (const char* b : {"x", "y"}) {
      const std::string lead = point_name(size_t(point++), 4) + "," + a + "," + b + ",";
      const int base = std::stoi(a) + (b[0] == 'y' ? 50 : 0);
      text += lead + "all,all,3," + std::to_string(base + 100) + ".000,10\n";
      text += lead + "write,4KiB,2," + std::to_string(base + 90) + ".000,10\n";
      text += lead + "write,64KiB,1," + std::to_string(base + 100) + ".000,10\n";
    }
  }
  write_file(dir / "results.csv", text);
}

TEST(SweepPlot, TheAllRowsAgainstANumericKeyOneLinePerValueOfTheOther) {
  TempDir dir;
  write_results(dir);
  std::string stem, error;
  ASSERT_TRUE(write_sweep_plot({dir.path(), "a", "fct_p99_ns", "", "", ""}, &stem, &error)) << error;
  EXPECT_EQ(stem, "plot-fct_p99_ns-vs-a");
  EXPECT_EQ(read_file(dir / "plot-fct_p99_ns-vs-a.dat"), "# b=x\n1 101\n100 200\n\n\n# b=y\n1 151\n100 250\n\n\n");
  const std::string gp = read_file(dir / "plot-fct_p99_ns-vs-a.gp");
  EXPECT_TRUE(contains(gp, "set logscale x")) << "1 to 100";
  expect_png_and_svg(gp, "plot-fct_p99_ns-vs-a");
  EXPECT_TRUE(contains(gp,
                       "plot 'plot-fct_p99_ns-vs-a.dat' index 0 using 1:2 with linespoints lw 2 pt 7 title 'b=x', \\\n"
                       "     'plot-fct_p99_ns-vs-a.dat' index 1 using 1:2 with linespoints lw 2 pt 7 title 'b=y'\n"));
}

TEST(SweepPlot, ACategoricalKeyBySizeForOneOpcode) {
  TempDir dir;
  write_results(dir);
  std::string stem, error;
  ASSERT_TRUE(write_sweep_plot({dir.path(), "b", "fct_p99_ns", "size", "write", ""}, &stem, &error)) << error;
  EXPECT_EQ(stem, "plot-fct_p99_ns-vs-b-by-size-opcode-write");
  EXPECT_EQ(read_file(dir / (stem + ".dat")),
            "# 4KiB, a=1\n0 91\n1 141\n\n\n# 64KiB, a=1\n0 101\n1 151\n\n\n"
            "# 4KiB, a=100\n0 190\n1 240\n\n\n# 64KiB, a=100\n0 200\n1 250\n\n\n");
  const std::string gp = read_file(dir / (stem + ".gp"));
  EXPECT_TRUE(contains(gp, "set xtics ('x' 0, 'y' 1)\n"));
  EXPECT_FALSE(contains(gp, "logscale"));
}

TEST(SweepPlot, UnknownKeysAndMetricsListTheKnownOnes) {
  TempDir dir;
  write_results(dir);
  std::string stem, error;
  EXPECT_FALSE(write_sweep_plot({dir.path(), "c", "count", "", "", ""}, &stem, &error));
  EXPECT_EQ(error, dir / "results.csv: unknown --x c (the sweep's keys: a, b)");
  EXPECT_FALSE(write_sweep_plot({dir.path(), "a", "fct", "", "", ""}, &stem, &error));
  EXPECT_EQ(error, dir / "results.csv: unknown --y fct (metrics: count, fct_p99_ns, goodput_gbps)");
  EXPECT_FALSE(write_sweep_plot({dir.path(), "a", "count", "", "read", ""}, &stem, &error));
  EXPECT_EQ(error,
            dir / "results.csv: no row with a value of count matches (opcodes: all, write; sizes: 4KiB, 64KiB, all)");
}

TEST(SweepPlot, WithoutResultsTheErrorSaysWhatWritesThem) {
  TempDir dir;
  std::string stem, error;
  EXPECT_FALSE(write_sweep_plot({dir.path(), "a", "count", "", "", ""}, &stem, &error));
  EXPECT_EQ(error, dir / "results.csv: missing (hcareplay collect " + dir.path() + " writes it)");
}

TEST(SweepPlot, UsageErrorsAreStatus2) {
  EXPECT_EQ(plot_command({}), 2);
  EXPECT_EQ(plot_command({"dir", "--x", "a"}), 2) << "--y missing";
  EXPECT_EQ(plot_command({"dir", "--x", "a", "--y", "count", "--by", "qp"}), 2);
  EXPECT_EQ(plot_command({"dir", "--by", "size"}), 2) << "--by without --x/--y";
}

TEST(SweepPlot, GnuplotDrawsIt) {
  if (find_program("gnuplot").empty()) GTEST_SKIP() << "gnuplot is not installed";
  TempDir dir;
  write_results(dir);
  ASSERT_EQ(plot_command({dir.path(), "--x", "b", "--y", "goodput_gbps", "--by", "opcode"}), 0);
  EXPECT_GT(read_file(dir / "plot-goodput_gbps-vs-b-by-opcode.png").size(), 1000u);
  EXPECT_EQ(read_file(dir / "plot-goodput_gbps-vs-b-by-opcode.svg").rfind("<?xml", 0), 0u);
}

}  // namespace
}  // namespace hcaemu::replay
