#include "replay/sweep.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <optional>
#include <set>
#include <string_view>

#include "replay/collect.h"
#include "replay/csv_table.h"
#include "replay/gnuplot.h"
#include "replay/point_runner.h"
#include "replay/subprocess.h"
#include "replay/sweep_plot.h"

namespace hcaemu::replay {

namespace {

namespace fs = std::filesystem;

int usage_error(const std::string& what) {
  std::cerr << "hcareplay: " << what << "\n(see hcareplay --help)\n";
  return 2;
}

int failure(const std::string& what) {
  std::cerr << "hcareplay: " << what << "\n";
  return 1;
}

bool key_name_ok(const std::string& name) {
  return !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-';
  });
}

// ---- sweep's command line --------------------------------------------------------------------

struct SweepArgs {
  std::string input, out_dir, emit_jobs;
  std::vector<SweepKey> keys;
  size_t parallel = 1;
  bool quiet = false;
  std::vector<std::string> run_options;  // everything sweep does not know, for each point's run
};

// INPUT comes first: sweep passes the options it does not know on to run without knowing which
// of them take a value, so it could not tell INPUT from such a value further on.
std::string parse_sweep_args(const std::vector<std::string>& args, SweepArgs* a) {
  if (args.empty() || args[0].empty() || args[0][0] == '-')
    return "sweep needs INPUT first: hcareplay sweep INPUT --out DIR --set KEY=V1,V2,... [-j N] [RUN OPTIONS]";
  a->input = args[0];
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& arg = args[i];
    const bool takes_value = arg == "--out" || arg == "--set" || arg == "-j" || arg == "--emit-jobs";
    if (takes_value && i + 1 == args.size()) return arg + " needs a value";
    if (arg == "--out") {
      a->out_dir = args[++i];
    } else if (arg == "--emit-jobs") {
      a->emit_jobs = args[++i];
    } else if (arg == "--set") {
      SweepKey key;
      std::string error;
      if (!parse_sweep_key(args[++i], &key, &error)) return error;
      a->keys.push_back(std::move(key));
    } else if (arg == "-j") {
      const auto n = parse_number(args[++i]);
      if (!n || *n < 1 || *n > 4096 || *n != double(size_t(*n))) return "-j needs a whole number from 1 to 4096";
      a->parallel = size_t(*n);
    } else if (arg == "--quiet") {
      a->quiet = true;  // the points are always --quiet: their progress would only fill log.txt
    } else {
      a->run_options.push_back(arg);
    }
  }
  if (a->out_dir.empty()) return "sweep needs --out DIR";
  if (a->keys.empty()) return "sweep needs at least one --set KEY=V1,V2,...";
  return {};
}

// A sweep's directory must be new or empty: collect reads every pNNNN in it, and points of an
// earlier sweep would mix with this one's.
std::string prepare_out_dir(const std::string& dir) {
  std::error_code ec;
  if (fs::exists(dir, ec) && !fs::is_empty(dir, ec))
    return dir + " is not empty (a sweep writes into a new or empty directory)";
  fs::create_directories(dir, ec);
  if (ec) return "cannot create " + dir + ": " + ec.message();
  return {};
}

std::string write_points_csv(const std::string& dir, const std::vector<SweepKey>& keys,
                             const std::vector<SweepPoint>& points) {
  std::string text = "point";
  for (const SweepKey& key : keys) text += "," + csv_field(key.name);
  text += "\n";
  for (size_t i = 0; i < points.size(); ++i) {
    text += point_name(i, points.size());
    for (const auto& [key, value] : points[i]) text += "," + csv_field(value);
    text += "\n";
  }
  std::string error;
  return write_text_file(dir + "/points.csv", text, &error) ? std::string() : error;
}

std::string create_point_dirs(const std::string& dir, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    std::error_code ec;
    fs::create_directories(dir + "/" + point_name(i, count), ec);
    if (ec) return "cannot create " + dir + "/" + point_name(i, count) + ": " + ec.message();
  }
  return {};
}

// ---- --emit-jobs -----------------------------------------------------------------------------

// One line per point, for `parallel < FILE` or a Slurm array: it changes into our working
// directory first, so INPUT, DIR and the run options' paths mean what they mean here (on a
// shared filesystem), and sends the point's output into its log.txt as a local sweep does.
std::string job_lines(const SweepArgs& a, const std::string& self_exe, const std::vector<SweepPoint>& points) {
  std::error_code ec;
  const std::string cwd = fs::current_path(ec).string();
  std::string text;
  for (size_t i = 0; i < points.size(); ++i) {
    const std::string point_dir = a.out_dir + "/" + point_name(i, points.size());
    std::string line = "cd " + shell_quote(cwd) + " &&";
    for (const std::string& word : point_command(self_exe, a.input, point_dir, a.run_options, points[i]))
      line += " " + shell_quote(word);
    text += line + " >" + shell_quote(point_dir + "/log.txt") + " 2>&1\n";
  }
  return text;
}

std::string slurm_script(const std::string& jobs_file, const std::string& out_dir, size_t count) {
  std::error_code ec;
  const std::string jobs = fs::absolute(jobs_file, ec).string();
  std::string text = "#!/bin/bash\n";
  text += "# Slurm array job of the hcareplay sweep into " + shell_quote(out_dir) + ", written by hcareplay\n";
  text += "# sweep --emit-jobs: task i runs line i of the job file (point i).\n";
  text += "# Submit: sbatch " + shell_quote(jobs_file + ".slurm.sh") + "\n";
  text += "# Then: hcareplay collect " + shell_quote(out_dir) + "\n";
  text += "# A cluster's MaxArraySize (often 1001) may be below the number of points: submit ranges\n";
  text += "# with sbatch --array=A-B, or throttle with --array=1-N%M.\n";
  text += "#SBATCH --job-name=hcareplay-sweep\n";
  text += "#SBATCH --array=1-" + std::to_string(count) + "\n";
  text += "#SBATCH --ntasks=1\n";
  text += "#SBATCH --cpus-per-task=1\n";
  text += "set -euo pipefail\n";
  text += "jobs=" + shell_quote(jobs) + "\n";
  text += "line=$(sed -n \"${SLURM_ARRAY_TASK_ID:?not a Slurm array task}p\" \"$jobs\")\n";
  text += "[ -n \"$line\" ] || { echo \"no line $SLURM_ARRAY_TASK_ID in $jobs\" >&2; exit 1; }\n";
  text += "exec bash -c \"$line\"\n";
  return text;
}

int emit_jobs(const SweepArgs& a, const std::string& self_exe, const std::vector<SweepPoint>& points) {
  std::string error;
  if (!write_text_file(a.emit_jobs, job_lines(a, self_exe, points), &error) ||
      !write_text_file(a.emit_jobs + ".slurm.sh", slurm_script(a.emit_jobs, a.out_dir, points.size()), &error))
    return failure(error);
  std::error_code ec;
  fs::permissions(a.emit_jobs + ".slurm.sh", fs::perms::owner_exec | fs::perms::group_exec, fs::perm_options::add, ec);
  const std::string jobs = shell_quote(a.emit_jobs), slurm = shell_quote(a.emit_jobs + ".slurm.sh");
  std::cerr << "hcareplay sweep: " << points.size() << " points in " << a.out_dir << " (points.csv), nothing run.\n"
            << "  one command per point in " << a.emit_jobs << ": parallel -j N < " << jobs
            << " (or --sshloginfile HOSTS, on a shared filesystem)\n"
            << "  a Slurm array job: sbatch " << slurm << "\n"
            << "  afterwards: hcareplay collect " << shell_quote(a.out_dir) << "\n";
  return 0;
}

// ---- running the points here -----------------------------------------------------------------

std::string write_status_csv(const std::string& dir, const std::vector<PointOutcome>& outcomes) {
  std::string text = "point,exit_status,seconds\n";
  for (const PointOutcome& o : outcomes) {
    char seconds[32];
    std::snprintf(seconds, sizeof seconds, "%.3f", o.seconds);
    text += o.name + "," + std::to_string(o.exit_status) + "," + seconds + "\n";
  }
  std::string error;
  return write_text_file(dir + "/status.csv", text, &error) ? std::string() : error;
}

int report_collected(const std::string& dir, const char* who) {
  Collected collected;
  std::string error;
  const bool ok = collect_sweep(dir, &collected, &error);
  for (const std::string& skipped : collected.skipped)
    std::cerr << "hcareplay " << who << ": left out " << skipped << "\n";
  if (!ok) return failure(error);
  std::cerr << "hcareplay " << who << ": " << collected.points << " points, " << collected.rows << " rows in " << dir
            << "/results.csv\n";
  return 0;
}

int run_here(const SweepArgs& a, const std::string& self_exe, const std::vector<SweepPoint>& points) {
  std::vector<PointJob> jobs;
  for (size_t i = 0; i < points.size(); ++i) {
    const std::string point_dir = a.out_dir + "/" + point_name(i, points.size());
    jobs.push_back({point_name(i, points.size()), point_command(self_exe, a.input, point_dir, a.run_options, points[i]),
                    point_dir + "/log.txt"});
  }
  const std::vector<PointOutcome> outcomes = run_points(jobs, a.parallel, a.quiet ? nullptr : &std::cerr);
  if (const std::string why = write_status_csv(a.out_dir, outcomes); !why.empty())
    std::cerr << "hcareplay: " << why << "\n";
  std::string failed;
  size_t failures = 0;
  for (const PointOutcome& o : outcomes) {
    if (o.exit_status == 0) continue;
    ++failures;
    failed += (failed.empty() ? "" : ", ") + o.name + " (exit " + std::to_string(o.exit_status) + ")";
  }
  const int collected = report_collected(a.out_dir, "sweep");
  if (failures == 0) return collected;
  std::cerr << "hcareplay sweep: " << failures << " of " << points.size() << " points failed: " << failed
            << "; their output is in " << a.out_dir << "/pNNNN/log.txt\n";
  return 1;
}

// ---- plot's command line ---------------------------------------------------------------------

std::string parse_plot_args(const std::vector<std::string>& args, SweepPlotRequest* r) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    std::string* target = arg == "--x"        ? &r->x
                          : arg == "--y"      ? &r->y
                          : arg == "--by"     ? &r->by
                          : arg == "--opcode" ? &r->opcode
                          : arg == "--size"   ? &r->size
                                              : nullptr;
    if (target != nullptr) {
      if (i + 1 == args.size() || args[i + 1].empty()) return arg + " needs a value";
      *target = args[++i];
    } else if (!arg.empty() && arg[0] == '-') {
      return "plot: unknown option " + arg;
    } else if (r->dir.empty()) {
      r->dir = arg;
    } else {
      return "plot: one DIR only";
    }
  }
  if (r->dir.empty()) return "plot needs a DIR";
  if (r->x.empty() != r->y.empty()) return "plot needs both --x KEY and --y METRIC (or neither, for a run's plots)";
  if (r->x.empty() && (!r->by.empty() || !r->opcode.empty() || !r->size.empty()))
    return "--by, --opcode and --size go with --x and --y";
  if (!r->by.empty() && r->by != "size" && r->by != "opcode") return "--by must be size or opcode";
  return {};
}

int plot_one_run(const std::string& dir) {
  std::string error;
  std::vector<std::string> notes;
  const bool ok = plot_run(dir, &error, &notes);
  for (const std::string& note : notes) std::cerr << "hcareplay plot: " << note << "\n";
  if (!ok) return failure(error + (error == kGnuplotMissing ? " (the scripts are in " + dir + "/plots)" : ""));
  std::cerr << "hcareplay plot: drawn into " << dir << "/plots\n";
  return 0;
}

}  // namespace

bool parse_sweep_key(const std::string& arg, SweepKey* key, std::string* error) {
  const size_t eq = arg.find('=');
  key->name = arg.substr(0, eq);
  if (eq == std::string::npos || !key_name_ok(key->name)) {
    *error = "--set " + arg + ": needs KEY=V1,V2,... with KEY of letters, digits, '_', '.' and '-'";
    return false;
  }
  key->values.clear();
  const std::string values = arg.substr(eq + 1);
  for (size_t start = 0;;) {
    const size_t comma = std::min(values.find(',', start), values.size());
    const std::string value = values.substr(start, comma - start);
    if (value.empty()) {
      *error = "--set " + arg + ": an empty value";
      return false;
    }
    if (std::find(key->values.begin(), key->values.end(), value) != key->values.end()) {
      *error = "--set " + arg + ": the value " + value + " twice";
      return false;
    }
    key->values.push_back(value);
    if (comma == values.size()) return true;
    start = comma + 1;
  }
}

bool sweep_points(const std::vector<SweepKey>& keys, std::vector<SweepPoint>* points, std::string* error) {
  if (keys.empty()) {
    *error = "a sweep needs at least one --set KEY=V1,V2,...";
    return false;
  }
  std::set<std::string> names;
  size_t count = 1;
  for (const SweepKey& key : keys) {
    if (!names.insert(key.name).second) {
      *error = "--set " + key.name + " given twice (list its values in one --set)";
      return false;
    }
    if (key.values.empty()) {
      *error = "--set " + key.name + " has no value";
      return false;
    }
    // count is at most kMaxSweepPoints before each product, so the product cannot overflow.
    count *= key.values.size();
    if (count > kMaxSweepPoints) {
      *error = "the sweep has more than " + std::to_string(kMaxSweepPoints) + " points";
      return false;
    }
  }
  points->assign(count, {});
  // Point i's value of key k: i divided by the number of points each of its values spans.
  size_t span = count;
  for (const SweepKey& key : keys) {
    span /= key.values.size();
    for (size_t i = 0; i < count; ++i) (*points)[i].emplace_back(key.name, key.values[(i / span) % key.values.size()]);
  }
  return true;
}

std::string point_name(size_t index, size_t count) {
  std::string digits = std::to_string(index + 1);
  const size_t width = std::max<size_t>(4, std::to_string(count).size());
  return "p" + std::string(width - std::min(width, digits.size()), '0') + digits;
}

std::vector<std::string> point_command(const std::string& hcareplay, const std::string& input,
                                       const std::string& point_dir, const std::vector<std::string>& run_options,
                                       const SweepPoint& point) {
  std::vector<std::string> argv{hcareplay, "run", input, "--out", point_dir};
  argv.insert(argv.end(), run_options.begin(), run_options.end());
  for (const auto& [key, value] : point) {
    argv.push_back("--set");
    argv.push_back(key + "=" + value);
  }
  argv.push_back("--quiet");
  return argv;
}

std::string shell_quote(const std::string& word) {
  const bool plain = !word.empty() && std::all_of(word.begin(), word.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) ||
           std::string_view("_./=:,+-@%").find(c) != std::string_view::npos;
  });
  if (plain) return word;
  std::string quoted = "'";
  for (char c : word) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

int sweep_command(const std::vector<std::string>& args, const std::string& self_exe) {
  SweepArgs a;
  if (const std::string why = parse_sweep_args(args, &a); !why.empty()) return usage_error(why);
  std::vector<SweepPoint> points;
  std::string error;
  if (!sweep_points(a.keys, &points, &error)) return usage_error(error);
  if (!a.emit_jobs.empty() && a.parallel != 1)
    return usage_error("-j runs the points here, --emit-jobs elsewhere: one of them");
  if (std::string why = prepare_out_dir(a.out_dir); !why.empty()) return failure(why);
  if (std::string why = write_points_csv(a.out_dir, a.keys, points); !why.empty()) return failure(why);
  if (std::string why = create_point_dirs(a.out_dir, points.size()); !why.empty()) return failure(why);
  if (!a.emit_jobs.empty()) return emit_jobs(a, self_exe, points);
  return run_here(a, self_exe, points);
}

int collect_command(const std::vector<std::string>& args) {
  if (args.size() != 1 || args[0].empty() || args[0][0] == '-')
    return usage_error("collect needs one DIR (a sweep's --out)");
  return report_collected(args[0], "collect");
}

int plot_command(const std::vector<std::string>& args) {
  SweepPlotRequest request;
  if (const std::string why = parse_plot_args(args, &request); !why.empty()) return usage_error(why);
  if (request.x.empty()) return plot_one_run(request.dir);
  std::string stem, error, warnings;
  if (!plot_sweep(request, &stem, &error, &warnings)) {
    const bool scripts_written = error == kGnuplotMissing;
    return failure(error + (scripts_written ? " (the script is " + request.dir + "/" + stem + ".gp)" : ""));
  }
  if (!warnings.empty()) std::cerr << "hcareplay plot: gnuplot says: " << warnings << "\n";
  std::cerr << "hcareplay plot: " << request.dir << "/" << stem << ".png and .svg\n";
  return 0;
}

std::string self_executable(const char* argv0) {
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) return self.string();
  const std::string name = argv0 != nullptr ? argv0 : "hcareplay";
  const std::string found = find_program(name);
  return fs::absolute(found.empty() ? name : found, ec).string();
}

}  // namespace hcaemu::replay
