#include "replay/workload.h"

#include <arpa/inet.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

namespace hcaemu::replay {

using nlohmann::json;

namespace {

constexpr uint64_t kMaxMessage = uint64_t(1) << 31;

struct Invalid {
  std::string what;
};

[[noreturn]] void fail(const std::string& place, const std::string& what) { throw Invalid{place + ": " + what}; }

void only_keys(const json& object, const std::string& place, std::initializer_list<const char*> keys) {
  if (!object.is_object()) fail(place, "must be an object");
  for (const auto& item : object.items()) {
    const std::string& key = item.key();
    if (std::none_of(keys.begin(), keys.end(), [&](const char* k) { return key == k; }))
      fail(place + "." + key, "unknown key");
  }
}

const json& required(const json& object, const std::string& place, const char* key) {
  if (!object.contains(key)) fail(place, std::string("missing key \"") + key + "\"");
  return object.at(key);
}

uint64_t unsigned_of(const json& value, const std::string& place, uint64_t max = UINT64_MAX) {
  if (!value.is_number_unsigned()) fail(place, "must be an unsigned integer");
  const uint64_t v = value.get<uint64_t>();
  if (v > max) fail(place, "must be at most " + std::to_string(max));
  return v;
}

constexpr uint64_t kMaxFractionalPs = uint64_t(1) << 50;

// A time in nanoseconds, to the picosecond: an unsigned integer, or a number with up to three
// decimals (rounded to the picosecond beyond), in picoseconds.
uint64_t picoseconds_of(const json& value, const std::string& place) {
  if (value.is_number_unsigned()) return unsigned_of(value, place, UINT64_MAX / 1000) * 1000;
  // Up to 2^50 ps (about 18 minutes) a double and the product by 1000 keep every picosecond with
  // room to spare; later times must be integers.
  constexpr double kMaxFractionalNs = double(kMaxFractionalPs) / 1000.0;
  const double ns = value.is_number_float() ? value.get<double>() : -1.0;
  if (!(ns >= 0.0) || ns > kMaxFractionalNs)
    fail(place, "must be a number of nanoseconds from 0 (with decimals: below " +
                    std::to_string(uint64_t(kMaxFractionalNs)) + ")");
  return uint64_t(std::llround(ns * 1000.0));
}

// The JSON for a time in picoseconds: whole nanoseconds as an integer, else with three decimals
// (up to the time picoseconds_of takes decimals for; beyond, to the nearest nanosecond).
json nanoseconds_json(uint64_t ps) {
  if (ps % 1000 == 0) return ps / 1000;
  if (ps >= kMaxFractionalPs) return ps / 1000 + (ps % 1000 >= 500);
  return double(ps) / 1000.0;
}

std::string string_of(const json& value, const std::string& place) {
  if (!value.is_string()) fail(place, "must be a string");
  return value.get<std::string>();
}

bool bool_of(const json& value, const std::string& place) {
  if (!value.is_boolean()) fail(place, "must be true or false");
  return value.get<bool>();
}

Gid parse_ip(const std::string& text, const std::string& place) {
  Gid gid{};
  in_addr v4{};
  if (inet_pton(AF_INET, text.c_str(), &v4) == 1) return transport::gid_from_ipv4(ntohl(v4.s_addr));
  if (inet_pton(AF_INET6, text.c_str(), gid.data()) == 1) return gid;
  fail(place, "\"" + text + "\" is not an IPv4 or IPv6 address");
}

Mac parse_mac(const std::string& text, const std::string& place) {
  Mac mac{};
  unsigned b[6];
  char tail = 0;
  if (std::sscanf(text.c_str(), "%x:%x:%x:%x:%x:%x%c", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5], &tail) != 6 ||
      std::any_of(b, b + 6, [](unsigned x) { return x > 0xff; }))
    fail(place, "\"" + text + "\" is not a MAC address (xx:xx:xx:xx:xx:xx)");
  for (int i = 0; i < 6; ++i) mac[i] = uint8_t(b[i]);
  return mac;
}

Service parse_service(const std::string& text, const std::string& place) {
  for (Service s : {Service::kRc, Service::kUc, Service::kUd, Service::kXrc})
    if (text == service_name(s)) return s;
  fail(place, "\"" + text + "\" is not a service (rc, uc, ud, xrc)");
}

OpRef parse_ref(const json& value, const std::string& place) {
  const std::string text = string_of(value, place);
  size_t qp = 0, op = 0;
  char tail = 0;
  if (std::sscanf(text.c_str(), "%zu:%zu%c", &qp, &op, &tail) != 2) fail(place, "\"" + text + "\" is not QP:OP");
  return {qp, op};
}

WorkloadOp parse_op(const json& j, const std::string& place, Service service) {
  only_keys(j, place,
            {"op", "bytes", "post_ns", "think_ns", "signalled", "inline", "imm", "after", "captured_fct_ns", "captured_anomalies"});
  WorkloadOp op;
  const std::string name = string_of(required(j, place, "op"), place + ".op");
  const auto kind = message_kind_from_name(name);
  if (!kind) fail(place + ".op", "\"" + name + "\" is not an operation (send, send_imm, send_inv, write, write_imm, read, cmp_swap, fetch_add)");
  op.kind = *kind;
  const bool atomic = op.kind == MessageKind::kCompareSwap || op.kind == MessageKind::kFetchAdd;
  if ((atomic || op.kind == MessageKind::kRead) && (service == Service::kUc || service == Service::kUd))
    fail(place + ".op", std::string(name) + " needs a reliable service (rc or xrc)");
  if (service == Service::kUd && op.kind != MessageKind::kSend && op.kind != MessageKind::kSendImm)
    fail(place + ".op", "a UD QP only sends (send, send_imm)");
  op.bytes = unsigned_of(required(j, place, "bytes"), place + ".bytes", kMaxMessage);
  if (atomic && op.bytes != 8) fail(place + ".bytes", "an atomic is 8 bytes");
  if (j.contains("post_ns")) op.post_ps = picoseconds_of(j.at("post_ns"), place + ".post_ns");
  if (j.contains("think_ns")) op.think_ps = picoseconds_of(j.at("think_ns"), place + ".think_ns");
  if (j.contains("captured_fct_ns")) op.captured_fct_ns = unsigned_of(j.at("captured_fct_ns"), place + ".captured_fct_ns");
  if (j.contains("captured_anomalies")) {
    const json& a = j.at("captured_anomalies");
    const std::string where = place + ".captured_anomalies";
    if (!a.is_object()) fail(where, "must be an object");
    for (const auto& item : a.items()) {
      const auto c = std::find_if(kCapturedAnomalyCounts.begin(), kCapturedAnomalyCounts.end(),
                                  [&](const CapturedAnomalyCount& c) { return item.key() == c.name; });
      if (c == kCapturedAnomalyCounts.end()) fail(where + "." + item.key(), "unknown key");
      op.captured_anomalies.*(c->count) = uint32_t(unsigned_of(item.value(), where + "." + item.key(), UINT32_MAX));
    }
  }
  if (j.contains("signalled")) op.signalled = bool_of(j.at("signalled"), place + ".signalled");
  if (j.contains("inline")) op.inline_data = bool_of(j.at("inline"), place + ".inline");
  const bool carries_imm = op.kind == MessageKind::kSendImm || op.kind == MessageKind::kWriteImm ||
                           op.kind == MessageKind::kSendInvalidate;
  if (j.contains("imm")) {
    if (!carries_imm) fail(place + ".imm", name + " carries no immediate");
    op.immediate = uint32_t(unsigned_of(j.at("imm"), place + ".imm", UINT32_MAX));
  } else if (carries_imm) {
    fail(place, name + " needs \"imm\" (the immediate, or the rkey to invalidate)");
  }
  if (op.inline_data && (atomic || op.kind == MessageKind::kRead)) fail(place + ".inline", name + " cannot be inline");
  if (j.contains("after")) {
    const json& after = j.at("after");
    if (!after.is_array()) fail(place + ".after", "must be an array of \"QP:OP\"");
    for (size_t i = 0; i < after.size(); ++i) op.after.push_back(parse_ref(after[i], place + ".after[" + std::to_string(i) + "]"));
  }
  return op;
}

// Every dependency names an operation; no operation waits, directly or through others (its QP's
// order included), for itself.
void check_dependencies(const Workload& w) {
  auto place = [](const OpRef& r) { return "qps[" + std::to_string(r.qp) + "].ops[" + std::to_string(r.op) + "]"; };
  for (size_t q = 0; q < w.qps.size(); ++q)
    for (size_t i = 0; i < w.qps[q].ops.size(); ++i)
      for (size_t d = 0; d < w.qps[q].ops[i].after.size(); ++d) {
        const OpRef& r = w.qps[q].ops[i].after[d];
        if (r.qp >= w.qps.size() || r.op >= w.qps[r.qp].ops.size())
          fail(place({q, i}) + ".after[" + std::to_string(d) + "]", place(r) + " does not exist");
      }
  // Depth-first over "waits for" edges: the QP's previous operation and the listed ones.
  enum class Mark : uint8_t { kNew, kOnPath, kDone };
  std::vector<std::vector<Mark>> mark(w.qps.size());
  for (size_t q = 0; q < w.qps.size(); ++q) mark[q].assign(w.qps[q].ops.size(), Mark::kNew);
  for (size_t q = 0; q < w.qps.size(); ++q)
    for (size_t i = 0; i < w.qps[q].ops.size(); ++i) {
      if (mark[q][i] != Mark::kNew) continue;
      std::vector<std::pair<OpRef, size_t>> stack{{{q, i}, 0}};  // node, next edge
      mark[q][i] = Mark::kOnPath;
      while (!stack.empty()) {
        auto& [node, edge] = stack.back();
        const WorkloadOp& op = w.qps[node.qp].ops[node.op];
        const size_t edges = op.after.size() + (node.op > 0 ? 1 : 0);
        if (edge == edges) {
          mark[node.qp][node.op] = Mark::kDone;
          stack.pop_back();
          continue;
        }
        const OpRef next = edge < op.after.size() ? op.after[edge] : OpRef{node.qp, node.op - 1};
        ++edge;
        if (mark[next.qp][next.op] == Mark::kOnPath) fail(place(next), "waits for itself (a cycle in \"after\")");
        if (mark[next.qp][next.op] == Mark::kNew) {
          mark[next.qp][next.op] = Mark::kOnPath;
          stack.push_back({next, 0});
        }
      }
    }
}

std::vector<WorkloadCq> parse_cqs(const json& j, const std::string& place) {
  if (!j.is_array()) fail(place, "must be an array of {\"id\": N, \"entries\": N}");
  std::vector<WorkloadCq> cqs;
  for (size_t i = 0; i < j.size(); ++i) {
    const std::string at = place + "[" + std::to_string(i) + "]";
    only_keys(j[i], at, {"id", "entries"});
    WorkloadCq cq{.id = uint32_t(unsigned_of(required(j[i], at, "id"), at + ".id", 0xffffff)),
                  .entries = uint32_t(unsigned_of(required(j[i], at, "entries"), at + ".entries", kMaxCqEntries))};
    if (cq.entries < 2 || (cq.entries & (cq.entries - 1)) != 0)
      fail(at + ".entries", "must be a power of two from 2 to " + std::to_string(kMaxCqEntries));
    for (const WorkloadCq& other : cqs)
      if (other.id == cq.id) fail(at + ".id", std::to_string(cq.id) + " names two CQs");
    cqs.push_back(cq);
  }
  uint64_t total = 0;
  for (const WorkloadCq& cq : cqs) total += cq.entries;
  if (total > kMaxHostCqEntries) fail(place, "more than " + std::to_string(kMaxHostCqEntries) + " entries in all");
  return cqs;
}

std::optional<uint32_t> cq_ref(const json& qp, const std::string& place, const char* key, const WorkloadHost& host) {
  if (!qp.contains(key)) return std::nullopt;
  const uint32_t id = uint32_t(unsigned_of(qp.at(key), place + "." + key, 0xffffff));
  if (host.cq(id) == nullptr) fail(place + "." + key, "host " + host.name + " has no CQ " + std::to_string(id));
  return id;
}

// hosts[i]: its name (unique), address (unique among `earlier`), MAC and CQs.
WorkloadHost parse_host(const json& j, size_t i, const std::vector<WorkloadHost>& earlier,
                        std::map<std::string, size_t>& by_name) {
  const std::string place = "hosts[" + std::to_string(i) + "]";
  only_keys(j, place, {"name", "ip", "mac", "cqs"});
  WorkloadHost h;
  h.name = string_of(required(j, place, "name"), place + ".name");
  if (!by_name.emplace(h.name, i).second) fail(place + ".name", "\"" + h.name + "\" names two hosts");
  h.gid = parse_ip(string_of(required(j, place, "ip"), place + ".ip"), place + ".ip");
  h.mac = j.contains("mac") ? parse_mac(string_of(j.at("mac"), place + ".mac"), place + ".mac")
                            : Mac{0x02, 0, 0, 0, uint8_t(i >> 8), uint8_t(i)};
  if ((h.mac[0] & 0x01) != 0) fail(place + ".mac", "\"" + mac_text(h.mac) + "\" is a group address, not a host's");
  for (const WorkloadHost& other : earlier) {
    if (other.gid == h.gid) fail(place + ".ip", "\"" + gid_text(h.gid) + "\" is also " + other.name + "'s");
  }
  if (j.contains("cqs")) h.cqs = parse_cqs(j.at("cqs"), place + ".cqs");
  return h;
}

// qps[q]: its two hosts (by name, one address family), service, attributes, CQs and operations.
WorkloadQp parse_qp(const json& j, size_t q, const std::vector<WorkloadHost>& hosts,
                    const std::map<std::string, size_t>& by_name) {
  const std::string place = "qps[" + std::to_string(q) + "]";
  only_keys(j, place,
            {"host", "peer", "service", "qpn", "peer_qpn", "mtu", "sq_wqebbs", "max_rd_atomic", "peer_rq_stride", "send_cq", "recv_cq", "peer_send_cq",
             "peer_recv_cq", "connection_setup", "ops"});
  WorkloadQp qp;
  auto host = [&](const char* key) {
    const std::string name = string_of(required(j, place, key), place + "." + key);
    const auto it = by_name.find(name);
    if (it == by_name.end()) fail(place + "." + key, "no host is named \"" + name + "\"");
    return it->second;
  };
  qp.host = host("host");
  qp.peer = host("peer");
  if (transport::is_ipv4_mapped(hosts[qp.host].gid) != transport::is_ipv4_mapped(hosts[qp.peer].gid)) {
    const bool v4 = transport::is_ipv4_mapped(hosts[qp.host].gid);
    fail(place, hosts[qp.host].name + " has an IPv" + (v4 ? "4" : "6") + " address and " + hosts[qp.peer].name +
                    " an IPv" + (v4 ? "6" : "4") + " one (a QP's ends use one family)");
  }
  qp.service = parse_service(string_of(required(j, place, "service"), place + ".service"), place + ".service");
  if (j.contains("qpn")) qp.qpn = uint32_t(unsigned_of(j.at("qpn"), place + ".qpn", 0xffffff));
  if (j.contains("peer_qpn")) qp.peer_qpn = uint32_t(unsigned_of(j.at("peer_qpn"), place + ".peer_qpn", 0xffffff));
  if (j.contains("mtu")) {
    qp.mtu = uint32_t(unsigned_of(j.at("mtu"), place + ".mtu", 4096));
    if (qp.mtu < 256 || (qp.mtu & (qp.mtu - 1)) != 0) fail(place + ".mtu", "must be 256, 512, 1024, 2048 or 4096");
  }
  if (j.contains("sq_wqebbs")) {
    qp.sq_wqebbs = uint32_t(unsigned_of(j.at("sq_wqebbs"), place + ".sq_wqebbs", kMaxSqWqebbs));
    if (*qp.sq_wqebbs == 0 || (*qp.sq_wqebbs & (*qp.sq_wqebbs - 1)) != 0)
      fail(place + ".sq_wqebbs", "must be a power of two from 1 to " + std::to_string(kMaxSqWqebbs));
  }
  if (j.contains("max_rd_atomic")) {
    qp.max_rd_atomic = uint32_t(unsigned_of(j.at("max_rd_atomic"), place + ".max_rd_atomic", 128));
    if (!std::has_single_bit(*qp.max_rd_atomic)) fail(place + ".max_rd_atomic", "must be a power of two from 1 to 128");
  }
  if (j.contains("peer_rq_stride")) {
    qp.peer_rq_stride = uint32_t(unsigned_of(j.at("peer_rq_stride"), place + ".peer_rq_stride", kMaxRqStride));
    if (*qp.peer_rq_stride < kMinRqStride || !std::has_single_bit(*qp.peer_rq_stride))
      fail(place + ".peer_rq_stride", "must be a power of two from " + std::to_string(kMinRqStride) + " to " +
                                          std::to_string(kMaxRqStride));
  }
  if (j.contains("connection_setup")) {
    qp.connection_setup = bool_of(j.at("connection_setup"), place + ".connection_setup");
    if (qp.connection_setup && qp.service != Service::kUd) fail(place + ".connection_setup", "only a ud QP carries connection set-up MADs");
  }
  qp.cqs = {.send = cq_ref(j, place, "send_cq", hosts[qp.host]),
            .recv = cq_ref(j, place, "recv_cq", hosts[qp.host]),
            .peer_send = cq_ref(j, place, "peer_send_cq", hosts[qp.peer]),
            .peer_recv = cq_ref(j, place, "peer_recv_cq", hosts[qp.peer])};
  const json& ops = required(j, place, "ops");
  if (!ops.is_array()) fail(place + ".ops", "must be an array");
  for (size_t i = 0; i < ops.size(); ++i)
    qp.ops.push_back(parse_op(ops[i], place + ".ops[" + std::to_string(i) + "]", qp.service));
  return qp;
}

Workload parse(const json& j) {
  only_keys(j, "workload", {"format", "hosts", "qps"});
  const std::string format = string_of(required(j, "workload", "format"), "format");
  if (format != kWorkloadFormat) fail("format", "\"" + format + "\" is not " + kWorkloadFormat);
  Workload w;
  const json& hosts = required(j, "workload", "hosts");
  if (!hosts.is_array() || hosts.empty()) fail("hosts", "must be a non-empty array");
  std::map<std::string, size_t> by_name;
  for (size_t i = 0; i < hosts.size(); ++i) w.hosts.push_back(parse_host(hosts[i], i, w.hosts, by_name));
  const json& qps = required(j, "workload", "qps");
  if (!qps.is_array()) fail("qps", "must be an array");
  for (size_t q = 0; q < qps.size(); ++q) w.qps.push_back(parse_qp(qps[q], q, w.hosts, by_name));
  check_dependencies(w);
  return w;
}

}  // namespace

const WorkloadCq* WorkloadHost::cq(uint32_t id) const {
  for (const WorkloadCq& c : cqs)
    if (c.id == id) return &c;
  return nullptr;
}

std::string gid_text(const Gid& gid) {
  char text[INET6_ADDRSTRLEN] = {};
  if (transport::is_ipv4_mapped(gid)) inet_ntop(AF_INET, gid.data() + 12, text, sizeof text);
  else inet_ntop(AF_INET6, gid.data(), text, sizeof text);
  return text;
}

std::string mac_text(const Mac& mac) {
  char text[18];
  std::snprintf(text, sizeof text, "%02x:%02x:%02x:%02x:%02x:%02x", mac[0], mac[1], mac[2], mac[3], mac[4], mac[5]);
  return text;
}

std::optional<Workload> parse_workload(std::string_view text, std::string* error) {
  try {
    return parse(json::parse(text));
  } catch (const json::parse_error& e) {
    if (error) *error = std::string("not JSON: ") + e.what();
  } catch (const Invalid& e) {
    if (error) *error = e.what;
  } catch (const json::exception& e) {  // a value nlohmann could not convert
    if (error) *error = e.what();
  }
  return std::nullopt;
}

std::string workload_json(const Workload& w) {
  json hosts = json::array();
  for (const WorkloadHost& h : w.hosts) {
    json host = json::object({{"name", h.name}, {"ip", gid_text(h.gid)}, {"mac", mac_text(h.mac)}});
    if (!h.cqs.empty()) {
      json cqs = json::array();
      for (const WorkloadCq& cq : h.cqs) cqs.push_back(json::object({{"id", cq.id}, {"entries", cq.entries}}));
      host["cqs"] = cqs;
    }
    hosts.push_back(host);
  }
  json qps = json::array();
  for (const WorkloadQp& qp : w.qps) {
    json ops = json::array();
    for (const WorkloadOp& op : qp.ops) {
      json o = json::object({{"op", message_kind_name(op.kind)}, {"bytes", op.bytes}});
      if (op.post_ps) o["post_ns"] = nanoseconds_json(*op.post_ps);
      if (op.think_ps) o["think_ns"] = nanoseconds_json(*op.think_ps);
      if (op.captured_fct_ns) o["captured_fct_ns"] = *op.captured_fct_ns;
      if (const CapturedAnomalies& a = op.captured_anomalies; a.any()) {
        json anomalies = json::object();
        for (const CapturedAnomalyCount& c : kCapturedAnomalyCounts)
          if (a.*c.count != 0) anomalies[c.name] = a.*c.count;
        o["captured_anomalies"] = anomalies;
      }
      if (!op.signalled) o["signalled"] = false;
      if (op.inline_data) o["inline"] = true;
      if (op.immediate) o["imm"] = *op.immediate;
      if (!op.after.empty()) {
        json after = json::array();
        for (const OpRef& r : op.after) after.push_back(std::to_string(r.qp) + ":" + std::to_string(r.op));
        o["after"] = after;
      }
      ops.push_back(o);
    }
    json entry = json::object({{"host", w.hosts[qp.host].name}, {"peer", w.hosts[qp.peer].name},
                               {"service", service_name(qp.service)}, {"qpn", qp.qpn}, {"peer_qpn", qp.peer_qpn},
                               {"mtu", qp.mtu}});
    if (qp.sq_wqebbs) entry["sq_wqebbs"] = *qp.sq_wqebbs;
    if (qp.max_rd_atomic) entry["max_rd_atomic"] = *qp.max_rd_atomic;
    if (qp.peer_rq_stride) entry["peer_rq_stride"] = *qp.peer_rq_stride;
    if (qp.connection_setup) entry["connection_setup"] = true;
    const std::pair<const char*, const std::optional<uint32_t>*> refs[] = {
        {"send_cq", &qp.cqs.send}, {"recv_cq", &qp.cqs.recv}, {"peer_send_cq", &qp.cqs.peer_send},
        {"peer_recv_cq", &qp.cqs.peer_recv}};
    for (const auto& [key, id] : refs)
      if (*id) entry[key] = **id;
    entry["ops"] = ops;
    qps.push_back(entry);
  }
  return json::object({{"format", kWorkloadFormat}, {"hosts", hosts}, {"qps", qps}}).dump(1) + "\n";
}

namespace {

// Ids for the captured CQs, declared on the hosts on first use: they count from 1 per host in the
// order the QPs name them, one per captured number and size (a number the captured function used
// again for a CQ of another size is another CQ). A size the format does not take, or one past the
// host's bound, leaves the QP end a CQ of its own.
class CqIds {
 public:
  explicit CqIds(size_t hosts) : ids_(hosts) {}
  std::optional<uint32_t> operator()(Workload& w, size_t host, const std::optional<QueuePair::Cq>& captured) {
    if (!captured || captured->entries < 2 || captured->entries > kMaxCqEntries || !std::has_single_bit(captured->entries))
      return std::nullopt;
    auto& ids = ids_[host];
    if (const auto it = ids.find(*captured); it != ids.end()) return it->second;
    uint64_t total = 0;
    for (const WorkloadCq& cq : w.hosts[host].cqs) total += cq.entries;
    if (total + captured->entries > kMaxHostCqEntries) return std::nullopt;
    const uint32_t id = uint32_t(ids.size() + 1);
    ids.emplace(*captured, id);
    w.hosts[host].cqs.push_back({.id = id, .entries = captured->entries});
    return id;
  }

 private:
  std::vector<std::map<QueuePair::Cq, uint32_t>> ids_;
};

}  // namespace

Workload lower(const Reconstruction& capture) {
  Workload w;
  for (const Host& h : capture.hosts) w.hosts.push_back({.name = h.name, .gid = h.gid, .mac = h.mac, .cqs = {}});
  CqIds cq_id(w.hosts.size());
  for (const QueuePair& qp : capture.queue_pairs) {
    // The path MTU: the largest non-last payload seen, rounded up to an IB MTU (1024 if none seen).
    uint32_t mtu = 256;
    while (mtu < qp.mtu && mtu < 4096) mtu *= 2;
    WorkloadQp out;
    out.host = qp.host;
    out.peer = qp.peer_host;
    out.service = qp.service;
    out.connection_setup = qp.connection_setup;
    out.qpn = qp.qpn;
    out.peer_qpn = qp.peer_qpn;
    out.mtu = qp.mtu == 0 ? 1024 : mtu;
    if (qp.sq_wqebbs >= 1 && qp.sq_wqebbs <= kMaxSqWqebbs && std::has_single_bit(qp.sq_wqebbs))
      out.sq_wqebbs = qp.sq_wqebbs;
    if (qp.max_rd_atomic >= 1 && qp.max_rd_atomic <= 128 && std::has_single_bit(qp.max_rd_atomic))
      out.max_rd_atomic = qp.max_rd_atomic;
    if (qp.peer_rq_stride >= kMinRqStride && qp.peer_rq_stride <= kMaxRqStride && std::has_single_bit(qp.peer_rq_stride))
      out.peer_rq_stride = qp.peer_rq_stride;
    out.cqs = {.send = cq_id(w, qp.host, qp.send_cq),
               .recv = cq_id(w, qp.host, qp.recv_cq),
               .peer_send = cq_id(w, qp.peer_host, qp.peer_send_cq),
               .peer_recv = cq_id(w, qp.peer_host, qp.peer_recv_cq)};
    w.qps.push_back(out);
  }
  std::vector<uint64_t> last_done(capture.queue_pairs.size(), 0);
  for (const Message& m : capture.messages) {
    WorkloadOp op;
    op.kind = m.kind;
    op.bytes = m.bytes;
    op.post_ps = m.first_ns * 1000;
    op.immediate = m.immediate;
    op.captured_anomalies = {m.retransmitted, m.rnr_naks, m.naks};
    // The run's own latency trace knows better: the doorbell, and the FCT the run saw.
    if (m.doorbell_ps != 0) {
      op.post_ps = m.doorbell_ps;
      if (m.cqe_ps != 0)
        op.captured_fct_ns = (m.cqe_ps - m.doorbell_ps + 500) / 1000;
      else
        op.signalled = false;  // no CQE: the software asked for none (perftest's cq_mod)
      const bool carries_data = m.kind != MessageKind::kRead && m.kind != MessageKind::kCompareSwap &&
                                m.kind != MessageKind::kFetchAdd;
      if (!m.payload_dma && carries_data && m.bytes != 0 && m.bytes <= 512) op.inline_data = true;
    }
    const bool carries_imm = m.kind == MessageKind::kSendImm || m.kind == MessageKind::kWriteImm ||
                             m.kind == MessageKind::kSendInvalidate;
    if (carries_imm && !op.immediate) op.immediate = 0;
    const uint64_t done_ps = m.cqe_ps != 0 ? m.cqe_ps : m.done_ns * 1000;
    if (last_done[m.qp] != 0 && *op.post_ps >= last_done[m.qp]) op.think_ps = *op.post_ps - last_done[m.qp];
    if (done_ps != 0) last_done[m.qp] = std::max(last_done[m.qp], done_ps);
    w.qps[m.qp].ops.push_back(op);
  }
  return w;
}

}  // namespace hcaemu::replay
