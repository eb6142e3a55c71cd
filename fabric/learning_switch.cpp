#include "fabric/learning_switch.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace hcaemu::fabric {
namespace {

// Aged entries are found when looked up; a sweep now and then also frees the table's room for new
// addresses. Every second at most, so a frame costs a table walk only once a second.
constexpr uint64_t kSweepIntervalNs = 1'000'000'000;

uint64_t address_at(std::span<const uint8_t> frame, size_t offset) {
  uint64_t value = 0;
  for (size_t i = 0; i < 6; ++i) value = value << 8 | frame[offset + i];
  return value;
}

// The I/G bit, the first bit on the wire: a group (multicast or broadcast) address.
bool is_group(uint64_t address) { return (address >> 40) & 1; }

}  // namespace

size_t LearningSwitch::MixHash::operator()(uint64_t mac) const {
  uint64_t x = mac + 0x9e3779b97f4a7c15ull;  // splitmix64's finaliser
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return size_t(x ^ (x >> 31));
}

LearningSwitch::LearningSwitch(size_t ports, LearningSwitchOptions options) : options_(options), ports_(ports) {
  table_.reserve(std::min<size_t>(options_.max_entries, 1024));
}

std::vector<size_t> LearningSwitch::forward(size_t in_port, std::span<const uint8_t> frame, uint64_t now_ns) {
  if (in_port >= ports_.size())
    throw std::out_of_range("LearningSwitch: no port " + std::to_string(in_port));
  SwitchPortCounters& in = ports_[in_port].counters;
  ++in.rx_frames;
  in.rx_bytes += frame.size();
  // A port marked down switches nothing: it must not teach the table an address that no frame
  // would be sent back to.
  if (!ports_[in_port].up) return ++in.dropped_port_down, std::vector<size_t>{};
  if (frame.size() < kHeaderBytes) return ++in.dropped_runt, std::vector<size_t>{};
  const uint64_t destination = address_at(frame, 0), source = address_at(frame, 6);
  // No station sends from a group or the zero address (IEEE 802.3 3.2.3: the source is an individual address); learning one would
  // send that group's frames to one port. Linux's bridge drops such frames too.
  if (is_group(source) || source == 0) return ++in.dropped_bad_source, std::vector<size_t>{};

  sweep(now_ns);
  learn(source, in_port, now_ns);
  std::vector<size_t> out;
  if (!is_group(destination)) {
    if (auto known = table_.find(destination); known != table_.end()) {
      if (!expired(known->second, now_ns)) {
        // Both stations are behind the same port: the segment there has already carried it.
        if (known->second.port == in_port) return ++in.dropped_same_port, out;
        send_to(known->second.port, frame.size(), out);
        return out;
      }
      table_.erase(known);
      ++counters_.aged;
    }
  }
  ++in.flooded;
  for (size_t port = 0; port < ports_.size(); ++port)
    if (port != in_port && ports_[port].up) send_to(port, frame.size(), out);
  return out;
}

size_t LearningSwitch::set_port_up(size_t port, bool up) {
  ports_.at(port).up = up;
  if (up) return 0;
  const size_t forgotten = std::erase_if(table_, [port](const auto& entry) { return entry.second.port == port; });
  counters_.forgotten += forgotten;
  return forgotten;
}

std::optional<size_t> LearningSwitch::port_of(const MacAddress& mac, uint64_t now_ns) const {
  const auto entry = table_.find(address_at(mac, 0));
  if (entry == table_.end() || expired(entry->second, now_ns)) return std::nullopt;
  return entry->second.port;
}

bool LearningSwitch::expired(const Entry& entry, uint64_t now_ns) const {
  return options_.ageing_ns != 0 && now_ns >= entry.seen_ns && now_ns - entry.seen_ns >= options_.ageing_ns;
}

void LearningSwitch::learn(uint64_t source, size_t port, uint64_t now_ns) {
  if (auto known = table_.find(source); known != table_.end()) {
    Entry& entry = known->second;
    if (expired(entry, now_ns)) {
      ++counters_.aged;  // the old entry ends here; the address is learned anew
      ++counters_.learned;
    } else if (entry.port != port) {
      ++counters_.moved;  // the station moved (or another claims its address): the latest frame wins
    }
    entry = {port, now_ns};
    return;
  }
  if (table_.size() >= options_.max_entries) return void(++counters_.table_full);
  table_.emplace(source, Entry{port, now_ns});
  ++counters_.learned;
}

void LearningSwitch::sweep(uint64_t now_ns) {
  if (options_.ageing_ns == 0 || now_ns < next_sweep_ns_) return;
  next_sweep_ns_ = now_ns + std::min(options_.ageing_ns, kSweepIntervalNs);
  counters_.aged += std::erase_if(table_, [&](const auto& entry) { return expired(entry.second, now_ns); });
}

void LearningSwitch::send_to(size_t port, size_t bytes, std::vector<size_t>& out) {
  out.push_back(port);
  ++ports_[port].counters.tx_frames;
  ports_[port].counters.tx_bytes += bytes;
}

}  // namespace hcaemu::fabric
