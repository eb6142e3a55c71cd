#include "replay/subprocess.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <sstream>

namespace hcaemu::replay {

namespace {

// posix_spawn's file actions: stdin from /dev/null, stdout and stderr to the given fds or
// /dev/null, the working directory.
class FileActions {
 public:
  explicit FileActions(const SpawnSpec& spec) {
    posix_spawn_file_actions_init(&actions_);
    posix_spawn_file_actions_addopen(&actions_, 0, "/dev/null", O_RDONLY, 0);
    redirect(1, spec.stdout_fd);
    redirect(2, spec.stderr_fd);
    // glibc >= 2.29; the child changes directory before exec, so our own stays put.
    if (!spec.cwd.empty()) posix_spawn_file_actions_addchdir_np(&actions_, spec.cwd.c_str());
  }
  ~FileActions() { posix_spawn_file_actions_destroy(&actions_); }
  FileActions(const FileActions&) = delete;
  FileActions& operator=(const FileActions&) = delete;
  const posix_spawn_file_actions_t* get() const { return &actions_; }

 private:
  void redirect(int target, int fd) {
    if (fd >= 0)
      posix_spawn_file_actions_adddup2(&actions_, fd, target);
    else
      posix_spawn_file_actions_addopen(&actions_, target, "/dev/null", O_WRONLY, 0);
  }
  posix_spawn_file_actions_t actions_;
};

int exit_status(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 255;
}

}  // namespace

pid_t spawn_process(const SpawnSpec& spec, std::string* error) {
  if (spec.argv.empty()) {
    *error = "no program to start";
    return -1;
  }
  std::vector<char*> argv;
  for (const std::string& arg : spec.argv) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  const FileActions actions(spec);
  pid_t pid = -1;
  // glibc reports a failed exec (missing program, bad cwd) as posix_spawn's result.
  const int rc = posix_spawn(&pid, argv[0], actions.get(), nullptr, argv.data(), environ);
  if (rc != 0) {
    *error = "cannot start " + spec.argv[0] + ": " + std::strerror(rc);
    return -1;
  }
  return pid;
}

int wait_process(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return 255;
  return exit_status(status);
}

std::optional<int> poll_process(pid_t pid) {
  int status = 0;
  pid_t done = 0;
  do {
    done = waitpid(pid, &status, WNOHANG);
  } while (done < 0 && errno == EINTR);
  if (done == 0) return std::nullopt;
  if (done < 0) return 255;
  return exit_status(status);
}

namespace {
bool executable_file(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(path.c_str(), X_OK) == 0;
}
}  // namespace

std::string find_program(const std::string& name) {
  if (name.find('/') != std::string::npos) return executable_file(name) ? name : std::string();
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path != nullptr ? path : "/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    std::string candidate = (dir.empty() ? std::string(".") : dir) + "/" + name;
    if (executable_file(candidate)) return candidate;
  }
  return {};
}

}  // namespace hcaemu::replay
