#include "replay/point_runner.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <optional>
#include <thread>

#include "replay/subprocess.h"

namespace hcaemu::replay {

namespace {

using Clock = std::chrono::steady_clock;

// How often the running points are asked whether they ended. Polling only our own pids (and
// not waitpid(-1)) leaves any other child of the process to its owner; a point runs for far
// longer than this.
constexpr auto kPollInterval = std::chrono::milliseconds(20);

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

std::string one_decimal(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f", v);
  return text;
}

class Runner {
 public:
  Runner(const std::vector<PointJob>& jobs, size_t parallel, std::ostream* progress)
      : jobs_(jobs), parallel_(parallel == 0 ? 1 : parallel), progress_(progress), outcomes_(jobs.size()) {}

  std::vector<PointOutcome> run() {
    while (finished_ < jobs_.size()) {
      while (running_.size() < parallel_ && next_ < jobs_.size()) start(next_++);
      if (!reap_ended()) std::this_thread::sleep_for(kPollInterval);
    }
    return outcomes_;
  }

 private:
  struct Running {
    size_t job;
    pid_t pid;
    Clock::time_point start;
  };

  void start(size_t job) {
    const PointJob& j = jobs_[job];
    outcomes_[job].name = j.name;
    const int log = open(j.log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (log < 0) {
      finish(job, 127, 0, "cannot write " + j.log_path + ": " + std::strerror(errno));
      return;
    }
    SpawnSpec spec;
    spec.argv = j.argv;
    spec.stdout_fd = spec.stderr_fd = log;
    std::string error;
    const pid_t pid = spawn_process(spec, &error);
    close(log);
    if (pid < 0) {
      finish(job, 127, 0, error);
      return;
    }
    running_.push_back({job, pid, Clock::now()});
  }

  // Records every point that has ended; false when none had.
  bool reap_ended() {
    bool any = false;
    for (size_t i = 0; i < running_.size();) {
      const std::optional<int> status = poll_process(running_[i].pid);
      if (!status) {
        ++i;
        continue;
      }
      finish(running_[i].job, *status, seconds_since(running_[i].start), {});
      running_.erase(running_.begin() + std::ptrdiff_t(i));
      any = true;
    }
    return any;
  }

  void finish(size_t job, int status, double seconds, std::string error) {
    PointOutcome& o = outcomes_[job];
    o.exit_status = status;
    o.seconds = seconds;
    o.error = std::move(error);
    ++finished_;
    failed_ += status != 0;
    if (progress_ != nullptr) report(o);
  }

  void report(const PointOutcome& o) {
    std::ostream& out = *progress_;
    out << "hcareplay sweep: " << o.name;
    if (!o.error.empty())
      out << " could not start (" << o.error << ")";
    else if (o.exit_status != 0)
      out << " failed (exit " << o.exit_status << ", " << one_decimal(o.seconds) << " s; see "
          << jobs_[index_of(o)].log_path << ")";
    else
      out << " done (" << one_decimal(o.seconds) << " s)";
    out << "; " << finished_ << "/" << jobs_.size() << " points, " << failed_ << " failed";
    if (finished_ < jobs_.size()) {
      const double per_point = seconds_since(start_) / double(finished_);
      out << ", about " << std::llround(per_point * double(jobs_.size() - finished_)) << " s to go";
    }
    out << "\n" << std::flush;
  }

  size_t index_of(const PointOutcome& o) const { return size_t(&o - outcomes_.data()); }

  const std::vector<PointJob>& jobs_;
  const size_t parallel_;
  std::ostream* progress_;
  std::vector<PointOutcome> outcomes_;
  std::vector<Running> running_;
  size_t next_ = 0, finished_ = 0, failed_ = 0;
  const Clock::time_point start_ = Clock::now();
};

}  // namespace

std::vector<PointOutcome> run_points(const std::vector<PointJob>& jobs, size_t parallel, std::ostream* progress) {
  return Runner(jobs, parallel, progress).run();
}

}  // namespace hcaemu::replay
