#include "replay/plots.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <functional>
#include <iterator>
#include <map>
#include <numeric>
#include <optional>

#include "replay/csv_table.h"
#include "replay/gnuplot.h"
#include "replay/statistics.h"

namespace hcaemu::replay {

namespace {

constexpr size_t kCdfPoints = 1000;  // per opcode: a smooth curve, a small file
// links.csv's queue_bytes counts the frame on the wire: a link "queues" when more than the
// largest RoCEv2 frame waits (MTU 4096 plus Ethernet, VLAN, IPv6, UDP, BTH, RETH, ICRC, FCS).
constexpr double kOneFrameBytes = 4200;
constexpr size_t kMostKeyEntries = 16;          // more series than this: no key, it would hide the plot
constexpr uint64_t kDefaultBinPs = 10'000'000;  // hcareplay run's --bin-us default

// A colour per series: sixteen distinct ones (gnuplot's own line types repeat after eight, so two
// series of one plot would share a colour), then again.
std::string series_color(size_t series) {
  static constexpr const char* kColors[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b",
                                            "#e377c2", "#7f7f7f", "#bcbd22", "#17becf", "#000080", "#808000",
                                            "#800000", "#008080", "#ff00ff", "#000000"};
  return std::string(" lc rgb '") + kColors[series % std::size(kColors)] + "'";
}

// What every plot over model time sets; without a key when there are too many series for one.
std::vector<std::string> time_plot_settings(const std::string& title, const std::string& ylabel, size_t series,
                                            const std::string& what) {
  std::vector<std::string> settings = {"set title '" + title + "'", "set xlabel 'model time (us)'",
                                       "set ylabel '" + ylabel + "'", "set yrange [0:*]", "set key below", "set grid"};
  if (series > kMostKeyEntries) settings.push_back("set key off  # too many " + what + " for a key");
  return settings;
}

struct PlotFiles {
  GnuplotScript script;
  std::vector<std::pair<std::string, std::string>> data;  // file name, contents
};

// What a plot builder gives: the files, or why the plot is skipped (a note), or an error.
struct Built {
  std::optional<PlotFiles> files;
  std::string note, error;
};

Built skipped(std::string note) {
  Built b;
  b.note = std::move(note);
  return b;
}
Built failed(std::string error) {
  Built b;
  b.error = std::move(error);
  return b;
}
Built drawn(PlotFiles files) {
  Built b;
  b.files = std::move(files);
  return b;
}

// The input of a plot: the table, or the Built that skips (file missing) or fails (malformed).
std::optional<CsvTable> input(const std::string& dir, const std::string& file, const std::vector<std::string>& required,
                              const std::string& plot, Built* otherwise) {
  CsvRead read = read_csv(dir + "/" + file, required);
  if (read.table) return std::move(read.table);
  *otherwise = read.missing ? skipped(plot + ": skipped, no " + file) : failed(read.error);
  return std::nullopt;
}

// Orders names with numbers in them as people do: qp 2 before qp 10, host2 before host10.
bool natural_less(const std::string& a, const std::string& b) {
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (std::isdigit(static_cast<unsigned char>(a[i])) && std::isdigit(static_cast<unsigned char>(b[j]))) {
      const size_t i0 = i, j0 = j;
      while (i < a.size() && std::isdigit(static_cast<unsigned char>(a[i]))) ++i;
      while (j < b.size() && std::isdigit(static_cast<unsigned char>(b[j]))) ++j;
      const std::string x = a.substr(i0, i - i0), y = b.substr(j0, j - j0);
      const std::string xs = x.substr(std::min(x.find_first_not_of('0'), x.size()));
      const std::string ys = y.substr(std::min(y.find_first_not_of('0'), y.size()));
      if (xs.size() != ys.size()) return xs.size() < ys.size();
      if (xs != ys) return xs < ys;
      continue;
    }
    if (a[i] != b[j]) return a[i] < b[j];
    ++i, ++j;
  }
  return a.size() - i < b.size() - j || (a.size() - i == b.size() - j && a < b);
}
struct NaturalLess {
  bool operator()(const std::string& a, const std::string& b) const { return natural_less(a, b); }
};

std::string count_of(size_t n, const char* what) { return std::to_string(n) + " " + what; }

// ---- fct_cdf ---------------------------------------------------------------------------------

// opcode -> FCTs in us of the messages that completed without error.
bool completed_fcts(const CsvTable& t, std::map<std::string, std::vector<double>, NaturalLess>* out,
                    std::string* error) {
  const size_t opcode = *t.column("opcode"), fct = *t.column("fct_ns");
  const std::optional<size_t> status = t.column("status");
  for (size_t r = 0; r < t.rows.size(); ++r) {
    if (status && t.rows[r][*status] != "ok") continue;
    std::optional<double> ns;
    if (!number_cell(t, r, fct, &ns, error)) return false;
    if (ns && *ns > 0) (*out)[t.rows[r][opcode]].push_back(*ns / 1000.0);
  }
  return true;
}

// "x cdf" lines of the sorted samples: every sample, or kCdfPoints nearest ranks (the last is the
// largest sample, so the curve reaches 1).
std::string cdf_lines(std::vector<double> samples) {
  std::sort(samples.begin(), samples.end());
  const size_t n = samples.size(), points = std::min(n, kCdfPoints);
  std::string out;
  for (size_t k = 1; k <= points; ++k) {
    const size_t rank = (k * n + points - 1) / points;
    out += gnuplot_number(samples[rank - 1]) + " " + gnuplot_number(double(rank) / double(n)) + "\n";
  }
  return out;
}

Built fct_cdf(const std::string& dir) {
  Built otherwise;
  const auto table = input(dir, "messages.csv", {"opcode", "fct_ns"}, "fct_cdf", &otherwise);
  if (!table) return otherwise;
  std::map<std::string, std::vector<double>, NaturalLess> fcts;
  std::string error;
  if (!completed_fcts(*table, &fcts, &error)) return failed(error);
  if (fcts.empty()) return skipped("fct_cdf: skipped, no completed message in messages.csv");
  PlotFiles f;
  f.script.name = "fct_cdf";
  f.script.comments = {"The CDF of the flow completion times (post -> completion seen) per opcode, from",
                       "../messages.csv, messages with status ok; at most 1000 points (nearest ranks) per opcode."};
  f.script.settings = {"set title 'flow completion time'",
                       "set logscale x",
                       "set xlabel 'FCT (us)'",
                       "set ylabel 'fraction of messages'",
                       "set yrange [0:1.02]",
                       "set key bottom right",
                       "set grid"};
  std::string data;
  size_t index = 0;
  for (const auto& [opcode, us] : fcts) {
    data += "# " + opcode + ": " + count_of(us.size(), "messages") + "\n" + cdf_lines(us) + "\n\n";
    f.script.plots.push_back("'fct_cdf.dat' index " + std::to_string(index++) + " using 1:2 with steps lw 2 title " +
                             gnuplot_string(opcode + " (" + std::to_string(us.size()) + ")"));
  }
  f.data = {{"fct_cdf.dat", data}};
  return drawn(std::move(f));
}

// ---- slowdown_by_size ------------------------------------------------------------------------

struct SlowdownPoint {
  double p50 = 0, p99 = 0;
};
// opcode -> size bucket -> slowdown percentiles.
using SlowdownTable = std::map<std::string, std::map<std::string, SlowdownPoint>, NaturalLess>;

// The bytes a bucket name ("64B", "4KiB", "1MiB") stands for; nullopt for another name.
std::optional<double> bucket_bytes(const std::string& name) {
  static const std::pair<const char*, double> kUnits[] = {
      {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"B", 1}};
  for (const auto& [unit, scale] : kUnits) {
    const std::string u = unit;
    if (name.size() > u.size() && name.compare(name.size() - u.size(), u.size(), u) == 0) {
      const auto n = parse_number(std::string_view(name).substr(0, name.size() - u.size()));
      return n ? std::optional<double>(*n * scale) : std::nullopt;
    }
  }
  return std::nullopt;
}
bool bucket_less(const std::string& a, const std::string& b) {
  const auto x = bucket_bytes(a), y = bucket_bytes(b);
  if (x && y && *x != *y) return *x < *y;
  if (x.has_value() != y.has_value()) return x.has_value();  // unknown names after the known ones
  return a < b;
}

bool slowdowns_from_summary(const CsvTable& t, SlowdownTable* out, std::string* error) {
  const size_t opcode = *t.column("opcode"), size = *t.column("size");
  const size_t p50 = *t.column("slowdown_p50"), p99 = *t.column("slowdown_p99");
  for (size_t r = 0; r < t.rows.size(); ++r) {
    const auto& row = t.rows[r];
    if (row[opcode] == "all" || row[size] == "all") continue;
    std::optional<double> a, b;
    if (!number_cell(t, r, p50, &a, error) || !number_cell(t, r, p99, &b, error)) return false;
    if (a && b) (*out)[row[opcode]][row[size]] = {*a, *b};
  }
  return true;
}

double nearest_rank_of(const std::vector<double>& sorted, double p) {
  const size_t rank = size_t(std::max(1.0, std::ceil(p / 100.0 * double(sorted.size()))));
  return sorted[std::min(rank, sorted.size()) - 1];
}

// The same percentiles as the run's summary.csv (nearest rank), from the messages themselves.
bool slowdowns_from_messages(const CsvTable& t, SlowdownTable* out, std::string* error) {
  const size_t opcode = *t.column("opcode"), bytes = *t.column("bytes"), slowdown = *t.column("slowdown");
  const std::optional<size_t> status = t.column("status");
  std::map<std::pair<std::string, std::string>, std::vector<double>> samples;
  for (size_t r = 0; r < t.rows.size(); ++r) {
    if (status && t.rows[r][*status] != "ok") continue;
    std::optional<double> size, value;
    if (!number_cell(t, r, bytes, &size, error) || !number_cell(t, r, slowdown, &value, error)) return false;
    if (!size || !value || *size < 0) continue;
    std::string bucket = size_bucket_name(size_bucket(uint64_t(*size)));
    std::erase(bucket, ' ');  // as summary.csv names it
    samples[{t.rows[r][opcode], bucket}].push_back(*value);
  }
  for (auto& [key, values] : samples) {
    std::sort(values.begin(), values.end());
    (*out)[key.first][key.second] = {nearest_rank_of(values, 50), nearest_rank_of(values, 99)};
  }
  return true;
}

// summary.csv's slowdowns, or the messages' when the run has no summary.csv.
Built slowdown_table(const std::string& dir, SlowdownTable* table, std::string* source) {
  Built otherwise;
  const std::string plot = "slowdown_by_size";
  std::string error;
  if (auto summary = input(dir, "summary.csv", {"opcode", "size", "slowdown_p50", "slowdown_p99"}, plot, &otherwise)) {
    *source = "../summary.csv";
    return slowdowns_from_summary(*summary, table, &error) ? Built{} : failed(error);
  }
  if (!otherwise.error.empty()) return otherwise;
  auto messages = input(dir, "messages.csv", {"opcode", "bytes", "slowdown"}, plot, &otherwise);
  if (!messages)
    return otherwise.error.empty() ? skipped(plot + ": skipped, no summary.csv or messages.csv") : otherwise;
  *source = "../messages.csv (no summary.csv)";
  return slowdowns_from_messages(*messages, table, &error) ? Built{} : failed(error);
}

Built slowdown_by_size(const std::string& dir) {
  SlowdownTable table;
  std::string source;
  if (Built why = slowdown_table(dir, &table, &source); !why.note.empty() || !why.error.empty()) return why;
  if (table.empty()) return skipped("slowdown_by_size: skipped, no slowdown in the run (no ideal FCTs: --no-ideal?)");
  std::vector<std::string> buckets;
  for (const auto& [opcode, sizes] : table)
    for (const auto& [size, point] : sizes) buckets.push_back(size);
  std::sort(buckets.begin(), buckets.end(), bucket_less);
  buckets.erase(std::unique(buckets.begin(), buckets.end()), buckets.end());
  std::string xtics;
  for (size_t i = 0; i < buckets.size(); ++i)
    xtics += (i ? ", " : "") + gnuplot_string(buckets[i]) + " " + std::to_string(i);
  PlotFiles f;
  f.script.name = "slowdown_by_size";
  f.script.comments = {"p50 (solid) and p99 (dashed) slowdown (FCT / ideal FCT) per size bucket and opcode, from",
                       source + "; columns: bucket index, p50, p99."};
  f.script.settings = {"set title 'slowdown by message size'",
                       "set xlabel 'message size (bucket: up to)'",
                       "set ylabel 'slowdown (FCT / ideal FCT)'",
                       "set logscale y",
                       "set xtics (" + xtics + ")",
                       "set xrange [-0.5:" + std::to_string(buckets.size()) + "-0.5]",
                       "set key outside right",
                       "set grid"};
  std::string data;
  size_t index = 0;
  for (const auto& [opcode, sizes] : table) {
    data += "# " + opcode + "\n";
    for (size_t i = 0; i < buckets.size(); ++i)
      if (const auto p = sizes.find(buckets[i]); p != sizes.end() && p->second.p50 > 0 && p->second.p99 > 0)
        data += std::to_string(i) + " " + gnuplot_number(p->second.p50) + " " + gnuplot_number(p->second.p99) + "\n";
    data += "\n\n";
    const std::string common = "'slowdown_by_size.dat' index " + std::to_string(index) + " using 1:";
    const std::string color = series_color(index++);
    f.script.plots.push_back(common + "2 with linespoints lw 2 pt 7" + color + " title " +
                             gnuplot_string(opcode + " p50"));
    f.script.plots.push_back(common + "3 with linespoints lw 2 pt 6 dt 2" + color + " title " +
                             gnuplot_string(opcode + " p99"));
  }
  f.data = {{"slowdown_by_size.dat", data}};
  return drawn(std::move(f));
}

// ---- timelines: throughput and queue_depth ---------------------------------------------------

struct Sample {
  uint64_t ps = 0;  // the bin's start
  double value = 0;
  std::optional<double> rate;  // throughput: the DCQCN rate, when limited
};
using Series = std::map<std::string, std::vector<Sample>, NaturalLess>;

uint64_t to_ps(double ns) { return uint64_t(std::llround(ns * 1000.0)); }
std::string us(uint64_t ps) { return gnuplot_number(double(ps) / 1e6); }

// The bin width: every bin starts at a multiple of it, so the gcd of the starts is the width
// (or a multiple of it when very few bins happen to share a factor; none but bin 0: the default).
uint64_t bin_width(const Series& series) {
  uint64_t g = 0;
  for (const auto& [name, samples] : series)
    for (const Sample& s : samples) g = std::gcd(g, s.ps);
  return g != 0 ? g : kDefaultBinPs;
}

// Reads the rows of a timeline file into series by `name_column`, sorted by time.
bool timeline(const CsvTable& t, const std::string& name_column, const std::string& value_column, Series* out,
              std::string* error) {
  const size_t name = *t.column(name_column), start = *t.column("bin_start_ns"), value = *t.column(value_column);
  const std::optional<size_t> rate = t.column("rate_gbps");
  for (size_t r = 0; r < t.rows.size(); ++r) {
    std::optional<double> ns, v, limit;
    if (!number_cell(t, r, start, &ns, error) || !number_cell(t, r, value, &v, error)) return false;
    if (rate && !number_cell(t, r, *rate, &limit, error)) return false;
    if (!ns || *ns < 0) {
      *error = t.where(r) + ": bin_start_ns is empty or negative";
      return false;
    }
    (*out)[t.rows[r][name]].push_back({to_ps(*ns), v.value_or(0), limit});
  }
  for (auto& [key, samples] : *out)
    std::stable_sort(samples.begin(), samples.end(), [](const Sample& a, const Sample& b) { return a.ps < b.ps; });
  return true;
}

// "t_us gbps rate" per bin; a bin missing from qps.csv completed nothing, so after each run of
// bins the line falls to 0 until the next, and the rate holds (the file carries it too).
std::string throughput_lines(const std::vector<Sample>& samples, uint64_t bin) {
  std::string out;
  const auto rate = [](const Sample& s) { return s.rate ? gnuplot_number(*s.rate) : std::string("NaN"); };
  for (size_t i = 0; i < samples.size(); ++i) {
    const Sample& s = samples[i];
    out += us(s.ps) + " " + gnuplot_number(s.value) + " " + rate(s) + "\n";
    if (i + 1 == samples.size() || samples[i + 1].ps > s.ps + bin) out += us(s.ps + bin) + " 0 " + rate(s) + "\n";
  }
  return out;
}

Built throughput(const std::string& dir) {
  Built otherwise;
  const auto table = input(dir, "qps.csv", {"qp", "bin_start_ns", "gbps"}, "throughput", &otherwise);
  if (!table) return otherwise;
  Series qps;
  std::string error;
  if (!timeline(*table, "qp", "gbps", &qps, &error)) return failed(error);
  if (qps.empty()) return skipped("throughput: skipped, qps.csv has no rows");
  const uint64_t bin = bin_width(qps);
  PlotFiles f;
  f.script.name = "throughput";
  f.script.comments = {"Payload completed per QP and bin in Gb/s (solid) and its DCQCN rate limit (dashed), from",
                       "../qps.csv; bins of " + us(bin) + " us; a bin missing from the file completed nothing."};
  f.script.settings = time_plot_settings("throughput per QP", "Gb/s", qps.size(), "QPs");
  std::string data;
  size_t index = 0;
  for (const auto& [qp, samples] : qps) {
    data += "# QP " + qp + "\n" + throughput_lines(samples, bin) + "\n\n";
    const std::string common = "'throughput.dat' index " + std::to_string(index) + " using 1:";
    const std::string color = series_color(index++);
    f.script.plots.push_back(common + "2 with steps lw 1" + color + " title " + gnuplot_string("QP " + qp));
    if (std::any_of(samples.begin(), samples.end(), [](const Sample& s) { return s.rate.has_value(); }))
      f.script.plots.push_back(common + "3 with steps lw 2 dt 2" + color + " title " +
                               gnuplot_string("QP " + qp + " rate"));
  }
  f.data = {{"throughput.dat", data}};
  return drawn(std::move(f));
}

// "t_us KB" per bin. A bin missing from links.csv saw no event: the queue may have been empty or
// held by a pause, so the line breaks there (a blank line) instead of guessing.
std::string queue_lines(const std::vector<Sample>& samples, uint64_t bin) {
  std::string out;
  for (size_t i = 0; i < samples.size(); ++i) {
    const Sample& s = samples[i];
    const std::string kb = gnuplot_number(s.value / 1000.0);
    out += us(s.ps) + " " + kb + "\n";
    if (i + 1 == samples.size() || samples[i + 1].ps > s.ps + bin) {
      out += us(s.ps + bin) + " " + kb + "\n";  // the bin's end, so that steps draws its width
      if (i + 1 != samples.size()) out += "\n";
    }
  }
  return out;
}

// Per bin, the ECN marks and the PFC pause frames of all links together.
bool marks_per_bin(const CsvTable& t, std::map<uint64_t, std::pair<double, double>>* out, std::string* error) {
  const size_t start = *t.column("bin_start_ns");
  const std::optional<size_t> ecn = t.column("ecn_marks"), pauses = t.column("pause_frames");
  for (size_t r = 0; r < t.rows.size(); ++r) {
    std::optional<double> ns, e, p;
    if (!number_cell(t, r, start, &ns, error)) return false;
    if ((ecn && !number_cell(t, r, *ecn, &e, error)) || (pauses && !number_cell(t, r, *pauses, &p, error)))
      return false;
    if (e.value_or(0) == 0 && p.value_or(0) == 0) continue;
    auto& [marks, frames] = (*out)[to_ps(ns.value_or(0))];
    marks += e.value_or(0);
    frames += p.value_or(0);
  }
  return true;
}

void add_marks(const std::map<uint64_t, std::pair<double, double>>& marks, PlotFiles* f) {
  std::string data;
  double ecn = 0, pauses = 0;
  for (const auto& [ps, m] : marks) {
    data += us(ps) + " " + gnuplot_number(m.first) + " " + gnuplot_number(m.second) + "\n";
    ecn += m.first;
    pauses += m.second;
  }
  f->data.emplace_back("queue_depth_marks.dat", data);
  f->script.settings.insert(f->script.settings.end(), {"set ytics nomirror", "set y2tics", "set y2range [0:*]",
                                                       "set y2label 'ECN marks, PFC pause frames (per bin)'"});
  if (ecn > 0)
    f->script.plots.push_back(
        "'queue_depth_marks.dat' using 1:2 axes x1y2 with impulses lw 2 lc rgb 'red' "
        "title 'ECN marks (all links)'");
  if (pauses > 0)
    f->script.plots.push_back(
        "'queue_depth_marks.dat' using 1:3 axes x1y2 with impulses lw 2 lc rgb 'black' "
        "title 'PFC pause frames sent (all links)'");
}

Built queue_depth(const std::string& dir) {
  Built otherwise;
  const auto table = input(dir, "links.csv", {"link", "bin_start_ns", "queue_bytes"}, "queue_depth", &otherwise);
  if (!table) return otherwise;
  Series links;
  std::map<uint64_t, std::pair<double, double>> marks;
  std::string error;
  if (!timeline(*table, "link", "queue_bytes", &links, &error) || !marks_per_bin(*table, &marks, &error))
    return failed(error);
  const uint64_t bin = bin_width(links);
  std::erase_if(links, [](const auto& link) {
    return std::none_of(link.second.begin(), link.second.end(),
                        [](const Sample& s) { return s.value > kOneFrameBytes; });
  });
  if (links.empty() && marks.empty())
    return skipped("queue_depth: skipped, no link queued more than a frame and none marked or paused");
  PlotFiles f;
  f.script.name = "queue_depth";
  f.script.comments = {"The most bytes queued per bin on each link that ever held more than a frame, and the ECN",
                       "marks and PFC pause frames of all links per bin (impulses, right axis), from ../links.csv;",
                       "bins of " + us(bin) + " us; the line breaks over bins the file does not list."};
  f.script.settings = time_plot_settings("queue depth", "queued (KB)", links.size(), "links");
  std::string data;
  size_t index = 0;
  for (const auto& [link, samples] : links) {
    data += "# " + link + "\n" + queue_lines(samples, bin) + "\n\n";
    f.script.plots.push_back("'queue_depth.dat' index " + std::to_string(index) + " using 1:2 with steps lw 2" +
                             series_color(index) + " title " + gnuplot_string(link));
    ++index;
  }
  f.data = {{"queue_depth.dat", data}};
  if (!marks.empty()) add_marks(marks, &f);
  return drawn(std::move(f));
}

bool write_files(const std::string& plots_dir, const PlotFiles& f, std::string* error) {
  for (const auto& [name, text] : f.data)
    if (!write_text_file(plots_dir + "/" + name, text, error)) return false;
  return write_text_file(plots_dir + "/" + f.script.name + ".gp", f.script.text(), error);
}

std::string lines_of(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& item : items) out += (out.empty() ? "" : "\n") + item;
  return out;
}

}  // namespace

RunPlots write_run_plots(const std::string& dir) {
  RunPlots out;
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    out.errors.push_back(dir + ": not a directory");
    return out;
  }
  const std::string plots_dir = dir + "/plots";
  for (const auto& build : {fct_cdf, slowdown_by_size, throughput, queue_depth}) {
    const Built b = build(dir);
    if (!b.note.empty()) out.notes.push_back(b.note);
    if (!b.error.empty()) out.errors.push_back(b.error);
    if (!b.files) continue;
    std::string error;
    std::filesystem::create_directories(plots_dir, ec);
    if (!write_files(plots_dir, *b.files, &error)) {
      out.errors.push_back(error);
      continue;
    }
    out.scripts.push_back(b.files->script.name + ".gp");
  }
  if (out.scripts.empty() && out.errors.empty())
    out.errors.push_back(dir + ": nothing to plot (no messages.csv, summary.csv, qps.csv or links.csv)");
  return out;
}

bool plot_run(const std::string& dir, std::string* error, std::vector<std::string>* notes) {
  RunPlots plots = write_run_plots(dir);
  for (const std::string& script : plots.scripts) {
    std::string why, warnings;
    if (!run_gnuplot(dir + "/plots", script, &why, &warnings)) {
      plots.errors.push_back(why);
      if (why == kGnuplotMissing) break;  // once is enough
    } else if (!warnings.empty()) {
      plots.notes.push_back(script + ": gnuplot says: " + warnings);
    }
  }
  if (notes != nullptr) notes->insert(notes->end(), plots.notes.begin(), plots.notes.end());
  *error = lines_of(plots.errors);
  return plots.errors.empty();
}

}  // namespace hcaemu::replay
