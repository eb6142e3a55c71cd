/* Runs inside a guest: times MMIO to the first 15b3 PCI function's BAR0 through sysfs.
 * Reads: the init segment's health counter (non-posted, a full round trip through QEMU, the
 * vfio-user socket and the SystemC model). Writes: a UAR page doorbell area (posted). Prints one
 * "figure:" line per measurement. Built static on the host, carried in with hcavm --file. */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

static int read_file(const char* path, char* buf, size_t len) {
  FILE* f = fopen(path, "r");
  if (!f) return -1;
  size_t n = fread(buf, 1, len - 1, f);
  fclose(f);
  buf[n] = 0;
  return 0;
}

int main(int argc, char** argv) {
  int reads = argc > 1 ? atoi(argv[1]) : 2000;
  int writes = argc > 2 ? atoi(argv[2]) : 20000;
  char dev[512] = "", path[600], buf[64];
  DIR* d = opendir("/sys/bus/pci/devices");
  struct dirent* e;
  while (d && (e = readdir(d))) {
    snprintf(path, sizeof path, "/sys/bus/pci/devices/%s/vendor", e->d_name);
    if (read_file(path, buf, sizeof buf) == 0 && strncmp(buf, "0x15b3", 6) == 0)
      snprintf(dev, sizeof dev, "/sys/bus/pci/devices/%s", e->d_name);
  }
  if (d) closedir(d);
  if (!dev[0]) { fprintf(stderr, "mmio_probe: no 15b3 function\n"); return 1; }

  snprintf(path, sizeof path, "%s/enable", dev);  /* turns Memory Space on */
  int en = open(path, O_WRONLY);
  if (en < 0 || write(en, "1", 1) != 1) { perror("enable"); return 1; }
  close(en);
  snprintf(path, sizeof path, "%s/resource0", dev);
  int fd = open(path, O_RDWR | O_SYNC);
  if (fd < 0) { perror(path); return 1; }
  volatile uint32_t* bar = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (bar == MAP_FAILED) { perror("mmap"); return 1; }

  uint32_t fw = __builtin_bswap32(bar[0]);
  printf("figure: firmware %u.%u (read through BAR0)\n", fw & 0xffff, fw >> 16);

  double* lat = calloc(reads, sizeof *lat);
  uint32_t last = 0, changes = 0;
  for (int i = 0; i < reads; ++i) {
    double t0 = now_us();
    uint32_t v = bar[0x1010 / 4];
    lat[i] = now_us() - t0;
    changes += v != last;
    last = v;
  }
  qsort(lat, reads, sizeof *lat, cmp_double);
  printf("figure: mmio_read_round_trip_us median=%.1f p99=%.1f min=%.1f n=%d (health counter moved %u times)\n",
         lat[reads / 2], lat[(int)(reads * 0.99)], lat[0], reads, changes);

  volatile uint32_t* doorbell = bar + (0x3000 + 0x800) / 4; /* a UAR page's doorbell area */
  double t0 = now_us();
  for (int i = 0; i < writes; ++i) doorbell[0] = i;
  (void)bar[0]; /* a read after posted writes returns only once they all arrived */
  double t1 = now_us();
  printf("figure: posted_write_rate=%.0f writes/s n=%d (%.1f us each, flushed by one read)\n",
         writes / ((t1 - t0) / 1e6), writes, (t1 - t0) / writes);
  return 0;
}
