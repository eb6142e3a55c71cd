// Topology files: defaults, leaf-spine, explicit switches and links, and errors that name the place.
#include "fabric/topology.h"

#include <gtest/gtest.h>

namespace hcaemu::fabric {
namespace {

std::string error_of(const std::string& text, uint32_t hosts = 2) {
  std::string error;
  EXPECT_FALSE(parse_topology(text, hosts, &error).has_value()) << text;
  return error;
}

TEST(FabricTopology, DefaultsToOneSwitch) {
  std::string error;
  const auto t = parse_topology(R"({"format": "hcareplay-topology/1"})", 4, &error);
  ASSERT_TRUE(t) << error;
  EXPECT_EQ(t->switch_names.size(), 1u);
  EXPECT_EQ(t->links.size(), 4u);
  EXPECT_EQ(t->links[0].gbps, 100.0);
  EXPECT_EQ(t->describe(), "4 hosts, 1 switch, 4 links at 100 Gb/s");
}

TEST(FabricTopology, LeafSpineAndSwitchSettings) {
  std::string error;
  const auto t = parse_topology(R"({"format": "hcareplay-topology/1", "link": {"gbps": 25, "propagation_ns": 500},
      "leaf_spine": {"leaves": 2, "spines": 3, "hosts_per_leaf": 4, "uplink_gbps": 100},
      "switch": {"buffer_bytes": 4000000, "shared_buffer": false, "ecn": {"kmin_bytes": 10000, "kmax_bytes": 100000, "pmax": 0.2},
                 "pfc": {"enabled": false}}})", 6, &error);
  ASSERT_TRUE(t) << error;
  EXPECT_EQ(t->switch_names.size(), 5u);
  EXPECT_EQ(t->links.size(), 6u + 6u);  // hosts 6 and 7 of the second leaf are not in the workload
  EXPECT_EQ(t->switch_config.buffer_bytes, 4'000'000u);
  EXPECT_FALSE(t->switch_config.shared_buffer);
  EXPECT_FALSE(t->switch_config.pfc.enabled);
  EXPECT_EQ(t->switch_config.ecn.pmax, 0.2);
  EXPECT_EQ(t->describe(), "6 hosts, 5 switches, 12 links at 25/100 Gb/s");
}

TEST(FabricTopology, ExplicitSwitchesAndLinks) {
  std::string error;
  const auto t = parse_topology(R"({"format": "hcareplay-topology/1", "switches": ["tor", "core"],
      "links": [{"a": "host0", "b": "tor"}, {"a": "tor", "b": "core", "gbps": 400}, {"a": "host1", "b": "core"}]})", 2, &error);
  ASSERT_TRUE(t) << error;
  EXPECT_EQ(t->links[1].gbps, 400.0);
}

TEST(FabricTopology, ErrorsNameThePlace) {
  EXPECT_EQ(error_of(R"({"format": "hcareplay-topology/1", "swtich": {}})"), "topology.swtich: unknown key");
  EXPECT_EQ(error_of(R"({"format": "x"})"), "topology.format: must be \"hcareplay-topology/1\"");
  EXPECT_EQ(error_of(R"({"format": "hcareplay-topology/1", "switch": {"ecn": {"kmin_bytes": 10, "kmax_bytes": 5}}})"),
            "topology: ecn.kmax_bytes must be above ecn.kmin_bytes");
  EXPECT_EQ(error_of(R"({"format": "hcareplay-topology/1", "switches": ["s"], "links": [{"a": "host0", "b": "s"}]})"),
            "topology: host1 has no link");
  EXPECT_EQ(error_of(R"({"format": "hcareplay-topology/1", "switches": ["s"], "links": [{"a": "host5", "b": "s"}]})"),
            "topology.links[0].a: \"host5\": the workload has 2 hosts");
  EXPECT_EQ(error_of(R"({"format": "hcareplay-topology/1", "switches": ["s", "t"], "links": [{"a": "host0", "b": "s"}, {"a": "host1", "b": "t"}]})"),
            "topology: host1 cannot reach host0");
  EXPECT_EQ(error_of(R"({"format": "hcareplay-topology/1", "link": {"gbps": -1}})"), "topology.link.gbps: must be a number above 0");
  EXPECT_EQ(error_of(R"({"format": "hcareplay-topology/1", "leaf_spine": {"leaves": 1, "spines": 1, "hosts_per_leaf": 1}})"),
            "topology.leaf_spine: 1 leaves of 1 hosts hold fewer than the workload's 2 hosts");
  EXPECT_NE(error_of("{"), "");
}

TEST(FabricTopology, ParametersByName) {
  Topology t = single_switch(2, 100, 100);
  std::string error;
  EXPECT_TRUE(set_parameter(t, "ecn.kmax_bytes", "300000", &error)) << error;
  EXPECT_EQ(t.switch_config.ecn.kmax_bytes, 300000u);
  EXPECT_TRUE(set_parameter(t, "link.gbps", "25", &error));
  EXPECT_EQ(t.links[1].gbps, 25.0);
  EXPECT_TRUE(set_parameter(t, "pfc.enabled", "false", &error));
  EXPECT_FALSE(t.switch_config.pfc.enabled);
  EXPECT_FALSE(set_parameter(t, "ecn.kmax", "1", &error));
  EXPECT_EQ(error, "unknown topology parameter ecn.kmax");
  EXPECT_FALSE(set_parameter(t, "ecn.pmax", "lots", &error));
  EXPECT_EQ(error, "ecn.pmax: \"lots\" is not a number, 0 or more");
}

}  // namespace
}  // namespace hcaemu::fabric
