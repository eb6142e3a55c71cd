#include "replay/csv_table.h"

#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>

namespace hcaemu::replay {

namespace {

// Splits one line into fields; false when a quoted field is not closed or is followed by
// something other than a comma. Quoted fields do not span lines (no writer of ours needs it).
bool split_line(std::string_view line, std::vector<std::string>* fields) {
  fields->clear();
  size_t i = 0;
  while (true) {
    std::string field;
    if (i < line.size() && line[i] == '"') {
      for (++i;; ++i) {
        if (i == line.size()) return false;
        if (line[i] != '"') {
          field += line[i];
        } else if (i + 1 < line.size() && line[i + 1] == '"') {
          field += '"';
          ++i;
        } else {
          break;
        }
      }
      ++i;  // the closing quote
      if (i < line.size() && line[i] != ',') return false;
    } else {
      const size_t comma = std::min(line.find(',', i), line.size());
      field.assign(line.substr(i, comma - i));
      i = comma;
    }
    fields->push_back(std::move(field));
    if (i == line.size()) return true;
    ++i;  // the comma
  }
}

std::string located(const std::string& path, size_t line, const std::string& what) {
  return path + ":" + std::to_string(line) + ": " + what;
}

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& name : names) out += (out.empty() ? "" : ",") + name;
  return out;
}

}  // namespace

std::optional<size_t> CsvTable::column(std::string_view name) const {
  for (size_t i = 0; i < header.size(); ++i)
    if (header[i] == name) return i;
  return std::nullopt;
}

std::string CsvTable::where(size_t row) const { return path + ":" + std::to_string(lines.at(row)); }

CsvRead read_csv(const std::string& path, const std::vector<std::string>& required) {
  CsvRead result;
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    result.missing = true;
    result.error = path + ": missing";
    return result;
  }
  std::ifstream in(path, std::ios::binary);
  CsvTable table;
  table.path = path;
  std::string line;
  std::vector<std::string> fields;
  for (size_t number = 1; std::getline(in, line); ++number) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;  // a blank line carries nothing
    if (!split_line(line, &fields)) {
      result.error = located(path, number, "unterminated or misplaced quote");
      return result;
    }
    if (table.header.empty()) {
      table.header = fields;
      continue;
    }
    if (fields.size() != table.header.size()) {
      result.error = located(path, number,
                             std::to_string(fields.size()) + " fields, the header has " +
                                 std::to_string(table.header.size()) + " (" + joined(table.header) + ")");
      return result;
    }
    table.rows.push_back(fields);
    table.lines.push_back(number);
  }
  if (in.bad()) {
    result.error = path + ": read error";
    return result;
  }
  if (table.header.empty()) {
    result.error = located(path, 1, "no header line");
    return result;
  }
  for (const std::string& name : required) {
    if (!table.column(name)) {
      result.error = located(path, 1, "no column \"" + name + "\" (header: " + joined(table.header) + ")");
      return result;
    }
  }
  result.table = std::move(table);
  return result;
}

std::optional<double> parse_number(std::string_view text) {
  if (text.size() > 1 && text[0] == '+' && text[1] != '-') text.remove_prefix(1);  // from_chars refuses a plus sign
  double value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || !std::isfinite(value))
    return std::nullopt;
  return value;
}

bool number_cell(const CsvTable& table, size_t row, size_t column, std::optional<double>* value, std::string* error) {
  const std::string& cell = table.rows.at(row).at(column);
  value->reset();
  if (cell.empty()) return true;
  *value = parse_number(cell);
  if (*value) return true;
  *error = table.where(row) + ": " + table.header.at(column) + " \"" + cell + "\" is not a number";
  return false;
}

std::string csv_field(std::string_view text) {
  if (text.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(text);
  std::string quoted = "\"";
  for (char c : text) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

}  // namespace hcaemu::replay
