#pragma once
// Reading the CSV files of a run directory (docs/replay.md, "Outputs") back in, for the plots and
// the sweep tools. Those files are written by another version of hcareplay, perhaps by hand or by
// a script, so the reader locates columns by their header name, ignores columns it does not know,
// and names the file and line of anything malformed. Fields may be double-quoted ("" inside is a
// quote), as csv_field() writes them.
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hcaemu::replay {

struct CsvTable {
  std::string path;
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;  // each has header.size() fields
  std::vector<size_t> lines;                   // the file's line number of each row (1-based)

  // The index of a header column, or nullopt.
  std::optional<size_t> column(std::string_view name) const;
  // "path:line" of a row, the start of every message about it.
  std::string where(size_t row) const;
};

struct CsvRead {
  std::optional<CsvTable> table;
  bool missing = false;  // the file does not exist (not an error for the readers: they skip it)
  std::string error;     // set when missing or malformed: "path:line: what"
};

// Reads `path`; every name in `required` must be a header column.
CsvRead read_csv(const std::string& path, const std::vector<std::string>& required = {});

// A cell as a number: nullopt for an empty cell; false with "path:line: ..." in error when the
// cell holds something that is not a number.
bool number_cell(const CsvTable& table, size_t row, size_t column, std::optional<double>* value, std::string* error);

// The whole of `text` as a number (locale-independent); nullopt otherwise.
std::optional<double> parse_number(std::string_view text);

// `text` as one CSV field: quoted when it holds a comma, a quote or a line break.
std::string csv_field(std::string_view text);

}  // namespace hcaemu::replay
