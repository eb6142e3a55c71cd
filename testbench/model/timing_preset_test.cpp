// Timing presets: the built-ins, the presets file that must agree with them and cite a source for
// every value, and the loader's errors.
#include "model/timing_preset.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>

using namespace hcaemu::model;
using nlohmann::json;

namespace {

const std::string kPresetsFile = std::string(HCAEMU_SOURCE_DIR) + "/config/timing-presets.json";

TEST(TimingPreset, DefaultIsTheConnectX6DxPreset) {
  const auto p = builtin_timing_preset("connectx6dx-100g");
  ASSERT_TRUE(p);
  EXPECT_EQ(*p, TimingPreset{});
  EXPECT_EQ(p->pcie_gen, 4u);
  EXPECT_EQ(p->pcie_width, 16u);
  EXPECT_DOUBLE_EQ(p->link_gbps, 100.0);
  EXPECT_EQ(validate_timing_preset(*p), "");
}

TEST(TimingPreset, Builtins) {
  std::set<std::string> names;
  for (const auto& p : builtin_timing_presets()) {
    names.insert(p.name);
    EXPECT_EQ(validate_timing_preset(p), "") << p.name;
    EXPECT_FALSE(p.description.empty()) << p.name;
  }
  EXPECT_EQ(names, (std::set<std::string>{"connectx6dx-100g", "connectx5-100g"}));
  EXPECT_EQ(builtin_timing_preset("connectx5-100g")->pcie_gen, 3u);
  EXPECT_FALSE(builtin_timing_preset("connectx-6dx"));
}

TEST(TimingPreset, Helpers) {
  TimingPreset p;
  EXPECT_DOUBLE_EQ(p.cycles_ns(10), 10.0);
  p.hca_clock_mhz = 250;
  EXPECT_DOUBLE_EQ(p.cycles_ns(10), 40.0);
  // A minimum Ethernet frame (60 B without FCS) takes 84 byte times: 6.72 ns at 100 Gb/s.
  EXPECT_DOUBLE_EQ(p.wire_ns(60), 6.72);
  p.link_gbps = 25;
  EXPECT_DOUBLE_EQ(p.wire_ns(60), 26.88);
  const hcaemu::pcie::LinkConfig link = TimingPreset{}.link_config();
  EXPECT_EQ(link.gen, 4);
  EXPECT_EQ(link.width, 16);
  EXPECT_DOUBLE_EQ(link.one_way_latency_ns, 250.0);
}

TEST(TimingPreset, ValidateNamesTheKey) {
  TimingPreset p;
  p.pcie_width = 12;
  EXPECT_NE(validate_timing_preset(p).find("pcie_width"), std::string::npos);
  p = {};
  p.hca_clock_mhz = 0;
  EXPECT_NE(validate_timing_preset(p).find("hca_clock_mhz"), std::string::npos);
  p = {};
  p.pcie_gen = 6;
  EXPECT_NE(validate_timing_preset(p).find("pcie_gen"), std::string::npos);
  p = {};
  p.propagation_ns = std::nan("");
  EXPECT_NE(validate_timing_preset(p).find("propagation_ns"), std::string::npos);
}

TEST(TimingPresetFile, AgreesWithTheBuiltins) {
  std::string error;
  const auto from_file = load_timing_presets(kPresetsFile, &error);
  ASSERT_FALSE(from_file.empty()) << error;
  const auto builtins = builtin_timing_presets();
  ASSERT_EQ(from_file.size(), builtins.size());
  for (const auto& b : builtins) {
    const auto it = std::find_if(from_file.begin(), from_file.end(), [&](const auto& f) { return f.name == b.name; });
    ASSERT_NE(it, from_file.end()) << b.name << " is not in " << kPresetsFile;
    EXPECT_EQ(*it, b) << b.name << " differs between " << kPresetsFile << " and builtin_timing_preset()";
  }
}

TEST(TimingPresetFile, CitesASourceForEveryValue) {
  std::ifstream in(kPresetsFile);
  const json root = json::parse(in);
  for (const json& p : root.at("presets")) {
    const std::string name = p.at("name");
    ASSERT_TRUE(p.contains("sources")) << name;
    size_t values = 0;
    for (auto it = p.begin(); it != p.end(); ++it) {
      if (it.key() == "name" || it.key() == "description" || it.key() == "sources") continue;
      ++values;
      ASSERT_TRUE(p.at("sources").contains(it.key())) << name << ": no source for " << it.key();
      EXPECT_GT(p.at("sources").at(it.key()).get<std::string>().size(), 10u) << name << ": " << it.key();
    }
    EXPECT_EQ(values, 13u) << name << " gives every value";
  }
}

class TimingPresetLoader : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = (std::filesystem::temp_directory_path() /
             ("hcaemu_presets_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) + "_" +
              std::to_string(::getpid()) + ".json"))
                .string();
  }
  void TearDown() override { std::filesystem::remove(path_); }

  std::vector<TimingPreset> load(const std::string& text, std::string* error) {
    std::ofstream(path_) << text;
    return load_timing_presets(path_, error);
  }
  std::string error_of(const std::string& text) {
    std::string error;
    EXPECT_TRUE(load(text, &error).empty()) << text;
    return error;
  }

  std::string path_;
};

TEST_F(TimingPresetLoader, BaseGivesTheRest) {
  std::string error;
  const auto presets = load(R"({"presets": [
      {"name": "far", "base": "connectx5-100g", "propagation_ns": 1000, "sources": {"propagation_ns": "200 m"}},
      {"name": "far-slow", "base": "far", "hca_clock_mhz": 500, "description": "half clock"}]})",
                            &error);
  ASSERT_EQ(presets.size(), 2u) << error;
  EXPECT_EQ(presets[0].name, "far");
  EXPECT_EQ(presets[0].pcie_gen, 3u);
  EXPECT_DOUBLE_EQ(presets[0].propagation_ns, 1000);
  EXPECT_EQ(presets[0].description, builtin_timing_preset("connectx5-100g")->description);
  EXPECT_DOUBLE_EQ(presets[1].propagation_ns, 1000) << "from the earlier preset";
  EXPECT_DOUBLE_EQ(presets[1].hca_clock_mhz, 500);
  EXPECT_EQ(presets[1].description, "half clock");
}

TEST_F(TimingPresetLoader, ErrorsNameFileAndKey) {
  auto has = [&](const std::string& text, const std::string& what) {
    const std::string error = error_of(text);
    EXPECT_NE(error.find(path_ + ": "), std::string::npos) << error;
    EXPECT_NE(error.find(what), std::string::npos) << error;
  };
  has(R"({"presets": [{"name": "a", "base": "connectx5-100g", "link_gbs": 25}]})",
      R"(preset "a": unknown key "link_gbs")");
  has(R"({"presets": [{"name": "a", "hca_clock_mhz": 1000}]})", R"(preset "a": "doorbell_cycles" is missing)");
  has(R"({"presets": [{"name": "a", "base": "connectx5-100g", "cqe_cycles": -1}]})",
      R"("cqe_cycles" must be a non-negative integer)");
  has(R"({"presets": [{"name": "a", "base": "connectx5-100g", "cqe_cycles": 1.5}]})",
      R"("cqe_cycles" must be a non-negative integer)");
  has(R"({"presets": [{"name": "a", "base": "connectx5-100g", "link_gbps": "100"}]})", R"("link_gbps" must be a number)");
  has(R"({"presets": [{"name": "a", "base": "connectx5-100g", "pcie_width": 12}]})", R"("pcie_width" must be 1, 2, 4)");
  has(R"({"presets": [{"name": "a", "base": "connectx5-100g", "link_gbps": 0}]})", R"("link_gbps" must be in)");
  has(R"({"presets": [{"name": "a", "base": "nope"}]})", R"(unknown base "nope")");
  has(R"({"presets": [{"name": "a", "base": "connectx5-100g"}, {"name": "a", "base": "connectx5-100g"}]})",
      R"(preset "a" is defined twice)");
  has(R"({"presets": [{"base": "connectx5-100g"}]})", R"(presets[0]: has no "name")");
  has(R"({"presets": [{"name": "a", "base": "connectx5-100g", "sources": {"cqe": "x"}}]})",
      R"(sources: unknown key "cqe")");
  has(R"({"presets": []})", R"("presets" must be a non-empty array)");
  has(R"({"presets": [], "extra": 1})", R"(unknown key "extra")");
  has(R"([1, 2])", "the top level must be an object");
  has(R"({"presets": [)", "parse error");
  std::filesystem::remove(path_);
  std::string error;
  EXPECT_TRUE(load_timing_presets(path_, &error).empty());
  EXPECT_NE(error.find("cannot open"), std::string::npos) << error;
}

}  // namespace
