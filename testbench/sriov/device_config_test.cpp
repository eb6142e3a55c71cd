#include "sriov/device_config.h"

#include <gtest/gtest.h>

#include <fstream>

namespace hcaemu::sriov {
namespace {

class DeviceConfigTest : public ::testing::Test {
 protected:
  std::filesystem::path write(const std::string& text) {
    auto path = std::filesystem::temp_directory_path() / ("hcaemu-config-" + std::to_string(::getpid()) + ".json");
    std::ofstream(path) << text;
    paths_.push_back(path);
    return path;
  }
  void TearDown() override {
    for (auto& p : paths_) std::filesystem::remove(p);
  }
  std::string error_of(const std::string& text) {
    try {
      load_device_config(write(text));
    } catch (const std::runtime_error& e) {
      return e.what();
    }
    return "";
  }
  std::vector<std::filesystem::path> paths_;
};

TEST_F(DeviceConfigTest, DefaultsAreAConnectX6Dx) {
  DeviceConfig c;
  EXPECT_NO_THROW(c.validate());
  EXPECT_EQ(c.vendor_id, 0x15b3);
  EXPECT_EQ(c.pf_device_id, 0x101d);
  EXPECT_EQ(c.vf_device_id, 0x101e);
  EXPECT_EQ(c.link_generation, 4);
}

TEST_F(DeviceConfigTest, FileOverridesOnlyWhatItNames) {
  DeviceConfig c = load_device_config(write(
      R"({"firmware":"22.36.1010","total_vfs":4,"vf":{"msix_vectors":8},"pcie":{"generation":3},"serial_number":"0x1234"})"));
  EXPECT_EQ(c.firmware.major, 22);
  EXPECT_EQ(c.firmware.minor, 36);
  EXPECT_EQ(c.firmware.subminor, 1010);
  EXPECT_EQ(c.total_vfs, 4);
  EXPECT_EQ(c.vf.msix_vectors, 8u);
  EXPECT_EQ(c.vf.bar0_size, 2ull << 20) << "untouched default";
  EXPECT_EQ(c.vf.translation_entries, uint64_t(1) << 22) << "32 MiB of translation tables a VF";
  EXPECT_EQ(c.link_generation, 3);
  EXPECT_EQ(c.serial_number, 0x1234u);
}

TEST_F(DeviceConfigTest, PrintedConfigReadsBackTheSame) {
  DeviceConfig c;
  c.total_vfs = 3;
  c.firmware = {1, 2, 3};
  DeviceConfig back = load_device_config(write(to_json(c)));
  EXPECT_EQ(to_json(back), to_json(c));
}

TEST_F(DeviceConfigTest, BadInputNamesTheKey) {
  EXPECT_NE(error_of(R"({"totl_vfs":2})").find("totl_vfs"), std::string::npos);
  EXPECT_NE(error_of(R"({"total_vfs":500})").find("total_vfs"), std::string::npos);
  EXPECT_NE(error_of(R"({"total_vfs":-1})").find("total_vfs"), std::string::npos);
  EXPECT_NE(error_of(R"({"pf":{"bar0_mib":3}})").find("bar0_mib"), std::string::npos);
  EXPECT_NE(error_of(R"({"pf":{"msix_vectors":0}})").find("msix_vectors"), std::string::npos);
  EXPECT_NE(error_of(R"({"vf":{"translation_entries":100}})").find("vf.translation_entries"), std::string::npos);
  EXPECT_NE(error_of(R"({"pcie":{"width":3}})").find("width"), std::string::npos);
  EXPECT_NE(error_of(R"({"firmware":"22.x"})").find("firmware"), std::string::npos);
  EXPECT_NE(error_of(R"({"preset":"connectx-9"})").find("preset"), std::string::npos);
  EXPECT_NE(error_of(R"({"pf": 4})").find("pf"), std::string::npos);
  EXPECT_NE(error_of("[1,2]"), "");
  EXPECT_NE(error_of("{ not json"), "");
  EXPECT_NE(error_of(R"({"vendor_id": 70000})").find("vendor_id"), std::string::npos);
}

TEST_F(DeviceConfigTest, FunctionMacsFollowTheBase) {
  DeviceConfig c = load_device_config(write(R"({"mac_base":"02:00:00:00:00:fe"})"));
  EXPECT_EQ(c.function_mac(0), (std::array<uint8_t, 6>{2, 0, 0, 0, 0, 0xfe}));
  EXPECT_EQ(c.function_mac(3), (std::array<uint8_t, 6>{2, 0, 0, 0, 1, 1})) << "carries into the next octet";
  EXPECT_NE(error_of(R"({"mac_base":"03:00:00:00:00:00"})").find("unicast"), std::string::npos);
  EXPECT_NE(error_of(R"({"mac_base":"02:00:00:00:00"})").find("mac_base"), std::string::npos);
}

TEST_F(DeviceConfigTest, SpoofCheckIsOnAndTrustOffForEveryVfUnlessSet) {
  DeviceConfig c = load_device_config(write(R"({"total_vfs":4,"vfs":{"2":{"spoofchk":false},"3":{"trust":true}}})"));
  EXPECT_TRUE(c.vf_settings(0).spoofchk);
  EXPECT_FALSE(c.vf_settings(0).trust);
  EXPECT_FALSE(c.vf_settings(2).spoofchk);
  EXPECT_TRUE(c.vf_settings(3).spoofchk);
  EXPECT_TRUE(c.vf_settings(3).trust);
  DeviceConfig back = load_device_config(write(to_json(c)));
  EXPECT_FALSE(back.vf_settings(2).spoofchk);
  EXPECT_TRUE(back.vf_settings(3).trust);
  EXPECT_NE(error_of(R"({"total_vfs":2,"vfs":{"5":{"spoofchk":false}}})").find("beyond total_vfs"), std::string::npos);
  EXPECT_NE(error_of(R"({"vfs":{"x":{}}})").find("VF numbers"), std::string::npos);
  EXPECT_NE(error_of(R"({"vfs":{"1":{"spoofchk":"no"}}})").find("spoofchk"), std::string::npos);
  EXPECT_NE(error_of(R"({"vfs":{"1":{"trust":1}}})").find("trust"), std::string::npos);
  EXPECT_NE(error_of(R"({"vfs":{"1":{"rate":1}}})").find("rate"), std::string::npos);
}

// Issue 15: transmit rates per VF in Mb/s, as ip link set PF vf N max_tx_rate/min_tx_rate.
TEST_F(DeviceConfigTest, VfTransmitRates) {
  DeviceConfig c = load_device_config(write(R"({"vfs":{"0":{"max_tx_rate":10000},"1":{"max_tx_rate":30000,"min_tx_rate":20000}}})"));
  EXPECT_EQ(c.vf_settings(0).max_tx_rate_mbps, 10000u);
  EXPECT_EQ(c.vf_settings(0).min_tx_rate_mbps, 0u);
  EXPECT_EQ(c.vf_settings(1).min_tx_rate_mbps, 20000u);
  EXPECT_EQ(c.vf_settings(2).max_tx_rate_mbps, 0u) << "none unless set";
  DeviceConfig back = load_device_config(write(to_json(c)));
  EXPECT_EQ(back.vf_settings(1).max_tx_rate_mbps, 30000u);
  EXPECT_NE(error_of(R"({"vfs":{"1":{"max_tx_rate":-5}}})").find("max_tx_rate"), std::string::npos);
  EXPECT_NE(error_of(R"({"vfs":{"1":{"max_tx_rate":2000000}}})").find("max_tx_rate"), std::string::npos);
  EXPECT_NE(error_of(R"({"vfs":{"1":{"max_tx_rate":100,"min_tx_rate":200}}})").find("min_tx_rate above"), std::string::npos);
}

// Issue 15: the uplink in the configuration file, as --uplink / --uplink-faults / --uplink-pcap.
TEST_F(DeviceConfigTest, UplinkFromTheFile) {
  DeviceConfig c = load_device_config(
      write(R"({"uplink":{"endpoint":"stream,listen=unix:/tmp/u.sock","faults":"loss=1%","pcap":"/tmp/u.pcap"}})"));
  EXPECT_EQ(c.uplink.endpoint, "stream,listen=unix:/tmp/u.sock");
  EXPECT_EQ(c.uplink.faults, "loss=1%");
  EXPECT_EQ(c.uplink.pcap, "/tmp/u.pcap");
  EXPECT_EQ(load_device_config(write(to_json(c))).uplink.faults, "loss=1%");
  EXPECT_TRUE(load_device_config(write("{}")).uplink.endpoint.empty()) << "none by default";
  EXPECT_NE(error_of(R"({"uplink":{"faults":"loss=1%"}})").find("no endpoint"), std::string::npos);
  EXPECT_NE(error_of(R"({"uplink":{"endpoint":5}})").find("uplink.endpoint"), std::string::npos);
  EXPECT_NE(error_of(R"({"uplink":{"endpoint":"x","speed":1}})").find("speed"), std::string::npos);
}

// Issue 15: the port's traffic classes, as mlnx_qos sets them.
TEST_F(DeviceConfigTest, PortTrafficClasses) {
  DeviceConfig c = load_device_config(write(
      R"({"port_qos":{"trust":"dscp","prio_tc":[0,0,0,1,0,2,0,0],"tsa":["ets","ets","strict","ets","ets","ets","ets","ets"],"tcbw":[40,60,0,0,0,0,0,0]}})"));
  EXPECT_TRUE(c.port_tc.trust_dscp);
  EXPECT_EQ(c.port_tc.prio_tc[5], 2);
  EXPECT_EQ(c.port_tc.tsa[2], PortTcConfig::Tsa::kStrict);
  EXPECT_EQ(c.port_tc.tcbw[1], 60);
  EXPECT_EQ(load_device_config(write(to_json(c))).port_tc, c.port_tc) << "round trip";
  EXPECT_FALSE(load_device_config(write("{}")).port_tc.classes()) << "one class by default";
  EXPECT_NE(error_of(R"({"port_qos":{"tcbw":[50,0,0,0,0,0,0,0]}})").find("add up to 50"), std::string::npos);
  EXPECT_NE(error_of(R"({"port_qos":{"prio_tc":[0,9,0,0,0,0,0,0]}})").find("classes 0..7"), std::string::npos);
  EXPECT_NE(error_of(R"({"port_qos":{"prio_tc":[0,1]}})").find("array of 8"), std::string::npos);
  EXPECT_NE(error_of(R"({"port_qos":{"trust":"cos"}})").find("trust"), std::string::npos);
  EXPECT_NE(error_of(R"({"port_qos":{"tsa":["wfq","ets","ets","ets","ets","ets","ets","ets"]}})").find("tsa"), std::string::npos);
}

// Issue 14: per-function object quotas, as powers of two, within what the device offers.
TEST_F(DeviceConfigTest, ObjectQuotasPerFunction) {
  DeviceConfig c = load_device_config(write(R"({"vf":{"log_max_qp":12,"log_max_cq":10,"log_max_mkey":11,"log_max_srq":9}})"));
  EXPECT_EQ(c.vf.quotas.log_max_qp, 12u);
  EXPECT_EQ(c.vf.quotas.log_max_srq, 9u);
  EXPECT_EQ(c.pf.quotas.log_max_qp, 17u) << "the device's maxima by default";
  DeviceConfig back = load_device_config(write(to_json(c)));
  EXPECT_EQ(back.vf.quotas.log_max_cq, 10u);
  EXPECT_EQ(back.vf.quotas.log_max_mkey, 11u);
  EXPECT_NE(error_of(R"({"vf":{"log_max_qp":18}})").find("log_max_qp"), std::string::npos);
  EXPECT_NE(error_of(R"({"pf":{"log_max_cq":3}})").find("log_max_cq"), std::string::npos);
}

// Issue 15: a second physical port is a second PF with its own addresses, VF settings, traffic
// classes and uplink; what it does not name is port 0's (shape, firmware, total_vfs).
TEST_F(DeviceConfigTest, SecondPhysicalPort) {
  DeviceConfig one = load_device_config(write("{}"));
  EXPECT_EQ(one.physical_ports, 1);
  EXPECT_THROW(one.port_config(1), std::out_of_range);
  EXPECT_EQ(one.function_name(0), "pf");
  EXPECT_EQ(one.function_name(4), "vf3");

  DeviceConfig c = load_device_config(write(R"({"physical_ports":2,"total_vfs":4,"vfs":{"0":{"max_tx_rate":1000}},
      "uplink":{"endpoint":"stream,listen=unix:/tmp/a.sock"},
      "port1":{"vfs":{"1":{"trust":true}},"port_qos":{"trust":"dscp"},"uplink":{"endpoint":"stream,connect=unix:/tmp/a.sock"}}})"));
  EXPECT_EQ(c.physical_ports, 2);
  const DeviceConfig p0 = c.port_config(0), p1 = c.port_config(1);
  EXPECT_EQ(p0.port, 0);
  EXPECT_EQ(p1.port, 1);
  EXPECT_EQ(p1.function_name(0), "pf1");
  EXPECT_EQ(p1.function_name(2), "pf1-vf1");
  EXPECT_EQ(p1.total_vfs, 4) << "the shape is the card's";
  EXPECT_EQ(p1.function_mac(0), (std::array<uint8_t, 6>{0x02, 0xc9, 0x00, 0x00, 0x80, 0x00})) << "mac_base + 0x8000";
  EXPECT_EQ(p1.function_mac(2), (std::array<uint8_t, 6>{0x02, 0xc9, 0x00, 0x00, 0x80, 0x02}));
  EXPECT_EQ(p0.vf_settings(0).max_tx_rate_mbps, 1000u);
  EXPECT_EQ(p1.vf_settings(0).max_tx_rate_mbps, 0u) << "port 0's VF settings stay on port 0";
  EXPECT_TRUE(p1.vf_settings(1).trust);
  EXPECT_FALSE(p0.vf_settings(1).trust);
  EXPECT_TRUE(p1.port_tc.trust_dscp);
  EXPECT_FALSE(p0.port_tc.trust_dscp);
  EXPECT_EQ(p1.uplink.endpoint, "stream,connect=unix:/tmp/a.sock");
  EXPECT_EQ(p0.uplink.endpoint, "stream,listen=unix:/tmp/a.sock");

  const DeviceConfig back = load_device_config(write(to_json(c)));  // --print-config reads back the same
  EXPECT_EQ(back.physical_ports, 2);
  EXPECT_EQ(back.port_config(1).function_mac(0), p1.function_mac(0));
  EXPECT_EQ(back.port_config(1).uplink.endpoint, p1.uplink.endpoint);
  EXPECT_TRUE(back.port_config(1).vf_settings(1).trust);

  const DeviceConfig own_mac = load_device_config(write(R"({"physical_ports":2,"port1":{"mac_base":"02:00:00:00:10:00"}})"));
  EXPECT_EQ(own_mac.port_config(1).function_mac(1), (std::array<uint8_t, 6>{0x02, 0x00, 0x00, 0x00, 0x10, 0x01}));

  EXPECT_NE(error_of(R"({"physical_ports":3})").find("physical_ports"), std::string::npos);
  EXPECT_NE(error_of(R"({"physical_ports":0})").find("physical_ports"), std::string::npos);
  EXPECT_NE(error_of(R"({"port1":{}})").find("needs \"physical_ports\": 2"), std::string::npos);
  EXPECT_NE(error_of(R"({"physical_ports":2,"port1":{"speed":1}})").find("port1"), std::string::npos);
  EXPECT_NE(error_of(R"({"physical_ports":2,"port1":{"vfs":{"9":{}}}})").find("port1.vfs"), std::string::npos);
  EXPECT_NE(error_of(R"({"physical_ports":2,"port1":{"uplink":{"faults":"loss=1%"}}})").find("no endpoint"), std::string::npos);
  // Port 1's functions may not take port 0's addresses (8 VFs: port 0 holds base .. base + 8).
  EXPECT_NE(error_of(R"({"physical_ports":2,"port1":{"mac_base":"02:c9:00:00:00:08"}})").find("port1.mac_base"),
            std::string::npos);
  EXPECT_EQ(error_of(R"({"physical_ports":2,"port1":{"mac_base":"02:c9:00:00:00:09"}})"), "");
}

// mlx5 DR software steering: on unless turned off, a boolean, printed back.
TEST_F(DeviceConfigTest, SoftwareSteeringIsOnUnlessTurnedOff) {
  EXPECT_TRUE(DeviceConfig{}.software_steering);
  EXPECT_TRUE(load_device_config(write(R"({})")).software_steering);
  const DeviceConfig off = load_device_config(write(R"({"software_steering":false})"));
  EXPECT_FALSE(off.software_steering);
  EXPECT_FALSE(load_device_config(write(to_json(off))).software_steering);
  EXPECT_NE(error_of(R"({"software_steering":1})").find("true or false"), std::string::npos);
}

TEST_F(DeviceConfigTest, MissingFileIsAClearError) {
  EXPECT_THROW(load_device_config("/nonexistent/hcaemu.json"), std::runtime_error);
}

}  // namespace
}  // namespace hcaemu::sriov
