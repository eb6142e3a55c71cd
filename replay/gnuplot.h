#pragma once
// gnuplot scripts as the plot tools write them, and running gnuplot on them. Every script draws
// its plot twice, NAME.png (pngcairo) and NAME.svg, from data files next to it, and names only
// files in its own directory: `gnuplot NAME.gp` there draws it again after an edit.
#include <string>
#include <string_view>
#include <vector>

namespace hcaemu::replay {

// The message plot_run and plot give when gnuplot is not installed (the caller warns).
inline constexpr const char* kGnuplotMissing =
    "gnuplot not found (apt-get install gnuplot-nox); the CSV files are complete";

struct GnuplotScript {
  std::string name;                   // NAME.gp draws NAME.png and NAME.svg
  std::vector<std::string> comments;  // what the plot shows and where its data came from
  std::vector<std::string> settings;  // "set ..." lines, before the plot
  std::vector<std::string> plots;     // the elements of the one plot command
  std::string text() const;
};

// A gnuplot string literal holding `text` as it is (single-quoted: no escapes but '').
std::string gnuplot_string(std::string_view text);
// A number for a data file: 12 significant digits, plenty for a plot, printed the same everywhere.
std::string gnuplot_number(double value);

// Writes `text` into `path`; false with "cannot write PATH" in error.
bool write_text_file(const std::string& path, const std::string& text, std::string* error);

// Runs `gnuplot SCRIPT` in `dir` (no shell). False with the reason in error: kGnuplotMissing,
// or gnuplot's exit status and its stderr. What gnuplot says on stderr while succeeding (a
// warning) goes into warnings.
bool run_gnuplot(const std::string& dir, const std::string& script, std::string* error, std::string* warnings);

}  // namespace hcaemu::replay
