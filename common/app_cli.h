#pragma once
// What every command-line front end (apps/) does the same way: parse the options with
// Boost.Program_options, answer --help and --version, and keep SIGINT/SIGTERM for one waiting
// thread. Header-only: only the apps, which link Boost::program_options, include it.
#include <boost/program_options.hpp>

#include <pthread.h>

#include <csignal>
#include <iostream>
#include <string>

namespace hcaemu {

// Parses into `vm`; returns the exit code to stop with (0 after --help or --version, 2 on an
// error, said on stderr as "PROGRAM: ..."), or -1 to go on.
inline int parse_app_options(const char* program, const std::string& version, int argc, char** argv,
                             const boost::program_options::options_description& desc,
                             boost::program_options::variables_map& vm) {
  namespace po = boost::program_options;
  try {
    po::store(po::parse_command_line(argc, argv, desc), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    std::cerr << program << ": " << e.what() << "\n(see " << program << " --help)\n";
    return 2;
  }
  if (vm.count("help")) {
    std::cout << desc << "\n";
    return 0;
  }
  if (vm.count("version")) {
    std::cout << program << " " << version << "\n";
    return 0;
  }
  return -1;
}

// Blocks SIGINT and SIGTERM in the calling thread and every thread it starts later, so they reach
// only the one that sigwait()s for the returned set; SIGPIPE is ignored (a peer that went away is
// an error return, not a death).
inline sigset_t block_stop_signals() {
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  std::signal(SIGPIPE, SIG_IGN);
  return stop_signals;
}

}  // namespace hcaemu
