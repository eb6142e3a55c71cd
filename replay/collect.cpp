#include "replay/collect.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <utility>

#include "replay/csv_table.h"

namespace hcaemu::replay {

namespace {

using KeyValues = std::vector<std::pair<std::string, std::string>>;

struct PointResults {
  std::string name;
  KeyValues settings, totals;
  std::vector<std::vector<std::string>> summary;  // kSummaryColumns of each row
};

bool read_key_values(const std::string& path, KeyValues* out, std::string* error) {
  CsvRead read = read_csv(path, {"key", "value"});
  if (!read.table) {
    *error = read.error;
    return false;
  }
  const CsvTable& t = *read.table;
  const size_t key = *t.column("key"), value = *t.column("value");
  for (size_t r = 0; r < t.rows.size(); ++r) {
    if (t.rows[r][key].empty()) {
      *error = t.where(r) + ": empty key";
      return false;
    }
    out->emplace_back(t.rows[r][key], t.rows[r][value]);
  }
  return true;
}

bool read_summary(const std::string& path, std::vector<std::vector<std::string>>* out, std::string* error) {
  const std::vector<std::string> columns(std::begin(kSummaryColumns), std::end(kSummaryColumns));
  CsvRead read = read_csv(path, columns);
  if (!read.table) {
    *error = read.error;
    return false;
  }
  const CsvTable& t = *read.table;
  for (const auto& row : t.rows) {
    std::vector<std::string> picked;
    for (const std::string& name : columns) picked.push_back(row[*t.column(name)]);
    out->push_back(std::move(picked));
  }
  return true;
}

bool read_point(const std::string& dir, const std::string& name, PointResults* p, std::string* error) {
  const std::string base = dir + "/" + name + "/";
  p->name = name;
  return read_key_values(base + "settings.csv", &p->settings, error) &&
         read_summary(base + "summary.csv", &p->summary, error) &&
         read_key_values(base + "totals.csv", &p->totals, error);
}

// The keys of every point, in the order they are first named.
std::vector<std::string> union_of_keys(const std::vector<PointResults>& points, KeyValues PointResults::*member) {
  std::vector<std::string> keys;
  for (const PointResults& p : points)
    for (const auto& [key, value] : p.*member)
      if (std::find(keys.begin(), keys.end(), key) == keys.end()) keys.push_back(key);
  return keys;
}

std::string value_of(const KeyValues& values, const std::string& key) {
  for (const auto& [k, v] : values)
    if (k == key) return v;
  return {};
}

class ResultsWriter {
 public:
  ResultsWriter(const std::vector<PointResults>& points)
      : settings_(union_of_keys(points, &PointResults::settings)),
        totals_(union_of_keys(points, &PointResults::totals)) {}

  std::string header() const {
    std::vector<std::string> names{"point"};
    names.insert(names.end(), settings_.begin(), settings_.end());
    names.insert(names.end(), std::begin(kSummaryColumns), std::end(kSummaryColumns));
    for (const std::string& key : totals_) {
      // A totals key named like a column already there would make results.csv ambiguous.
      const bool taken = std::find(names.begin(), names.end(), key) != names.end();
      names.push_back(taken ? "totals." + key : key);
    }
    return line(names);
  }

  // The point's rows: one per summary row, or one with the summary empty.
  std::string rows(const PointResults& p, size_t* count) const {
    static const std::vector<std::string> kNoSummary(std::size(kSummaryColumns));
    std::string out;
    const auto& summary = p.summary.empty() ? std::vector<std::vector<std::string>>{kNoSummary} : p.summary;
    for (const auto& summary_row : summary) {
      std::vector<std::string> cells{p.name};
      for (const std::string& key : settings_) cells.push_back(value_of(p.settings, key));
      cells.insert(cells.end(), summary_row.begin(), summary_row.end());
      for (const std::string& key : totals_) cells.push_back(value_of(p.totals, key));
      out += line(cells);
      ++*count;
    }
    return out;
  }

 private:
  static std::string line(const std::vector<std::string>& cells) {
    std::string out;
    for (size_t i = 0; i < cells.size(); ++i) out += (i ? "," : "") + csv_field(cells[i]);
    return out + "\n";
  }

  std::vector<std::string> settings_, totals_;
};

}  // namespace

std::vector<std::string> point_directories(const std::string& dir) {
  std::vector<std::pair<unsigned long long, std::string>> found;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    const bool numbered = name.size() > 1 && name.size() < 20 && name[0] == 'p' &&
                          std::all_of(name.begin() + 1, name.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (numbered && entry.is_directory(ec)) found.emplace_back(std::stoull(name.substr(1)), name);
  }
  std::sort(found.begin(), found.end());
  std::vector<std::string> names;
  for (auto& [number, name] : found) names.push_back(std::move(name));
  return names;
}

bool collect_sweep(const std::string& dir, Collected* out, std::string* error) {
  const std::vector<std::string> names = point_directories(dir);
  if (names.empty()) {
    *error = dir + ": no point directories (p0001, p0002, ...)";
    return false;
  }
  std::vector<PointResults> points;
  for (const std::string& name : names) {
    PointResults p;
    std::string why;
    if (read_point(dir, name, &p, &why))
      points.push_back(std::move(p));
    else
      out->skipped.push_back(name + ": " + why);
  }
  if (points.empty()) {
    *error = dir + ": no point could be read";
    return false;
  }
  const ResultsWriter writer(points);
  std::ofstream file(dir + "/results.csv", std::ios::binary | std::ios::trunc);
  file << writer.header();
  for (const PointResults& p : points) file << writer.rows(p, &out->rows);
  file.close();
  if (!file) {
    *error = "cannot write " + dir + "/results.csv";
    return false;
  }
  out->points = points.size();
  return true;
}

}  // namespace hcaemu::replay
