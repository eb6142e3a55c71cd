#include "replay/gnuplot.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <fstream>

#include "replay/subprocess.h"

namespace hcaemu::replay {

namespace {

constexpr const char* kSize = "size 1000,600";

std::string trimmed(const std::string& text) {
  const size_t first = text.find_first_not_of(" \n");
  return first == std::string::npos ? std::string() : text.substr(first, text.find_last_not_of(" \n") + 1 - first);
}

// Everything the child writes into `fd` until it closes it.
std::string read_all(int fd) {
  std::string text;
  char buffer[4096];
  while (true) {
    const ssize_t n = read(fd, buffer, sizeof buffer);
    if (n > 0) {
      text.append(buffer, size_t(n));
    } else if (n == 0 || errno != EINTR) {
      return text;
    }
  }
}

}  // namespace

std::string GnuplotScript::text() const {
  std::string out = "# " + name + ".gp, written by hcareplay.\n";
  for (const std::string& line : comments) out += "# " + line + "\n";
  out += "# `gnuplot " + name + ".gp` in this directory draws " + name + ".png and " + name + ".svg again.\n";
  // noenhanced: names such as send_imm are shown as they are, not with a subscript.
  out += std::string("set terminal pngcairo noenhanced ") + kSize + "\n";
  out += "set output " + gnuplot_string(name + ".png") + "\n";
  for (const std::string& line : settings) out += line + "\n";
  out += "plot ";
  for (size_t i = 0; i < plots.size(); ++i) out += (i == 0 ? "" : ", \\\n     ") + plots[i];
  out += "\n";
  // gnuplot 5.4's svg terminal writes no date, only its version: the same script gives the same
  // bytes (and so does pngcairo, which writes no tIME chunk).
  out += std::string("set terminal svg noenhanced ") + kSize + " background rgb 'white'\n";
  out += "set output " + gnuplot_string(name + ".svg") + "\n";
  out += "replot\nunset output\n";
  return out;
}

std::string gnuplot_string(std::string_view text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

std::string gnuplot_number(double value) {
  char text[40];
  std::snprintf(text, sizeof text, "%.12g", value);
  return text;
}

bool write_text_file(const std::string& path, const std::string& text, std::string* error) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (out) return true;
  *error = "cannot write " + path;
  return false;
}

bool run_gnuplot(const std::string& dir, const std::string& script, std::string* error, std::string* warnings) {
  const std::string gnuplot = find_program("gnuplot");
  if (gnuplot.empty()) {
    *error = kGnuplotMissing;
    return false;
  }
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) {
    *error = "cannot run gnuplot: no pipe";
    return false;
  }
  SpawnSpec spec;
  spec.argv = {gnuplot, script};
  spec.cwd = dir;
  spec.stderr_fd = pipe_fds[1];
  const pid_t pid = spawn_process(spec, error);
  close(pipe_fds[1]);
  const std::string said = trimmed(read_all(pipe_fds[0]));
  close(pipe_fds[0]);
  if (pid < 0) return false;
  const int status = wait_process(pid);
  if (status != 0) {
    *error = "gnuplot " + script + " (in " + dir + ") failed with status " + std::to_string(status) +
             (said.empty() ? std::string() : ":\n" + said);
    return false;
  }
  *warnings = said;
  return true;
}

}  // namespace hcaemu::replay
