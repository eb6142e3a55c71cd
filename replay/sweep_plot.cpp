#include "replay/sweep_plot.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "replay/csv_table.h"
#include "replay/gnuplot.h"

namespace hcaemu::replay {

namespace {

// results.csv's columns: the swept keys stand between "point" and "opcode", every other
// column after them is a metric (the summary's and the totals').
struct Layout {
  std::vector<std::string> keys, metrics;
  size_t opcode = 0, size = 0;
};

Layout layout_of(const CsvTable& t) {
  Layout l;
  l.opcode = *t.column("opcode");
  l.size = *t.column("size");
  for (size_t i = 0; i < t.header.size(); ++i) {
    const std::string& name = t.header[i];
    if (name == "point" || i == l.opcode || i == l.size) continue;
    (i < l.opcode ? l.keys : l.metrics).push_back(name);
  }
  return l;
}

std::string listed(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& name : names) out += (out.empty() ? "" : ", ") + name;
  return out.empty() ? "none" : out;
}

bool row_selected(const SweepPlotRequest& r, const std::string& opcode, const std::string& size) {
  if (opcode.empty()) return false;  // a point whose summary had no row: no metrics per opcode
  if ((!r.opcode.empty() && opcode != r.opcode) || (!r.size.empty() && size != r.size)) return false;
  if (r.by == "size") return size != "all";
  if (r.by == "opcode") return opcode != "all";
  // Without --by: the "all" row, unless a filter chose others.
  return !r.opcode.empty() || !r.size.empty() || (opcode == "all" && size == "all");
}

// A line of the plot: its title and its points (x as written in results.csv, y).
struct Line {
  std::string title;
  std::vector<std::pair<std::string, double>> points;
};

// The columns whose value tells the selected rows' lines apart: opcode and size when they vary,
// and every other swept key that varies.
std::vector<size_t> distinguishing_columns(const CsvTable& t, const Layout& l, const std::vector<size_t>& rows,
                                           size_t x) {
  std::vector<size_t> candidates{l.opcode, l.size};
  for (const std::string& key : l.keys)
    if (*t.column(key) != x) candidates.push_back(*t.column(key));
  std::vector<size_t> varying;
  for (size_t c : candidates) {
    std::set<std::string> values;
    for (size_t r : rows) values.insert(t.rows[r][c]);
    if (values.size() > 1) varying.push_back(c);
  }
  return varying;
}

std::string line_title(const CsvTable& t, const Layout& l, size_t row, const std::vector<size_t>& columns,
                       const std::string& metric) {
  std::string title;
  for (size_t c : columns) {
    const std::string& v = t.rows[row][c];
    title += (title.empty() ? "" : ", ") + (c == l.opcode || c == l.size ? v : t.header[c] + "=" + v);
  }
  return title.empty() ? metric : title;
}

// The selected rows as lines, in the order their first row appears; rows without a value of
// the metric are left out.
bool lines_of(const CsvTable& t, const Layout& l, const SweepPlotRequest& r, std::vector<Line>* lines,
              std::string* error) {
  const size_t x = *t.column(r.x), y = *t.column(r.y);
  std::vector<size_t> rows;
  for (size_t row = 0; row < t.rows.size(); ++row)
    if (row_selected(r, t.rows[row][l.opcode], t.rows[row][l.size])) rows.push_back(row);
  const std::vector<size_t> columns = distinguishing_columns(t, l, rows, x);
  std::map<std::string, size_t> index;  // title -> line
  for (size_t row : rows) {
    std::optional<double> value;
    if (!number_cell(t, row, y, &value, error)) return false;
    if (!value) continue;
    const std::string title = line_title(t, l, row, columns, r.y);
    const auto [it, added] = index.try_emplace(title, lines->size());
    if (added) lines->push_back({title, {}});
    (*lines)[it->second].points.emplace_back(t.rows[row][x], *value);
  }
  return true;
}

std::string no_rows_message(const CsvTable& t, const Layout& l, const SweepPlotRequest& r) {
  std::set<std::string> opcodes, sizes;
  for (const auto& row : t.rows) {
    if (!row[l.opcode].empty()) opcodes.insert(row[l.opcode]);
    if (!row[l.size].empty()) sizes.insert(row[l.size]);
  }
  return t.path + ": no row with a value of " + r.y + " matches (opcodes: " + listed({opcodes.begin(), opcodes.end()}) +
         "; sizes: " + listed({sizes.begin(), sizes.end()}) + ")";
}

// Where each x value goes: itself when every one is a number, else its rank of appearance.
struct XAxis {
  bool numeric = true;
  std::vector<std::string> categories;  // in order of appearance
  double position(const std::string& x) const {
    if (numeric) return *parse_number(x);
    return double(std::find(categories.begin(), categories.end(), x) - categories.begin());
  }
};

XAxis x_axis(const std::vector<Line>& lines) {
  XAxis axis;
  for (const Line& line : lines)
    for (const auto& [x, y] : line.points) {
      axis.numeric = axis.numeric && parse_number(x).has_value();
      if (std::find(axis.categories.begin(), axis.categories.end(), x) == axis.categories.end())
        axis.categories.push_back(x);
    }
  return axis;
}

std::vector<std::string> axis_settings(const XAxis& axis) {
  if (!axis.numeric) {
    std::string tics;
    for (size_t i = 0; i < axis.categories.size(); ++i)
      tics += (i ? ", " : "") + gnuplot_string(axis.categories[i]) + " " + std::to_string(i);
    return {"set xtics (" + tics + ")", "set xrange [-0.5:" + std::to_string(axis.categories.size()) + "-0.5]"};
  }
  double low = 0, high = 0;
  for (size_t i = 0; i < axis.categories.size(); ++i) {
    const double v = *parse_number(axis.categories[i]);
    low = i == 0 ? v : std::min(low, v);
    high = i == 0 ? v : std::max(high, v);
  }
  if (low > 0 && high >= 100 * low) return {"set logscale x  # the values span a factor of 100 or more"};
  return {};
}

std::string data_text(const std::vector<Line>& lines, const XAxis& axis) {
  std::string data;
  for (const Line& line : lines) {
    std::vector<std::pair<double, double>> points;
    for (const auto& [x, y] : line.points) points.emplace_back(axis.position(x), y);
    std::stable_sort(points.begin(), points.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    data += "# " + line.title + "\n";
    for (const auto& [x, y] : points) data += gnuplot_number(x) + " " + gnuplot_number(y) + "\n";
    data += "\n\n";
  }
  return data;
}

// A name fit for a file: characters other than [A-Za-z0-9_.-] become '_'.
std::string file_safe(std::string text) {
  for (char& c : text)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '.' && c != '-') c = '_';
  return text;
}

std::string stem_of(const SweepPlotRequest& r) {
  std::string stem = "plot-" + file_safe(r.y) + "-vs-" + file_safe(r.x);
  if (!r.by.empty()) stem += "-by-" + r.by;
  if (!r.opcode.empty()) stem += "-opcode-" + file_safe(r.opcode);
  if (!r.size.empty()) stem += "-size-" + file_safe(r.size);
  return stem;
}

GnuplotScript script_of(const SweepPlotRequest& r, const std::string& stem, const std::vector<Line>& lines,
                        const XAxis& axis) {
  GnuplotScript s;
  s.name = stem;
  s.comments = {r.y + " against " + r.x + " from results.csv (hcareplay collect).",
                stem + ".dat: a block per line of the plot, x (" +
                    std::string(axis.numeric ? "the value" : "the category's index") + ") and y."};
  s.settings = {"set title " + gnuplot_string(r.y + " vs " + r.x), "set xlabel " + gnuplot_string(r.x),
                "set ylabel " + gnuplot_string(r.y), "set key below", "set grid"};
  for (std::string& setting : axis_settings(axis)) s.settings.push_back(std::move(setting));
  for (size_t i = 0; i < lines.size(); ++i)
    s.plots.push_back(gnuplot_string(stem + ".dat") + " index " + std::to_string(i) +
                      " using 1:2 with linespoints lw 2 pt 7 title " + gnuplot_string(lines[i].title));
  return s;
}

std::string check_request(const SweepPlotRequest& r, const Layout& l, const std::string& path) {
  if (std::find(l.keys.begin(), l.keys.end(), r.x) == l.keys.end())
    return path + ": unknown --x " + r.x + " (the sweep's keys: " + listed(l.keys) + ")";
  if (std::find(l.metrics.begin(), l.metrics.end(), r.y) == l.metrics.end())
    return path + ": unknown --y " + r.y + " (metrics: " + listed(l.metrics) + ")";
  if (!r.by.empty() && r.by != "size" && r.by != "opcode") return "--by must be size or opcode";
  return {};
}

}  // namespace

bool write_sweep_plot(const SweepPlotRequest& r, std::string* stem, std::string* error) {
  CsvRead read = read_csv(r.dir + "/results.csv", {"point", "opcode", "size"});
  if (!read.table) {
    *error = read.error + (read.missing ? " (hcareplay collect " + r.dir + " writes it)" : "");
    return false;
  }
  const CsvTable& t = *read.table;
  const Layout l = layout_of(t);
  if (*error = check_request(r, l, t.path); !error->empty()) return false;
  std::vector<Line> lines;
  if (!lines_of(t, l, r, &lines, error)) return false;
  if (lines.empty()) {
    *error = no_rows_message(t, l, r);
    return false;
  }
  const XAxis axis = x_axis(lines);
  *stem = stem_of(r);
  return write_text_file(r.dir + "/" + *stem + ".dat", data_text(lines, axis), error) &&
         write_text_file(r.dir + "/" + *stem + ".gp", script_of(r, *stem, lines, axis).text(), error);
}

bool plot_sweep(const SweepPlotRequest& r, std::string* stem, std::string* error, std::string* warnings) {
  return write_sweep_plot(r, stem, error) && run_gnuplot(r.dir, *stem + ".gp", error, warnings);
}

}  // namespace hcaemu::replay
