#include "qemu-bridge/control_commands.h"

#include <charconv>

#include "qemu-bridge/control_help.h"
#include "sriov/device_report.h"

namespace hcaemu::bridge {
namespace {

ControlReply error(std::string text) { return {false, std::move(text)}; }

UplinkPort* find_uplink(ControlTargets& targets, const std::string& name) {
  for (UplinkPort* port : targets.uplinks)
    if (port->name() == name) return port;
  return nullptr;
}

std::string uplink_names(const ControlTargets& targets) {
  if (targets.uplinks.empty()) return "none: hcaemu runs without --uplink";
  std::string names;
  for (const UplinkPort* port : targets.uplinks) names += (names.empty() ? "" : ", ") + port->name();
  return names;
}

// link set NAME KEY VALUE [KEY VALUE ...] (or KEY=VALUE): settings not named keep their values.
ControlReply link_set(const std::vector<std::string>& words, UplinkPort& port) {
  std::string text;
  for (size_t i = 3; i < words.size(); ++i) {
    std::string item = words[i];
    if (item.find('=') == std::string::npos) {
      if (i + 1 >= words.size()) return error("\"" + item + "\" has no value (link set NAME KEY VALUE ...)");
      item += "=" + words[++i];
    }
    text += (text.empty() ? "" : ",") + item;
  }
  if (text.empty()) return error("nothing to set (keys: loss, corrupt, duplicate, reorder, delay, jitter, rate, seed)");
  std::string problem;
  const auto settings = fabric::parse_link_faults(text, problem, port.faults());
  if (!settings) return error(problem);
  port.set_faults(*settings);
  return {true, port.status()};
}

ControlReply link(const std::vector<std::string>& words, ControlTargets& targets) {
  const std::string verb = words.size() > 1 ? words[1] : "show";
  if (verb == "show") {
    if (targets.uplinks.empty()) return {true, "no uplink: hcaemu runs without --uplink"};
    std::string out;
    for (UplinkPort* port : targets.uplinks) {
      if (words.size() > 2 && port->name() != words[2]) continue;
      out += port->status() + "\n";
    }
    if (out.empty()) return error("no link \"" + words[2] + "\" (links: " + uplink_names(targets) + ")");
    return {true, out};
  }
  if (verb != "set" && verb != "up" && verb != "down") return error("unknown link command \"" + verb + "\" (show, set, up, down)");
  if (words.size() < 3) return error("link " + verb + " needs a link name (links: " + uplink_names(targets) + ")");
  UplinkPort* port = find_uplink(targets, words[2]);
  if (port == nullptr) return error("no link \"" + words[2] + "\" (links: " + uplink_names(targets) + ")");
  if (verb == "set") return link_set(words, *port);
  if (words.size() > 3) return error("link " + verb + " takes only the link's name");
  port->set_admin_up(verb == "up");
  return {true, port->status()};
}

ControlReply vfs(const std::vector<std::string>& words, sriov::HcaDevice& device) {
  const std::string pf = device.pf().name() + ": ";
  if (words.size() == 1)
    return {true, pf + std::to_string(device.enabled_vfs()) + " of " + std::to_string(device.config().total_vfs) +
                      " VFs enabled"};
  unsigned count = 0;
  const std::string& n = words[1];
  const auto [end, ec] = std::from_chars(n.data(), n.data() + n.size(), count);
  if (words.size() > 2 || ec != std::errc{} || end != n.data() + n.size() || count > device.config().total_vfs)
    return error("vfs takes a count from 0 to TotalVFs (" + std::to_string(device.config().total_vfs) + ")");
  if (std::string problem = device.set_num_vfs(uint16_t(count)); !problem.empty()) return error(problem);
  return {true, pf + std::to_string(device.enabled_vfs()) + " VFs enabled"};
}

std::string qos_text(const sriov::VportQos& q) {
  auto rate = [](uint32_t mbps) { return mbps == 0 ? std::string("none") : std::to_string(mbps) + " Mb/s"; };
  return "max_tx_rate " + rate(q.max_tx_rate_mbps) + ", min_tx_rate " + rate(q.min_tx_rate_mbps);
}

bool parse_number(const std::string& text, uint32_t& out) {
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc{} && end == text.data() + text.size() && !text.empty();
}

// vf [show] | vf N [max_tx_rate MBPS] [min_tx_rate MBPS]: as `ip link set PF vf N ...`.
ControlReply vf(const std::vector<std::string>& words, sriov::HcaDevice& device) {
  if (words.size() == 1 || words[1] == "show") {
    std::string out;
    for (uint16_t i = 0; i < device.enabled_vfs(); ++i) out += device.vf(i).name() + ": " + qos_text(device.vf_qos(i)) + "\n";
    return {true, out.empty() ? "no VF enabled" : out};
  }
  uint32_t index = 0;
  if (!parse_number(words[1], index) || index >= device.enabled_vfs())
    return error("no enabled VF \"" + words[1] + "\" (" + std::to_string(device.enabled_vfs()) + " enabled)");
  sriov::VportQos qos = device.vf_qos(uint16_t(index));
  for (size_t i = 2; i < words.size(); i += 2) {
    if (i + 1 >= words.size()) return error("\"" + words[i] + "\" has no value");
    uint32_t* slot = words[i] == "max_tx_rate" ? &qos.max_tx_rate_mbps : words[i] == "min_tx_rate" ? &qos.min_tx_rate_mbps : nullptr;
    if (slot == nullptr) return error("unknown VF setting \"" + words[i] + "\" (max_tx_rate, min_tx_rate)");
    if (!parse_number(words[i + 1], *slot)) return error(words[i] + " \"" + words[i + 1] + "\" is not a rate in Mb/s");
  }
  if (std::string problem = device.set_vf_qos(uint16_t(index), qos); !problem.empty()) return error(problem);
  return {true, device.vf(uint16_t(index)).name() + ": " + qos_text(device.vf_qos(uint16_t(index)))};
}

// port [show] | port qos JSON: the port's traffic classes, as the configuration's "port_qos".
ControlReply port(const std::vector<std::string>& words, sriov::HcaDevice& device) {
  if (words.size() == 1 || words[1] == "show")
    return {true, "port_qos " + sriov::port_qos_json(device.port_scheduler().tc_config())};
  if (words[1] != "qos" || words.size() != 3) return error("port [show] | port qos JSON (the configuration's port_qos, without blanks)");
  try {
    device.set_port_tc(sriov::parse_port_qos(words[2], device.port_scheduler().tc_config()));
  } catch (const std::exception& e) {
    return error(e.what());
  }
  return {true, "port_qos " + sriov::port_qos_json(device.port_scheduler().tc_config())};
}

// The device a request's leading PF name selects ("pf" or "pf0", "pf1"), null when the word is no
// PF's name.
sriov::HcaDevice* device_named(const std::string& word, ControlTargets& targets) {
  for (sriov::HcaDevice* device : targets.devices)
    if (device->pf().name() == word || (word == "pf0" && device->config().port == 0)) return device;
  return nullptr;
}

}  // namespace

ControlReply run_control_command(const std::vector<std::string>& request, ControlTargets& targets) {
  if (request.empty()) return error("empty request (try: help)");
  if (targets.devices.empty()) return error("no device");
  sriov::HcaDevice* device = targets.devices.front();
  std::vector<std::string> words = request;
  if (sriov::HcaDevice* named = device_named(words[0], targets)) {
    device = named;
    words.erase(words.begin());
    if (words.empty() || (words[0] != "vfs" && words[0] != "vf" && words[0] != "port"))
      return error("after a PF's name: vfs, vf or port (try: help)");
  } else if (words[0].starts_with("pf")) {
    std::string names;
    for (sriov::HcaDevice* d : targets.devices) names += (names.empty() ? "" : ", ") + d->pf().name();
    return error("no PF \"" + words[0] + "\" (PFs: " + names + ")");
  }
  const std::string& command = words[0];
  if (command == "help") return {true, kControlHelp};
  if (command == "stats") {
    std::string out;
    for (sriov::HcaDevice* d : targets.devices) out += sriov::device_counters_text(*d);
    for (UplinkPort* port : targets.uplinks) out += port->counters() + "\n";
    return {true, out};
  }
  if (command == "link") return link(words, targets);
  if (command == "vfs") return vfs(words, *device);
  if (command == "vf") return vf(words, *device);
  if (command == "port") return port(words, *device);
  return error("unknown command \"" + command + "\" (try: help)");
}

}  // namespace hcaemu::bridge
