// hca_tenant_probe: what a hostile tenant does from inside its VM with root and a raw socket, for
// the isolation matrix test (issue 14). Carried into the attacker's guest with hcavm --file.
//
//   hca_tenant_probe listen IFACE SECONDS VICTIM_MAC...
//       Captures in promiscuous mode and counts what reaches this function. A frame from a victim's
//       MAC to anything but this function's MAC, broadcast or a group the interface joined is
//       someone else's traffic: "leaked". Prints one summary line when the time is up or on SIGTERM, and
//       exits 0 (the caller judges).
//   hca_tenant_probe roce IFACE DST_MAC DST_IP SRC_MAC|own SRC_IP QPN_FIRST QPN_COUNT
//       Sends well-formed RoCEv2 requests (right ICRC, so only the device's checks can stop them) at
//       every QPN of the range: RC and UC SEND ONLY and RDMA WRITE ONLY (a guessed rkey and address),
//       UD SEND ONLY (a guessed Q_Key), each at several PSNs, a UC one resynchronises to.
//   hca_tenant_probe flood IFACE DST_MAC COUNT
//       Sends COUNT 1000-byte frames of a local experimental EtherType as fast as the socket takes them.
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "roce_request.h"

static void die(const char* what) {
  fprintf(stderr, "hca_tenant_probe: %s: %s\n", what, strerror(errno));
  exit(2);
}

static void usage(void) {
  fprintf(stderr,
          "usage: hca_tenant_probe listen IFACE SECONDS VICTIM_MAC...\n"
          "       hca_tenant_probe roce IFACE DST_MAC DST_IP SRC_MAC|own SRC_IP QPN_FIRST QPN_COUNT\n"
          "       hca_tenant_probe flood IFACE DST_MAC COUNT\n");
  exit(2);
}

static int parse_mac(const char* text, uint8_t mac[6]) {
  unsigned v[6];
  if (sscanf(text, "%x:%x:%x:%x:%x:%x", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5]) != 6) return 0;
  for (int i = 0; i < 6; ++i) mac[i] = (uint8_t)v[i];
  return 1;
}

struct link {
  int fd;
  int ifindex;
  uint8_t mac[6];
};

static struct link open_link(const char* iface, int promiscuous) {
  struct link l;
  l.fd = socket(AF_PACKET, SOCK_RAW, htons(ETH_P_ALL));
  if (l.fd < 0) die("socket(AF_PACKET)");
  struct ifreq ifr;
  memset(&ifr, 0, sizeof ifr);
  snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "%s", iface);
  if (ioctl(l.fd, SIOCGIFINDEX, &ifr) < 0) die("SIOCGIFINDEX");
  l.ifindex = ifr.ifr_ifindex;
  if (ioctl(l.fd, SIOCGIFHWADDR, &ifr) < 0) die("SIOCGIFHWADDR");
  memcpy(l.mac, ifr.ifr_hwaddr.sa_data, 6);
  struct sockaddr_ll bind_to = {.sll_family = AF_PACKET, .sll_protocol = htons(ETH_P_ALL), .sll_ifindex = l.ifindex};
  if (bind(l.fd, (struct sockaddr*)&bind_to, sizeof bind_to) < 0) die("bind");
  if (promiscuous) {
    struct packet_mreq mr = {.mr_ifindex = l.ifindex, .mr_type = PACKET_MR_PROMISC};
    if (setsockopt(l.fd, SOL_PACKET, PACKET_ADD_MEMBERSHIP, &mr, sizeof mr) < 0) die("PACKET_MR_PROMISC");
  }
  return l;
}

static void send_frame(const struct link* l, const uint8_t* frame, size_t size) {
  struct sockaddr_ll to = {.sll_family = AF_PACKET, .sll_ifindex = l->ifindex, .sll_halen = 6};
  memcpy(to.sll_addr, frame, 6);
  for (;;) {
    if (sendto(l->fd, frame, size, 0, (struct sockaddr*)&to, sizeof to) >= 0) return;
    if (errno != ENOBUFS && errno != EAGAIN) die("sendto");
    struct timespec pause = {0, 100000};
    nanosleep(&pause, NULL);
  }
}

// --- listen ------------------------------------------------------------------------------------

// Broadcast, or a group this interface has joined (the kernel's list in /proc/net/dev_mcast, read
// when the frame comes: the tenant may join and leave groups meanwhile). Traffic to such a group
// is the tenant's to see; any other group frame of a victim is not.
static int joined(const char* iface, const uint8_t* dst) {
  static const uint8_t broadcast[6] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
  if (!memcmp(dst, broadcast, 6)) return 1;
  char want[13];
  snprintf(want, sizeof want, "%02x%02x%02x%02x%02x%02x", dst[0], dst[1], dst[2], dst[3], dst[4], dst[5]);
  FILE* f = fopen("/proc/net/dev_mcast", "r");
  if (f == NULL) return 0;
  char line[256], name[64], address[64];
  int found = 0, index, users, global;
  while (!found && fgets(line, sizeof line, f))
    found = sscanf(line, "%d %63s %d %d %63s", &index, name, &users, &global, address) == 5 && !strcmp(name, iface) &&
            !strcmp(address, want);
  fclose(f);
  return found;
}

static volatile sig_atomic_t stop_listening;
static void on_sigterm(int sig) {
  (void)sig;
  stop_listening = 1;
}

static int listen_mode(int argc, char** argv) {
  if (argc < 5) usage();
  struct link l = open_link(argv[2], 1);
  const int seconds = atoi(argv[3]);
  int victims = argc - 4;
  uint8_t victim[16][6];
  if (victims > 16) victims = 16;
  for (int i = 0; i < victims; ++i)
    if (!parse_mac(argv[4 + i], victim[i])) usage();
  unsigned long frames = 0, to_me = 0, group = 0, foreign_unicast = 0, leaked = 0, roce = 0;
  const time_t end = time(NULL) + seconds;
  uint8_t buf[10000];
  signal(SIGTERM, on_sigterm);
  while (!stop_listening && time(NULL) < end) {
    struct pollfd p = {.fd = l.fd, .events = POLLIN};
    if (poll(&p, 1, 200) <= 0) continue;
    struct sockaddr_ll from;
    socklen_t from_size = sizeof from;
    const ssize_t n = recvfrom(l.fd, buf, sizeof buf, 0, (struct sockaddr*)&from, &from_size);
    if (n < 14 || from.sll_pkttype == PACKET_OUTGOING) continue;
    ++frames;
    const uint8_t* dst = buf;
    const uint8_t* src = buf + 6;
    if (!memcmp(dst, l.mac, 6))
      ++to_me;
    else if (dst[0] & 1)
      ++group;
    else
      ++foreign_unicast;
    if (n >= 14 + 20 + 8 && buf[12] == 0x08 && buf[13] == 0x00 && buf[14 + 9] == 17 &&
        ((buf[14 + 22] << 8) | buf[14 + 23]) == ROCE_PORT)
      ++roce;
    int from_victim = 0;
    for (int i = 0; i < victims; ++i) from_victim |= !memcmp(src, victim[i], 6);
    if (from_victim && memcmp(dst, l.mac, 6) && !((dst[0] & 1) && joined(argv[2], dst))) {
      if (leaked < 5)
        fprintf(stderr, "leaked: %02x:%02x:%02x:%02x:%02x:%02x -> %02x:%02x:%02x:%02x:%02x:%02x type %02x%02x, %zd bytes\n",
                src[0], src[1], src[2], src[3], src[4], src[5], dst[0], dst[1], dst[2], dst[3], dst[4], dst[5],
                buf[12], buf[13], n);
      ++leaked;
    }
  }
  printf("listened up to %d s: frames %lu, to me %lu, group %lu, foreign unicast %lu, RoCE %lu, leaked %lu\n", seconds,
         frames, to_me, group, foreign_unicast, roce, leaked);
  return 0;
}

// --- roce --------------------------------------------------------------------------------------

static int roce_mode(int argc, char** argv) {
  if (argc != 9) usage();
  struct link l = open_link(argv[2], 0);
  uint8_t dst_mac[6], src_mac[6];
  struct in_addr dst_ip, src_ip;
  if (!parse_mac(argv[3], dst_mac) || inet_pton(AF_INET, argv[4], &dst_ip) != 1 ||
      inet_pton(AF_INET, argv[6], &src_ip) != 1)
    usage();
  if (!strcmp(argv[5], "own"))
    memcpy(src_mac, l.mac, 6);
  else if (!parse_mac(argv[5], src_mac))
    usage();
  const uint32_t first = (uint32_t)strtoul(argv[7], NULL, 0), count = (uint32_t)strtoul(argv[8], NULL, 0);
  // RC SEND ONLY, RC RDMA WRITE ONLY, UC SEND ONLY, UC RDMA WRITE ONLY, UD SEND ONLY.
  static const uint8_t opcodes[] = {0x04, 0x0a, 0x24, 0x2a, 0x64};
  static const uint32_t psns[] = {0, 1, 0x123456, 0xfffffe};
  uint8_t frame[256];
  unsigned long sent = 0;
  for (uint32_t qpn = first; qpn < first + count; ++qpn)
    for (size_t o = 0; o < sizeof opcodes; ++o)
      for (size_t s = 0; s < sizeof psns / sizeof psns[0]; ++s) {
        const size_t size = build_request(frame, dst_mac, src_mac, ntohl(dst_ip.s_addr), ntohl(src_ip.s_addr),
                                          opcodes[o], qpn, psns[s]);
        send_frame(&l, frame, size);
        ++sent;
      }
  printf("sent %lu RoCE requests to QPNs %#x..%#x\n", sent, first, first + count - 1);
  return 0;
}

// --- flood -------------------------------------------------------------------------------------

static int flood_mode(int argc, char** argv) {
  if (argc != 5) usage();
  struct link l = open_link(argv[2], 0);
  uint8_t frame[1000];
  memset(frame, 0x5a, sizeof frame);
  if (!parse_mac(argv[3], frame)) usage();
  memcpy(frame + 6, l.mac, 6);
  put16(frame + 12, 0x88b5);  // local experimental EtherType
  const unsigned long count = strtoul(argv[4], NULL, 0);
  for (unsigned long i = 0; i < count; ++i) send_frame(&l, frame, sizeof frame);
  printf("sent %lu frames\n", count);
  return 0;
}

int main(int argc, char** argv) {
  if (argc < 2) usage();
  if (!strcmp(argv[1], "listen")) return listen_mode(argc, argv);
  if (!strcmp(argv[1], "roce")) return roce_mode(argc, argv);
  if (!strcmp(argv[1], "flood")) return flood_mode(argc, argv);
  usage();
  return 2;
}
