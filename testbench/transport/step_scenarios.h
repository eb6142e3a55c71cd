#pragma once
// What the tests of the three connected-service machines share: a scenario (a name and what it
// does to a bench), the recorder of the steps a run enters, and the checks that the scenarios
// together enter every step and that every step and event has a name.
#include <gtest/gtest.h>

#include <functional>
#include <ostream>
#include <set>
#include <string>
#include <vector>

namespace hcaemu::transport::rc::testing_steps {

template <typename Bench>
struct Scenario {
  const char* name;
  std::function<void(Bench&)> run;
};
template <typename Bench>
void PrintTo(const Scenario<Bench>& s, std::ostream* os) {
  *os << s.name;
}
template <typename Bench>
std::string scenario_name(const testing::TestParamInfo<Scenario<Bench>>& info) {
  return info.param.name;
}

// The steps of the last run (path) and of every run it recorded (seen, when set).
template <typename Step>
struct StepRecorder {
  explicit StepRecorder(const char* (*step_name)(Step)) : name(step_name) {}
  const char* (*name)(Step);
  std::vector<Step> path;
  std::set<Step>* seen = nullptr;

  std::function<void(Step)> hook() {
    return [this](Step s) {
      path.push_back(s);
      if (seen != nullptr) seen->insert(s);
    };
  }
  // The last run went through `steps` and then kDone (compared by name, so a failure reads).
  void expect(std::vector<Step> steps) const {
    steps.push_back(Step::kDone);
    std::vector<std::string> got, want;
    for (Step s : path) got.push_back(name(s));
    for (Step s : steps) want.push_back(name(s));
    EXPECT_EQ(got, want);
  }
};

// Every Step is entered by some scenario (Bench has a StepRecorder `steps`).
template <typename Bench, typename Step>
void expect_every_step_entered(const std::vector<Scenario<Bench>>& scenarios, const char* (*name)(Step)) {
  std::set<Step> seen;
  for (const Scenario<Bench>& s : scenarios) {
    Bench bench;
    bench.steps.seen = &seen;
    s.run(bench);
  }
  for (size_t i = 0; i < size_t(Step::kCount); ++i)
    EXPECT_TRUE(seen.count(Step(i)) != 0) << name(Step(i)) << " is never entered";
}

template <typename Step, typename Event>
void expect_names(const char* (*step)(Step), const char* (*event)(Event)) {
  for (size_t i = 0; i < size_t(Step::kCount); ++i) EXPECT_STRNE(step(Step(i)), "?");
  for (size_t i = 0; i < size_t(Event::kCount); ++i) EXPECT_STRNE(event(Event(i)), "?");
}

}  // namespace hcaemu::transport::rc::testing_steps
