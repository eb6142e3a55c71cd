/* hca_verbs_check - a scripted verbs check between two hosts (runs in the test guests): RC, UC, XRC and UD.
 * Server and client may be one host (one function: the NIC's local loopback).
 *
 * Like ibv_rc_pingpong: the server waits for a TCP connection, both sides swap what the other needs
 * (QP number, PSN, GID, buffer address and rkey, MTU) and connect one RC QP each. Then both walk the
 * same list of steps; each step starts and ends with a handshake over the TCP connection, so the side
 * that receives or is the target of an operation can prepare (fill its memory, post receives) before
 * the other side acts, and look at the result after. Every payload is a pattern computed from the byte's
 * position in the message and a per-step seed; the side that can see the result compares it byte for
 * byte, and checks that the bytes around it kept their fill value.
 *
 * Each check prints "CHECK ok: ..." or "CHECK FAILED: ...". A timeout (every wait has one) or a failed
 * completion stops the sequence: the QP's state is then unknown. At the end the two sides swap their
 * counts; each exits 0 only if no check failed on either side.
 */
#define _GNU_SOURCE
#include <infiniband/verbs.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <netdb.h>
#include <poll.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* One registered buffer, in areas. Each area is big enough for the largest message plus guards. */
enum {
    AREA = 128 * 1024,
    SEND_OFF = 0 * AREA,   /* source of SENDs */
    RECV_OFF = 1 * AREA,   /* target of receives */
    RDMA_OFF = 2 * AREA,   /* what the peer writes, reads and does atomics on */
    LOCAL_OFF = 3 * AREA,  /* local side of RDMA WRITE/READ and atomic results */
    BUF_SIZE = 4 * AREA,
    GUARD = 64,            /* bytes after a target that must keep the fill value */
    FILL = 0xA5,
    MAX_WR = 32,
    MAX_SGE = 4,
    WANT_INLINE = 128,
    ATOMIC_AT = 4096,      /* offset of the 8-byte atomic target in RDMA_OFF and its result in LOCAL_OFF */
};

struct seg {  /* a piece of a message in an area: offset from the area's start, length */
    size_t off, len;
};

struct endpoint {  /* what one side tells the other */
    uint16_t lid;
    uint32_t qpn, psn, rkey;
    uint64_t addr;
    union ibv_gid gid;
    int mtu;  /* enum ibv_mtu */
};

struct ctx {
    /* options */
    const char *devname, *server;
    int ib_port, gid_index, tcp_port, timeout_s;
    bool events, skip_sqe, allow_missing, reliable_only;
    /* verbs */
    struct ibv_context *dev;
    struct ibv_pd *pd;
    struct ibv_mr *mr;
    struct ibv_comp_channel *chan;
    struct ibv_cq *scq, *rcq;
    struct ibv_qp *qp;
    uint8_t *buf;
    uint32_t max_inline;
    int mtu_bytes, rd_atomic;
    bool atomics, xrc, mw_type2;
    struct endpoint me, peer;
    /* control connection and results */
    int sock;
    bool is_server;
    const char *side, *other;
    int checks, failed;
    char peer_result[256];  /* the peer's RESULT line, if it came while we expected something else */
};

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void check(struct ctx *c, bool ok, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    printf("CHECK %s: ", ok ? "ok" : "FAILED");
    vprintf(fmt, ap);
    printf("\n");
    fflush(stdout);
    va_end(ap);
    c->checks++;
    if (!ok)
        c->failed++;
}

/* ---- patterns ---------------------------------------------------------------------------------- */

/* The byte at position pos of a message whose step uses seed: not periodic over 256 or 4096 bytes. */
static uint8_t pattern(uint32_t seed, size_t pos)
{
    uint32_t x = (uint32_t)pos * 2654435761u + seed * 0x9E3779B9u;
    x ^= x >> 15;
    x *= 0x2C1B3C6Du;
    x ^= x >> 12;
    return (uint8_t)(x >> 8);
}

/* Writes the message (total bytes) into the segments of the area at off, in order. */
static void fill_segs(struct ctx *c, size_t off, const struct seg *s, int n, uint32_t seed)
{
    size_t pos = 0;
    for (int i = 0; i < n; i++)
        for (size_t j = 0; j < s[i].len; j++)
            c->buf[off + s[i].off + j] = pattern(seed, pos++);
}

/* Checks the area at off: the first total bytes of the message in the segments, the fill value
 * everywhere else up to GUARD bytes past the last segment. Describes the first difference in why. */
static bool verify_segs(struct ctx *c, size_t off, const struct seg *s, int n, size_t total, uint32_t seed,
                        char *why, size_t why_len)
{
    size_t end = 0, bad = 0, first = 0;
    uint8_t got_first = 0, want_first = 0;
    for (int i = 0; i < n; i++)
        if (s[i].off + s[i].len > end)
            end = s[i].off + s[i].len;
    end += GUARD;
    for (size_t a = 0; a < end && off + a < BUF_SIZE; a++) {
        int want = FILL;
        size_t pos = 0;
        for (int i = 0; i < n; i++) {
            if (a >= s[i].off && a < s[i].off + s[i].len) {
                size_t p = pos + (a - s[i].off);
                if (p < total)
                    want = pattern(seed, p);
                break;
            }
            pos += s[i].len;
        }
        if (c->buf[off + a] != want) {
            if (bad++ == 0) {
                first = a;
                got_first = c->buf[off + a];
                want_first = (uint8_t)want;
            }
        }
    }
    if (bad)
        snprintf(why, why_len, " (%zu bad bytes; first at area offset %zu: 0x%02x, want 0x%02x)", bad, first,
                 got_first, want_first);
    else
        why[0] = '\0';
    return bad == 0;
}

static void to_sges(struct ctx *c, size_t off, const struct seg *s, int n, struct ibv_sge *sge)
{
    for (int i = 0; i < n; i++) {
        sge[i].addr = (uintptr_t)(c->buf + off + s[i].off);
        sge[i].length = (uint32_t)s[i].len;
        sge[i].lkey = c->mr->lkey;
    }
}

/* ---- the control connection -------------------------------------------------------------------- */

static bool ctl_write(struct ctx *c, const char *fmt, ...)
{
    char line[256];
    va_list ap;
    va_start(ap, fmt);
    int len = vsnprintf(line, sizeof line - 1, fmt, ap);
    va_end(ap);
    line[len++] = '\n';
    for (int done = 0; done < len;) {
        ssize_t r = send(c->sock, line + done, len - done, MSG_NOSIGNAL);
        if (r <= 0)
            return false;
        done += r;
    }
    return true;
}

/* Reads one line (without the newline); false on EOF, error or after timeout seconds. */
static bool ctl_read(struct ctx *c, char *line, size_t size, double timeout)
{
    double deadline = now() + timeout;
    size_t n = 0;
    for (;;) {
        struct pollfd p = {.fd = c->sock, .events = POLLIN};
        int left = (int)((deadline - now()) * 1000);
        if (left <= 0 || poll(&p, 1, left) <= 0)
            return false;
        char ch;
        if (recv(c->sock, &ch, 1, 0) != 1)
            return false;
        if (ch == '\n')
            break;
        if (n + 1 < size)
            line[n++] = ch;
    }
    line[n] = '\0';
    return true;
}

/* Both sides say where they are and wait for the other to get there. The peer may be waiting for a
 * completion meanwhile, so the wait is longer than one operation's. */
static bool sync_peer(struct ctx *c, const char *where)
{
    char line[256];
    if (!ctl_write(c, "AT %s", where) || !ctl_read(c, line, sizeof line, 3.0 * c->timeout_s + 10)) {
        check(c, false, "%s: the %s did not reach this point (connection lost or timed out)", where, c->other);
        return false;
    }
    if (strncmp(line, "RESULT ", 7) == 0) {  /* the peer stopped its sequence */
        snprintf(c->peer_result, sizeof c->peer_result, "%s", line);
        check(c, false, "%s: the %s stopped before this point", where, c->other);
        return false;
    }
    if (strncmp(line, "AT ", 3) != 0 || strcmp(line + 3, where) != 0) {
        check(c, false, "%s: the %s is elsewhere: '%s'", where, c->other, line);
        return false;
    }
    return true;
}

/* ---- completions ------------------------------------------------------------------------------- */

/* Waits up to the per-operation timeout for one completion on cq, busy-polling or (with -e) sleeping on
 * the completion channel. Returns 1 with *wc filled, 0 on timeout, -1 on a verbs error. */
static int wait_wc(struct ctx *c, struct ibv_cq *cq, struct ibv_wc *wc, double timeout)
{
    double deadline = now() + timeout;
    for (;;) {
        int n = ibv_poll_cq(cq, 1, wc);
        if (n != 0)
            return n < 0 ? -1 : 1;
        double left = deadline - now();
        if (left <= 0)
            return 0;
        if (!c->events) {
            sched_yield();
            continue;
        }
        if (ibv_req_notify_cq(cq, 0))
            return -1;
        n = ibv_poll_cq(cq, 1, wc);  /* one that arrived before the CQ was armed */
        if (n != 0)
            return n < 0 ? -1 : 1;
        struct pollfd p = {.fd = c->chan->fd, .events = POLLIN};
        if (poll(&p, 1, (int)(left * 1000) + 1) > 0) {
            struct ibv_cq *ev_cq;
            void *ev_ctx;
            if (ibv_get_cq_event(c->chan, &ev_cq, &ev_ctx) == 0)
                ibv_ack_cq_events(ev_cq, 1);
        }
    }
}

/* Waits for the completion of what (on the send or receive CQ) and checks its status and opcode.
 * False (and a failed check) on timeout or mismatch: the sequence cannot go on after that. */
static bool expect_wc(struct ctx *c, bool recv, const char *what, enum ibv_wc_opcode opcode,
                      enum ibv_wc_status status, struct ibv_wc *wc)
{
    int r = wait_wc(c, recv ? c->rcq : c->scq, wc, c->timeout_s);
    if (r == 0) {
        check(c, false, "%s: timed out after %d s waiting for its %s completion", what, c->timeout_s,
              recv ? "receive" : "send");
        return false;
    }
    if (r < 0) {
        check(c, false, "%s: polling the %s CQ failed: %s", what, recv ? "receive" : "send", strerror(errno));
        return false;
    }
    if (wc->status != status) {
        check(c, false, "%s: completion status '%s' (%d), want '%s' (vendor_err 0x%x)", what,
              ibv_wc_status_str(wc->status), wc->status, ibv_wc_status_str(status), wc->vendor_err);
        return false;
    }
    if (status == IBV_WC_SUCCESS && wc->opcode != opcode) {
        check(c, false, "%s: completion opcode %d, want %d", what, wc->opcode, opcode);
        return false;
    }
    return true;
}

/* ---- posting ----------------------------------------------------------------------------------- */

static bool post_recv(struct ctx *c, const char *what, size_t off, const struct seg *s, int n, uint64_t id)
{
    struct ibv_sge sge[MAX_SGE];
    struct ibv_recv_wr wr = {.wr_id = id, .sg_list = sge, .num_sge = n}, *bad;
    to_sges(c, off, s, n, sge);
    int err = ibv_post_recv(c->qp, &wr, &bad);
    if (err)
        check(c, false, "%s: ibv_post_recv: %s", what, strerror(err));
    return err == 0;
}

static bool post_send(struct ctx *c, const char *what, struct ibv_send_wr *wr)
{
    struct ibv_send_wr *bad;
    int err = ibv_post_send(c->qp, wr, &bad);
    if (err)
        check(c, false, "%s: ibv_post_send: %s", what, strerror(err));
    return err == 0;
}

/* An RDMA WRITE/READ (with imm if opcode says so) between local segments and the peer's area at roff. */
static bool post_rdma(struct ctx *c, const char *what, enum ibv_wr_opcode op, const struct seg *s, int n,
                      size_t roff, uint32_t rkey, uint32_t imm)
{
    struct ibv_sge sge[MAX_SGE];
    to_sges(c, LOCAL_OFF, s, n, sge);
    struct ibv_send_wr wr = {
        .wr_id = 1, .sg_list = sge, .num_sge = n, .opcode = op, .send_flags = IBV_SEND_SIGNALED,
        .imm_data = htonl(imm),
        .wr.rdma = {.remote_addr = c->peer.addr + RDMA_OFF + roff, .rkey = rkey},
    };
    return post_send(c, what, &wr);
}

/* The small SEND that tells the peer an RDMA WRITE is done. */
static bool notify_peer(struct ctx *c, const char *what)
{
    struct ibv_sge sge = {.addr = (uintptr_t)(c->buf + SEND_OFF), .length = 4, .lkey = c->mr->lkey};
    struct ibv_send_wr wr = {.wr_id = 2, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
                             .send_flags = IBV_SEND_SIGNALED};
    struct ibv_wc wc;
    char note[128];
    snprintf(note, sizeof note, "%s, then the notifying SEND", what);
    return post_send(c, note, &wr) && expect_wc(c, false, note, IBV_WC_SEND, IBV_WC_SUCCESS, &wc);
}

/* ---- the steps --------------------------------------------------------------------------------- */

enum flavour { PLAIN, WITH_IMM, INLINE };

/* One message from sender to the other side: from segments ss of the SEND area (INLINE: from an
 * unregistered copy that is wiped right after posting) into segments rs of the RECV area. */
static bool send_recv(struct ctx *c, const char *what, bool i_send, enum flavour fl, const struct seg *ss,
                      int nss, const struct seg *rs, int nrs, uint32_t seed)
{
    size_t total = 0;
    for (int i = 0; i < nss; i++)
        total += ss[i].len;
    uint32_t imm = 0x5EED0000u ^ seed;
    struct ibv_wc wc;
    if (!i_send) {
        memset(c->buf + RECV_OFF, FILL, AREA);
        if (!post_recv(c, what, RECV_OFF, rs, nrs, 3) || !sync_peer(c, what))
            return false;
        if (!expect_wc(c, true, what, IBV_WC_RECV, IBV_WC_SUCCESS, &wc))
            return false;
        char why[128];
        bool data = verify_segs(c, RECV_OFF, rs, nrs, total, seed, why, sizeof why);
        bool len = wc.byte_len == total;
        bool imm_ok = fl != WITH_IMM || ((wc.wc_flags & IBV_WC_WITH_IMM) && ntohl(wc.imm_data) == imm);
        check(c, data && len && imm_ok, "%s: %zu bytes received %s%s%s%s", what, total,
              data ? "intact" : "with errors", why, len ? "" : " (wrong byte_len)",
              imm_ok ? "" : " (immediate missing or wrong)");
        return sync_peer(c, what);
    }
    uint8_t copy[WANT_INLINE];
    struct ibv_sge sge[MAX_SGE];
    fill_segs(c, SEND_OFF, ss, nss, seed);
    to_sges(c, SEND_OFF, ss, nss, sge);
    if (fl == INLINE) {  /* the data must be taken at post time: no lkey, wiped before the completion */
        if (total > sizeof copy || total > c->max_inline) {
            check(c, false, "%s: %zu bytes is over max_inline_data %u", what, total, c->max_inline);
            return false;
        }
        memcpy(copy, c->buf + SEND_OFF + ss[0].off, total);
        sge[0] = (struct ibv_sge){.addr = (uintptr_t)copy, .length = (uint32_t)total, .lkey = 0};
        nss = 1;
    }
    struct ibv_send_wr wr = {
        .wr_id = 4, .sg_list = sge, .num_sge = nss, .send_flags = IBV_SEND_SIGNALED,
        .opcode = fl == WITH_IMM ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND, .imm_data = htonl(imm),
    };
    if (fl == INLINE)
        wr.send_flags |= IBV_SEND_INLINE;
    if (!sync_peer(c, what) || !post_send(c, what, &wr))
        return false;
    if (fl == INLINE)
        memset(copy, 0, sizeof copy);
    return expect_wc(c, false, what, IBV_WC_SEND, IBV_WC_SUCCESS, &wc) && sync_peer(c, what);
}

static bool step_send_sizes(struct ctx *c)
{
    size_t m = (size_t)c->mtu_bytes;
    size_t sizes[] = {1, 63, 64, 4095, 4096, 4097, 65536, m - 1, m, m + 1, 2 * m, 3 * m, 16 * m};
    int n = 0;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        bool dup = sizes[i] > AREA - GUARD;
        for (size_t j = 0; j < i; j++)
            dup = dup || sizes[j] == sizes[i];
        if (dup)
            continue;
        for (int dir = 0; dir < 2; dir++) {  /* client -> server, then back */
            bool client_sends = dir == 0;
            char what[96];
            snprintf(what, sizeof what, "SEND/RECV %zu B %s", sizes[i], client_sends ? "client->server" : "server->client");
            struct seg s = {0, sizes[i]}, r = {0, sizes[i] + GUARD};
            if (!send_recv(c, what, client_sends != c->is_server, PLAIN, &s, 1, &r, 1, 100 + n++))
                return false;
        }
    }
    return true;
}

static bool step_send_flavours(struct ctx *c)
{
    bool client = !c->is_server;
    struct seg s = {0, 777}, r = {0, 777 + GUARD};
    if (!send_recv(c, "SEND with immediate 777 B", client, WITH_IMM, &s, 1, &r, 1, 200))
        return false;
    /* The size asked for as max_inline_data when the QP was created (the device gives at least that). */
    s.len = WANT_INLINE;
    r.len = WANT_INLINE + GUARD;
    if (!send_recv(c, "SEND inline 128 B (unregistered source, wiped after posting)", client, INLINE, &s, 1, &r, 1, 201))
        return false;
    /* 3 SGEs at unaligned offsets into 3 receive SGEs cut elsewhere. */
    struct seg ss[3] = {{3, 1000}, {2053, 3001}, {9001, 77}}, rs[3] = {{5, 501}, {1031, 3000}, {8197, 577 + GUARD}};
    return send_recv(c, "multi-SGE SEND 4078 B (3 SGEs) into 3 receive SGEs", client, PLAIN, ss, 3, rs, 3, 202);
}

/* The client writes n bytes from LOCAL+5 to the server's RDMA area +13 (with immediate: the server's
 * receive completes; without: a SEND notifies it), then the server checks its area. */
static bool rdma_write(struct ctx *c, size_t n, bool with_imm, uint32_t seed)
{
    char what[96], why[128];
    snprintf(what, sizeof what, "RDMA WRITE%s %zu B (local +5, remote +13)", with_imm ? " with immediate" : "", n);
    struct seg ls = {5, n}, rs = {13, n}, note = {0, 64};
    uint32_t imm = 0xAB000000u ^ seed;
    struct ibv_wc wc;
    if (c->is_server) {
        memset(c->buf + RDMA_OFF, FILL, AREA);
        if (!post_recv(c, what, RECV_OFF, &note, 1, 5) || !sync_peer(c, what))
            return false;
        if (with_imm) {
            if (!expect_wc(c, true, what, IBV_WC_RECV_RDMA_WITH_IMM, IBV_WC_SUCCESS, &wc))
                return false;
            check(c, (wc.wc_flags & IBV_WC_WITH_IMM) && ntohl(wc.imm_data) == imm,
                  "%s: receive completion carries the immediate 0x%08x", what, imm);
        } else if (!expect_wc(c, true, what, IBV_WC_RECV, IBV_WC_SUCCESS, &wc)) {
            return false;  /* the notifying SEND did not come */
        }
        bool ok = verify_segs(c, RDMA_OFF, &rs, 1, n, seed, why, sizeof why);
        check(c, ok, "%s: data %s in the target%s", what, ok ? "intact" : "wrong", why);
        return sync_peer(c, what);
    }
    fill_segs(c, LOCAL_OFF, &ls, 1, seed);
    if (!sync_peer(c, what) ||
        !post_rdma(c, what, with_imm ? IBV_WR_RDMA_WRITE_WITH_IMM : IBV_WR_RDMA_WRITE, &ls, 1, 13, c->peer.rkey, imm) ||
        !expect_wc(c, false, what, IBV_WC_RDMA_WRITE, IBV_WC_SUCCESS, &wc))
        return false;
    if (!with_imm && !notify_peer(c, what))
        return false;
    return sync_peer(c, what);
}

static bool step_rdma_write(struct ctx *c)
{
    return rdma_write(c, 1, false, 300) && rdma_write(c, 4097, false, 301) && rdma_write(c, 65536, false, 302) &&
           rdma_write(c, 3 * (size_t)c->mtu_bytes + 7, true, 303) && rdma_write(c, 64, true, 304);
}

/* The client reads 8096 bytes from the server's RDMA area +11 into 3 local SGEs. */
static bool step_rdma_read(struct ctx *c)
{
    const char *what = "RDMA READ 8096 B (remote +11) into 3 SGEs";
    struct seg rs = {11, 8096}, ls[3] = {{7, 1001}, {2049, 4096}, {7001, 2999}};
    uint32_t seed = 400;
    struct ibv_wc wc;
    char why[128];
    if (c->is_server) {
        memset(c->buf + RDMA_OFF, FILL, AREA);
        fill_segs(c, RDMA_OFF, &rs, 1, seed);
        return sync_peer(c, what) && sync_peer(c, what);
    }
    memset(c->buf + LOCAL_OFF, FILL, AREA);
    if (!sync_peer(c, what) || !post_rdma(c, what, IBV_WR_RDMA_READ, ls, 3, 11, c->peer.rkey, 0) ||
        !expect_wc(c, false, what, IBV_WC_RDMA_READ, IBV_WC_SUCCESS, &wc))
        return false;
    bool ok = verify_segs(c, LOCAL_OFF, ls, 3, 8096, seed, why, sizeof why);
    check(c, ok && wc.byte_len == 8096, "%s: data %s%s%s", what, ok ? "intact" : "wrong", why,
          wc.byte_len == 8096 ? "" : " (wrong byte_len)");
    return sync_peer(c, what);
}

/* One 8-byte atomic on the server's word; the old value lands in LOCAL+ATOMIC_AT. */
static bool atomic_op(struct ctx *c, const char *what, enum ibv_wr_opcode op, uint64_t cmp_or_add, uint64_t swap,
                      uint64_t *old)
{
    volatile uint64_t *res = (volatile uint64_t *)(c->buf + LOCAL_OFF + ATOMIC_AT);
    *res = 0xDEADBEEFDEADBEEFull;
    struct ibv_sge sge = {.addr = (uintptr_t)res, .length = 8, .lkey = c->mr->lkey};
    struct ibv_send_wr wr = {
        .wr_id = 6, .sg_list = &sge, .num_sge = 1, .opcode = op, .send_flags = IBV_SEND_SIGNALED,
        .wr.atomic = {.remote_addr = c->peer.addr + RDMA_OFF + ATOMIC_AT, .compare_add = cmp_or_add,
                      .swap = swap, .rkey = c->peer.rkey},
    };
    struct ibv_wc wc;
    enum ibv_wc_opcode want = op == IBV_WR_ATOMIC_CMP_AND_SWP ? IBV_WC_COMP_SWAP : IBV_WC_FETCH_ADD;
    if (!post_send(c, what, &wr) || !expect_wc(c, false, what, want, IBV_WC_SUCCESS, &wc))
        return false;
    *old = *res;
    return true;
}

static bool step_atomics(struct ctx *c)
{
    const char *what = "ATOMIC CMP_AND_SWP and FETCH_AND_ADD";
    const uint64_t v0 = 0x1122334455667788ull, v1 = 0x0123456789ABCDEFull, v2 = 0xFEDCBA9876543210ull,
                   add = 0x0000000100000003ull;
    volatile uint64_t *word = (volatile uint64_t *)(c->buf + RDMA_OFF + ATOMIC_AT);
    if (!c->atomics) {
        check(c, false, "%s: the device reports no atomic support (atomic_cap NONE)", what);
        return true;  /* nothing was posted: the sequence can go on */
    }
    if (c->is_server) {
        *word = v0;
        if (!sync_peer(c, what) || !sync_peer(c, what))
            return false;
        check(c, *word == v1 + add, "ATOMIC: target word is 0x%016" PRIx64 " after swap and add (want 0x%016" PRIx64 ")",
              *word, v1 + add);
        return true;
    }
    uint64_t old;
    if (!sync_peer(c, what))
        return false;
    if (!atomic_op(c, "CMP_AND_SWP (matching compare)", IBV_WR_ATOMIC_CMP_AND_SWP, v0, v1, &old))
        return false;
    check(c, old == v0, "CMP_AND_SWP (matching compare) returned 0x%016" PRIx64 " (want the old 0x%016" PRIx64 ")", old, v0);
    if (!atomic_op(c, "CMP_AND_SWP (non-matching compare)", IBV_WR_ATOMIC_CMP_AND_SWP, v0, v2, &old))
        return false;
    check(c, old == v1, "CMP_AND_SWP (non-matching compare) returned 0x%016" PRIx64 " (want 0x%016" PRIx64 ", no swap)",
          old, v1);
    if (!atomic_op(c, "FETCH_AND_ADD", IBV_WR_ATOMIC_FETCH_AND_ADD, add, 0, &old))
        return false;
    check(c, old == v1, "FETCH_AND_ADD returned 0x%016" PRIx64 " (want 0x%016" PRIx64 ")", old, v1);
    /* Read the word back through the HCA too. */
    struct seg ls = {ATOMIC_AT + 64, 8};
    struct ibv_wc wc;
    if (!post_rdma(c, "RDMA READ of the atomic word", IBV_WR_RDMA_READ, &ls, 1, ATOMIC_AT, c->peer.rkey, 0) ||
        !expect_wc(c, false, "RDMA READ of the atomic word", IBV_WC_RDMA_READ, IBV_WC_SUCCESS, &wc))
        return false;
    uint64_t now_word;
    memcpy(&now_word, c->buf + LOCAL_OFF + ATOMIC_AT + 64, 8);
    check(c, now_word == v1 + add, "ATOMIC: the word read back is 0x%016" PRIx64 " (want 0x%016" PRIx64 ")", now_word,
          v1 + add);
    return sync_peer(c, what);
}

/* 8 SENDs, only the last signalled: one send completion; the server receives and checks all 8. */
static bool step_unsignalled(struct ctx *c)
{
    const char *what = "7 unsignalled SENDs + 1 signalled";
    enum { N = 8, LEN = 100, STRIDE = 256 };
    struct ibv_wc wc;
    char why[128];
    if (c->is_server) {
        memset(c->buf + RECV_OFF, FILL, AREA);
        for (int i = 0; i < N; i++) {
            struct seg r = {(size_t)i * STRIDE, LEN};
            if (!post_recv(c, what, RECV_OFF, &r, 1, 10 + i))
                return false;
        }
        if (!sync_peer(c, what))
            return false;
        int good = 0;
        for (int i = 0; i < N; i++) {
            if (!expect_wc(c, true, what, IBV_WC_RECV, IBV_WC_SUCCESS, &wc))
                return false;
            struct seg r = {0, LEN};
            good += wc.wr_id == (uint64_t)(10 + i) && wc.byte_len == LEN &&
                    verify_segs(c, RECV_OFF + (size_t)i * STRIDE, &r, 1, LEN, 500 + i, why, sizeof why);
        }
        check(c, good == N, "%s: %d of %d messages received in order and intact", what, good, N);
        return sync_peer(c, what);
    }
    struct ibv_sge sge[N];
    struct ibv_send_wr wr[N], *bad;
    for (int i = 0; i < N; i++) {
        struct seg s = {(size_t)i * STRIDE, LEN};
        fill_segs(c, SEND_OFF, &s, 1, 500 + i);
        to_sges(c, SEND_OFF, &s, 1, &sge[i]);
        wr[i] = (struct ibv_send_wr){.wr_id = 20 + i, .sg_list = &sge[i], .num_sge = 1, .opcode = IBV_WR_SEND,
                                     .send_flags = i == N - 1 ? IBV_SEND_SIGNALED : 0,
                                     .next = i == N - 1 ? NULL : &wr[i + 1]};
    }
    if (!sync_peer(c, what))
        return false;
    int err = ibv_post_send(c->qp, wr, &bad);
    if (err) {
        check(c, false, "%s: ibv_post_send: %s", what, strerror(err));
        return false;
    }
    if (!expect_wc(c, false, what, IBV_WC_SEND, IBV_WC_SUCCESS, &wc))
        return false;
    struct ibv_wc extra;
    int more = wait_wc(c, c->scq, &extra, 0.5);
    check(c, wc.wr_id == 20 + N - 1 && more == 0, "%s: one send completion, for the signalled one (wr_id %" PRIu64 "%s)",
          what, wc.wr_id, more ? ", then another" : "");
    return sync_peer(c, what);
}

/* Last: an RDMA WRITE with a wrong rkey must fail with a remote access error; the QP is then in error. */
static bool step_bad_rkey(struct ctx *c)
{
    const char *what = "RDMA WRITE with a bad rkey";
    if (c->is_server)
        return sync_peer(c, what) && sync_peer(c, what);
    struct seg ls = {0, 64};
    struct ibv_wc wc;
    fill_segs(c, LOCAL_OFF, &ls, 1, 600);
    if (!sync_peer(c, what) || !post_rdma(c, what, IBV_WR_RDMA_WRITE, &ls, 1, 0, c->peer.rkey ^ 0x5A5A5A00u, 0))
        return false;
    bool ok = expect_wc(c, false, what, IBV_WC_RDMA_WRITE, IBV_WC_REM_ACCESS_ERR, &wc);
    if (ok)
        check(c, true, "%s: completed with IBV_WC_REM_ACCESS_ERR", what);
    return sync_peer(c, what) && ok;
}

/* Memory re-registration (ibv_rereg_mr) on the server, each time checked by the client's RDMA READ
 * through the key the server reports: access flags changed in place (mlx5_ib does it with a UMR WQE
 * on its UMR QP; issue 16: the guest kernel hung there), remote atomic added (UMR, or revoke and a
 * new MKEY), and the pages changed (a new MKEY). */
static bool step_rereg_mr(struct ctx *c)
{
    const char *what = "MR re-registration";
    enum { LEN = 4096, SEED = 900 };
    char line[256];
    struct ibv_wc wc;
    if (c->is_server) {
        uint8_t *pages[2] = {aligned_alloc(4096, LEN), aligned_alloc(4096, LEN)};
        struct ibv_mr *mr = pages[0] && pages[1] ? ibv_reg_mr(c->pd, pages[0], LEN, IBV_ACCESS_LOCAL_WRITE) : NULL;
        check(c, mr != NULL, "%s: ibv_reg_mr of a local-only region", what);
        static const struct {
            const char *name;
            int flags, access, page;
        } rounds[] = {
            {"access + remote read", IBV_REREG_MR_CHANGE_ACCESS, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ, 0},
            {"access + remote atomic", IBV_REREG_MR_CHANGE_ACCESS,
             IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC, 0},
            {"translation (other pages)", IBV_REREG_MR_CHANGE_TRANSLATION, 0, 1},
        };
        bool ok = mr != NULL;
        for (size_t i = 0; i < sizeof rounds / sizeof rounds[0]; i++) {
            uint8_t *page = pages[rounds[i].page];
            if (ok) {
                for (size_t j = 0; j < LEN; j++)
                    page[j] = pattern(SEED + (uint32_t)i, j);
                int rc = rounds[i].flags == IBV_REREG_MR_CHANGE_TRANSLATION
                             ? ibv_rereg_mr(mr, rounds[i].flags, NULL, page, LEN, 0)
                             : ibv_rereg_mr(mr, rounds[i].flags, NULL, NULL, 0, rounds[i].access);
                ok = rc == 0;
                check(c, ok, "%s: ibv_rereg_mr %s returned %d", what, rounds[i].name, rc);
            }
            if (!ctl_write(c, "MR %d %" PRIx64 " %x", ok, (uint64_t)(uintptr_t)page, ok ? mr->rkey : 0) ||
                !sync_peer(c, what))
                ok = false;
        }
        if (mr)
            ibv_dereg_mr(mr);
        free(pages[0]);
        free(pages[1]);
        return ok;
    }
    for (uint32_t i = 0; i < 3; i++) {
        int ok = 0;
        uint64_t addr = 0;
        unsigned rkey = 0;
        if (!ctl_read(c, line, sizeof line, 3.0 * c->timeout_s + 10) ||
            sscanf(line, "MR %d %" SCNx64 " %x", &ok, &addr, &rkey) != 3 || !ok) {
            check(c, false, "%s: the server has no re-registered region to read (round %u: '%s')", what, i, line);
            sync_peer(c, what);
            return false;
        }
        memset(c->buf + LOCAL_OFF, FILL, LEN);
        struct ibv_sge sge = {.addr = (uintptr_t)(c->buf + LOCAL_OFF), .length = LEN, .lkey = c->mr->lkey};
        struct ibv_send_wr wr = {.wr_id = 9, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_RDMA_READ,
                                 .send_flags = IBV_SEND_SIGNALED, .wr.rdma = {.remote_addr = addr, .rkey = rkey}};
        if (!post_send(c, what, &wr) || !expect_wc(c, false, what, IBV_WC_RDMA_READ, IBV_WC_SUCCESS, &wc))
            return false;
        size_t bad = 0;
        for (size_t j = 0; j < LEN; j++)
            bad += c->buf[LOCAL_OFF + j] != pattern(SEED + i, j);
        check(c, bad == 0, "%s: round %u: RDMA READ through rkey 0x%x gives the region's bytes (%zu wrong)", what, i,
              rkey, bad);
        if (!sync_peer(c, what))
            return false;
    }
    return true;
}

/* On-demand paging: each side registers an ODP MR over fresh anonymous memory, so the MR maps none
 * of its pages at registration. The client fills its region after registering it (the pages are in
 * the process, not in the MR: its requester faults) and RDMA WRITEs it into the server's untouched
 * region (the responder faults and answers RNR NAK until the driver has mapped the pages); the
 * server checks its memory. Left out when the device offers no RC ODP SEND and WRITE. */
static bool step_odp(struct ctx *c)
{
    const char *what = "ODP RDMA WRITE 64 KiB between regions unmapped at registration";
    enum { LEN = 65536, SEED = 1700 };
    struct ibv_device_attr_ex dx;
    const uint32_t need = IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_WRITE;
    bool odp = ibv_query_device_ex(c->dev, NULL, &dx) == 0 && (dx.odp_caps.general_caps & IBV_ODP_SUPPORT) &&
               (dx.odp_caps.per_transport_caps.rc_odp_caps & need) == need;
    uint8_t *region = odp ? mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) : MAP_FAILED;
    struct ibv_mr *mr = region == MAP_FAILED ? NULL
                        : ibv_reg_mr(c->pd, region, LEN, IBV_ACCESS_ON_DEMAND | IBV_ACCESS_LOCAL_WRITE |
                                                             IBV_ACCESS_REMOTE_WRITE);
    if (odp)
        check(c, mr != NULL, "%s: ibv_reg_mr with IBV_ACCESS_ON_DEMAND", what);
    char line[256];
    int peer_ok = 0;
    uint64_t peer_addr = 0;
    unsigned peer_rkey = 0;
    bool ok = ctl_write(c, "ODP %d %" PRIx64 " %x", mr != NULL, (uint64_t)(uintptr_t)region, mr ? mr->rkey : 0) &&
              ctl_read(c, line, sizeof line, 3.0 * c->timeout_s + 10) &&
              sscanf(line, "ODP %d %" SCNx64 " %x", &peer_ok, &peer_addr, &peer_rkey) == 3;
    if (ok && (!mr || !peer_ok)) {
        printf("%s: step ODP left out: %s\n", c->side, odp ? "no ODP region on one side" : "the device offers no RC ODP");
    } else if (ok && c->is_server) {
        struct seg note = {0, 64};
        struct ibv_wc wc;
        ok = post_recv(c, what, RECV_OFF, &note, 1, 17) && sync_peer(c, what) &&
             expect_wc(c, true, what, IBV_WC_RECV, IBV_WC_SUCCESS, &wc);
        if (ok) {
            size_t bad = 0;
            for (size_t j = 0; j < LEN; j++)
                bad += region[j] != pattern(SEED, j);
            check(c, bad == 0, "%s: data intact in the target (%zu bytes wrong)", what, bad);
            ok = sync_peer(c, what);
        }
    } else if (ok) {
        for (size_t j = 0; j < LEN; j++)
            region[j] = pattern(SEED, j);
        struct ibv_sge sge = {.addr = (uintptr_t)region, .length = LEN, .lkey = mr->lkey};
        struct ibv_send_wr wr = {.wr_id = 17, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
                                 .send_flags = IBV_SEND_SIGNALED,
                                 .wr.rdma = {.remote_addr = peer_addr, .rkey = peer_rkey}};
        struct ibv_wc wc;
        ok = sync_peer(c, what) && post_send(c, what, &wr) &&
             expect_wc(c, false, what, IBV_WC_RDMA_WRITE, IBV_WC_SUCCESS, &wc) && notify_peer(c, what) &&
             sync_peer(c, what);
    }
    if (mr)
        ibv_dereg_mr(mr);
    if (region != MAP_FAILED)
        munmap(region, LEN);
    return ok;
}

static enum ibv_mtu mtu_enum(int bytes)
{
    return bytes == 4096 ? IBV_MTU_4096 : bytes == 2048 ? IBV_MTU_2048 : bytes == 1024 ? IBV_MTU_1024
         : bytes == 512 ? IBV_MTU_512 : IBV_MTU_256;
}

/* A UC QP on each side, on the shared CQs, brought up as ib_write_bw -c UC and rdma-core's tests
 * bring one: the access flags (remote write) at INIT only, none at RTR. The client then does RDMA
 * WRITEs with and without immediate and the notifying SENDs over it, and the server checks its
 * memory and the immediate (issue 16: these WRITEs completed at the sender and never landed); then
 * SENDs both ways, with immediate, inline and multi-SGE. */
static bool step_uc_write(struct ctx *c)
{
    const char *what = "UC connection";
    struct ibv_qp_init_attr qa = {
        .send_cq = c->scq, .recv_cq = c->rcq, .qp_type = IBV_QPT_UC,
        .cap = {.max_send_wr = MAX_WR, .max_recv_wr = MAX_WR, .max_send_sge = MAX_SGE, .max_recv_sge = MAX_SGE,
                .max_inline_data = WANT_INLINE},
    };
    struct ibv_qp *uc = ibv_create_qp(c->pd, &qa);
    struct ibv_qp_attr init = {.qp_state = IBV_QPS_INIT, .port_num = c->ib_port, .pkey_index = 0,
                               .qp_access_flags = IBV_ACCESS_REMOTE_WRITE};
    if (!uc || ibv_modify_qp(uc, &init, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)) {
        check(c, false, "%s: create a UC QP and move it to INIT: %s", what, strerror(errno));
        if (uc)
            ibv_destroy_qp(uc);
        return false;
    }
    uint32_t psn = (uint32_t)lrand48() & 0xffffff;
    char line[256];
    unsigned peer_qpn = 0, peer_psn = 0;
    if (!ctl_write(c, "UC %x %x", uc->qp_num, psn) || !ctl_read(c, line, sizeof line, 3.0 * c->timeout_s + 10) ||
        sscanf(line, "UC %x %x", &peer_qpn, &peer_psn) != 2) {
        check(c, false, "%s: no UC QP number from the %s", what, c->other);
        ibv_destroy_qp(uc);
        return false;
    }
    struct ibv_qp_attr rtr = {
        .qp_state = IBV_QPS_RTR, .path_mtu = mtu_enum(c->mtu_bytes),
        .dest_qp_num = peer_qpn, .rq_psn = peer_psn,
        .ah_attr = {.dlid = c->peer.lid, .port_num = (uint8_t)c->ib_port, .is_global = c->gid_index >= 0,
                    .grh = {.dgid = c->peer.gid, .sgid_index = (uint8_t)c->gid_index, .hop_limit = 64}},
    };
    struct ibv_qp_attr rts = {.qp_state = IBV_QPS_RTS, .sq_psn = psn};
    bool up = ibv_modify_qp(uc, &rtr, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN) == 0 &&
              ibv_modify_qp(uc, &rts, IBV_QP_STATE | IBV_QP_SQ_PSN) == 0;
    check(c, up, "%s: UC QP 0x%06x to RTS (peer QPN 0x%06x)", what, uc->qp_num, peer_qpn);
    bool ok = up && sync_peer(c, what);
    struct ibv_qp *rc = c->qp;
    c->qp = uc;  /* the RDMA WRITE helpers post on c->qp */
    ok = ok && rdma_write(c, 4097, false, 800) && rdma_write(c, 3 * (size_t)c->mtu_bytes + 7, true, 801) &&
         rdma_write(c, 64, true, 802);
    /* SENDs over UC too, each way: plain multi-packet, with immediate, inline, multi-SGE. */
    struct seg s1 = {0, 2 * (size_t)c->mtu_bytes + 5}, r1 = {0, 2 * (size_t)c->mtu_bytes + 5 + GUARD};
    struct seg s2 = {0, 333}, r2 = {0, 333 + GUARD}, s3 = {0, WANT_INLINE}, r3 = {0, WANT_INLINE + GUARD};
    struct seg ss[3] = {{3, 1000}, {2053, 3001}, {9001, 77}}, rs[3] = {{5, 501}, {1031, 3000}, {8197, 577 + GUARD}};
    ok = ok && send_recv(c, "UC SEND client->server", !c->is_server, PLAIN, &s1, 1, &r1, 1, 803) &&
         send_recv(c, "UC SEND server->client", c->is_server, PLAIN, &s1, 1, &r1, 1, 804) &&
         send_recv(c, "UC SEND with immediate", !c->is_server, WITH_IMM, &s2, 1, &r2, 1, 805) &&
         send_recv(c, "UC SEND inline", !c->is_server, INLINE, &s3, 1, &r3, 1, 806) &&
         send_recv(c, "UC multi-SGE SEND (3 SGEs)", !c->is_server, PLAIN, ss, 3, rs, 3, 807);
    c->qp = rc;
    ibv_destroy_qp(uc);
    return ok;
}

/* XRC (issue 16): each side opens an XRC domain with an XRC SRQ (completing on the receive CQ), a
 * target QP and an initiator QP, and connects its initiator to the other's target. The client then
 * SENDs (plain and with immediate) into the server's SRQ, RDMA WRITEs with immediate, RDMA READs and
 * does a FETCH_AND_ADD through its initiator QP; the server checks its memory and completions. */
struct xrc {
    struct ibv_xrcd *xrcd;
    struct ibv_srq *srq;
    struct ibv_qp *tgt, *ini;
};

static void xrc_free(struct xrc *x)
{
    if (x->ini) ibv_destroy_qp(x->ini);
    if (x->tgt) ibv_destroy_qp(x->tgt);
    if (x->srq) ibv_destroy_srq(x->srq);
    if (x->xrcd) ibv_close_xrcd(x->xrcd);
}

static bool xrc_connect(struct ctx *c, struct xrc *x, uint32_t peer_ini, uint32_t peer_tgt, uint32_t peer_psn,
                        uint32_t my_psn)
{
    struct ibv_ah_attr ah = {.dlid = c->peer.lid, .port_num = (uint8_t)c->ib_port, .is_global = c->gid_index >= 0,
                             .grh = {.dgid = c->peer.gid, .sgid_index = (uint8_t)c->gid_index, .hop_limit = 64}};
    const int init_mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
    const int rtr_mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
    struct ibv_qp_attr init = {.qp_state = IBV_QPS_INIT, .port_num = c->ib_port,
                               .qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                                                  IBV_ACCESS_REMOTE_ATOMIC};
    struct ibv_qp_attr tgt_rtr = {.qp_state = IBV_QPS_RTR, .path_mtu = mtu_enum(c->mtu_bytes), .dest_qp_num = peer_ini,
                                  .rq_psn = peer_psn, .max_dest_rd_atomic = (uint8_t)c->rd_atomic,
                                  .min_rnr_timer = 12, .ah_attr = ah};
    struct ibv_qp_attr ini_rtr = {.qp_state = IBV_QPS_RTR, .path_mtu = mtu_enum(c->mtu_bytes), .dest_qp_num = peer_tgt,
                                  .rq_psn = peer_psn, .ah_attr = ah};
    struct ibv_qp_attr ini_rts = {.qp_state = IBV_QPS_RTS, .sq_psn = my_psn, .timeout = 17, .retry_cnt = 7,
                                  .rnr_retry = 7, .max_rd_atomic = (uint8_t)c->rd_atomic};
    return ibv_modify_qp(x->tgt, &init, init_mask) == 0 &&
           ibv_modify_qp(x->tgt, &tgt_rtr, rtr_mask | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER) == 0 &&
           ibv_modify_qp(x->ini, &init, init_mask) == 0 &&
           ibv_modify_qp(x->ini, &ini_rtr, rtr_mask) == 0 &&
           ibv_modify_qp(x->ini, &ini_rts, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                                              IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC) == 0;
}

/* One XRC operation of the client into the server's SRQ / memory, checked on the server. */
static bool xrc_op(struct ctx *c, struct xrc *x, const char *what, enum ibv_wr_opcode op, size_t n, uint32_t srqn,
                   uint32_t seed)
{
    const bool recv = op == IBV_WR_SEND || op == IBV_WR_SEND_WITH_IMM || op == IBV_WR_RDMA_WRITE_WITH_IMM;
    const uint32_t imm = 0x0ACE0000u ^ seed;
    struct seg rs = {17, n}, ls = {9, n};
    char why[128];
    struct ibv_wc wc;
    if (c->is_server) {
        memset(c->buf + RECV_OFF, FILL, AREA);
        memset(c->buf + RDMA_OFF, FILL, AREA);
        if (op == IBV_WR_RDMA_READ)
            fill_segs(c, RDMA_OFF, &rs, 1, seed);
        if (recv) {
            struct seg r = {17, n + GUARD};
            struct ibv_sge sge;
            to_sges(c, RECV_OFF, &r, 1, &sge);
            struct ibv_recv_wr wr = {.wr_id = 9, .sg_list = &sge, .num_sge = 1}, *bad;
            int err = ibv_post_srq_recv(x->srq, &wr, &bad);
            if (err) {
                check(c, false, "%s: ibv_post_srq_recv: %s", what, strerror(err));
                return false;
            }
        }
        if (!sync_peer(c, what))
            return false;
        if (recv) {
            enum ibv_wc_opcode want = op == IBV_WR_RDMA_WRITE_WITH_IMM ? IBV_WC_RECV_RDMA_WITH_IMM : IBV_WC_RECV;
            if (!expect_wc(c, true, what, want, IBV_WC_SUCCESS, &wc))
                return false;
            size_t off = op == IBV_WR_RDMA_WRITE_WITH_IMM ? RDMA_OFF : RECV_OFF;
            bool data = verify_segs(c, off, &rs, 1, n, seed, why, sizeof why);
            bool imm_ok = op == IBV_WR_SEND || ((wc.wc_flags & IBV_WC_WITH_IMM) && ntohl(wc.imm_data) == imm);
            check(c, data && imm_ok && wc.qp_num == x->tgt->qp_num,
                  "%s: %zu bytes %s%s in the XRC SRQ's completion on the target QP%s%s", what, n,
                  data ? "intact" : "wrong", why, imm_ok ? "" : " (immediate wrong)",
                  wc.qp_num == x->tgt->qp_num ? "" : " (qp_num is not the target QP)");
        }
        return sync_peer(c, what);
    }
    struct ibv_sge sge;
    if (op == IBV_WR_RDMA_READ)
        memset(c->buf + LOCAL_OFF, FILL, AREA);
    else
        fill_segs(c, op == IBV_WR_SEND || op == IBV_WR_SEND_WITH_IMM ? SEND_OFF : LOCAL_OFF, &ls, 1, seed);
    to_sges(c, op == IBV_WR_SEND || op == IBV_WR_SEND_WITH_IMM ? SEND_OFF : LOCAL_OFF, &ls, 1, &sge);
    struct ibv_send_wr wr = {.wr_id = 10, .sg_list = &sge, .num_sge = 1, .opcode = op,
                             .send_flags = IBV_SEND_SIGNALED, .imm_data = htonl(imm),
                             .wr.rdma = {.remote_addr = c->peer.addr + RDMA_OFF + 17, .rkey = c->peer.rkey}};
    wr.qp_type.xrc.remote_srqn = srqn;
    struct ibv_send_wr *bad;
    enum ibv_wc_opcode want = op == IBV_WR_RDMA_READ ? IBV_WC_RDMA_READ
                            : op == IBV_WR_RDMA_WRITE_WITH_IMM ? IBV_WC_RDMA_WRITE : IBV_WC_SEND;
    if (!sync_peer(c, what))
        return false;
    int err = ibv_post_send(x->ini, &wr, &bad);
    if (err) {
        check(c, false, "%s: ibv_post_send on the XRC initiator: %s", what, strerror(err));
        return false;
    }
    if (!expect_wc(c, false, what, want, IBV_WC_SUCCESS, &wc))
        return false;
    if (op == IBV_WR_RDMA_READ) {
        bool data = verify_segs(c, LOCAL_OFF, &ls, 1, n, seed, why, sizeof why);
        check(c, data, "%s: %zu bytes read %s%s", what, n, data ? "intact" : "wrong", why);
    }
    return sync_peer(c, what);
}

static bool step_xrc(struct ctx *c)
{
    const char *what = "XRC";
    if (!c->xrc) {  /* both sides see the same device caps: both leave the step */
        if (c->allow_missing)
            printf("%s: %s skipped: the device reports no XRC (-S)\n", c->side, what);
        else
            check(c, false, "%s: the device reports no XRC (IBV_DEVICE_XRC)", what);
        return true;
    }
    struct xrc x = {0};
    struct ibv_xrcd_init_attr xa = {.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS, .fd = -1,
                                    .oflags = O_CREAT};
    x.xrcd = ibv_open_xrcd(c->dev, &xa);
    struct ibv_srq_init_attr_ex sa = {
        .attr = {.max_wr = MAX_WR, .max_sge = 1}, .comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_XRCD |
                                                               IBV_SRQ_INIT_ATTR_CQ | IBV_SRQ_INIT_ATTR_PD,
        .srq_type = IBV_SRQT_XRC, .xrcd = x.xrcd, .cq = c->rcq, .pd = c->pd};
    x.srq = x.xrcd ? ibv_create_srq_ex(c->dev, &sa) : NULL;
    struct ibv_qp_init_attr_ex ta = {.qp_type = IBV_QPT_XRC_RECV, .comp_mask = IBV_QP_INIT_ATTR_XRCD, .xrcd = x.xrcd};
    x.tgt = x.srq ? ibv_create_qp_ex(c->dev, &ta) : NULL;
    struct ibv_qp_init_attr_ex ia = {.qp_type = IBV_QPT_XRC_SEND, .send_cq = c->scq, .recv_cq = c->rcq,
                                     .cap = {.max_send_wr = MAX_WR, .max_send_sge = MAX_SGE},
                                     .comp_mask = IBV_QP_INIT_ATTR_PD, .pd = c->pd};
    x.ini = x.tgt ? ibv_create_qp_ex(c->dev, &ia) : NULL;
    uint32_t srqn = 0;
    if (!x.ini || ibv_get_srq_num(x.srq, &srqn)) {
        check(c, false, "%s: XRC domain, SRQ, target and initiator QPs: %s", what, strerror(errno));
        xrc_free(&x);
        return false;
    }
    uint32_t psn = (uint32_t)lrand48() & 0xffffff;
    char line[256];
    unsigned peer_ini = 0, peer_tgt = 0, peer_srqn = 0, peer_psn = 0;
    if (!ctl_write(c, "XRC %x %x %x %x", x.ini->qp_num, x.tgt->qp_num, srqn, psn) ||
        !ctl_read(c, line, sizeof line, 3.0 * c->timeout_s + 10) ||
        sscanf(line, "XRC %x %x %x %x", &peer_ini, &peer_tgt, &peer_srqn, &peer_psn) != 4) {
        check(c, false, "%s: no XRC QP numbers from the %s", what, c->other);
        xrc_free(&x);
        return false;
    }
    bool up = xrc_connect(c, &x, peer_ini, peer_tgt, peer_psn, psn);
    check(c, up, "%s: initiator 0x%06x -> target 0x%06x (SRQ 0x%x) connected", what, x.ini->qp_num, peer_tgt, peer_srqn);
    bool ok = up && sync_peer(c, what) &&
              xrc_op(c, &x, "XRC SEND 3 MTUs + 3 B", IBV_WR_SEND, 3 * (size_t)c->mtu_bytes + 3, peer_srqn, 900) &&
              xrc_op(c, &x, "XRC SEND with immediate 100 B", IBV_WR_SEND_WITH_IMM, 100, peer_srqn, 901) &&
              xrc_op(c, &x, "XRC RDMA WRITE with immediate 5000 B", IBV_WR_RDMA_WRITE_WITH_IMM, 5000, peer_srqn, 902) &&
              xrc_op(c, &x, "XRC RDMA READ 6000 B", IBV_WR_RDMA_READ, 6000, peer_srqn, 903);
    xrc_free(&x);
    return ok;
}

/* A type 2 memory window on the server's RDMA area (issue 16): bound on the RC QP, the client RDMA
 * WRITEs through its rkey (checked on the server), then invalidates it with a SEND with Invalidate
 * (the server's receive completion must say so); the server binds it again, which needs it free,
 * and the client RDMA READs through the new rkey. */
static bool mw_bind(struct ctx *c, struct ibv_mw *mw, uint32_t *rkey, const char *what)
{
    struct ibv_send_wr wr = {.wr_id = 11, .opcode = IBV_WR_BIND_MW, .send_flags = IBV_SEND_SIGNALED};
    wr.bind_mw.mw = mw;
    wr.bind_mw.rkey = ibv_inc_rkey(mw->rkey);
    wr.bind_mw.bind_info = (struct ibv_mw_bind_info){
        .mr = c->mr, .addr = (uintptr_t)(c->buf + RDMA_OFF + 8192), .length = 8192,
        .mw_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ};
    struct ibv_wc wc;
    if (!post_send(c, what, &wr) || !expect_wc(c, false, what, IBV_WC_BIND_MW, IBV_WC_SUCCESS, &wc))
        return false;
    *rkey = wr.bind_mw.rkey;
    mw->rkey = *rkey;
    return true;
}

static bool step_memory_window(struct ctx *c)
{
    const char *what = "memory window";
    if (!c->mw_type2) {
        if (c->allow_missing)
            printf("%s: %s skipped: the device reports no type 2 memory windows (-S)\n", c->side, what);
        else
            check(c, false, "%s: the device reports no type 2 memory windows", what);
        return true;
    }
    struct ibv_mw *mw = NULL;
    uint32_t rkey = 0;
    char line[256], why[128];
    struct ibv_wc wc;
    bool ok = true;
    if (c->is_server) {
        mw = ibv_alloc_mw(c->pd, IBV_MW_TYPE_2);
        ok = mw && mw_bind(c, mw, &rkey, "bind a type 2 window");
        check(c, ok, "%s: type 2 window bound on the RC QP (rkey 0x%x)", what, rkey);
        if (!ok || !ctl_write(c, "MW %x", rkey)) {
            if (mw) ibv_dealloc_mw(mw);
            return false;
        }
        /* The WRITE through it. */
        memset(c->buf + RDMA_OFF, FILL, AREA);
        if (!sync_peer(c, what) || !sync_peer(c, what)) {
            ibv_dealloc_mw(mw);
            return false;
        }
        struct seg w = {8192 + 100, 3000};
        ok = verify_segs(c, RDMA_OFF, &w, 1, 3000, 950, why, sizeof why);
        check(c, ok, "%s: RDMA WRITE through the window landed %s%s", what, ok ? "intact" : "wrong", why);
        /* The SEND with Invalidate. */
        struct seg r = {0, 64};
        ok = post_recv(c, what, RECV_OFF, &r, 1, 12) && sync_peer(c, what) &&
             expect_wc(c, true, "SEND with Invalidate", IBV_WC_RECV, IBV_WC_SUCCESS, &wc);
        bool inv = ok && (wc.wc_flags & IBV_WC_WITH_INV) && wc.invalidated_rkey == rkey;
        check(c, inv, "%s: SEND with Invalidate received, naming rkey 0x%x (flags 0x%x, rkey 0x%x)", what, rkey,
              ok ? wc.wc_flags : 0, ok ? wc.invalidated_rkey : 0);
        /* Bound again: a type 2 bind needs a free window, so this proves the invalidation. */
        ok = ok && mw_bind(c, mw, &rkey, "bind the invalidated window again");
        check(c, ok, "%s: the invalidated window binds again (rkey 0x%x)", what, rkey);
        if (ok) {
            struct seg rd = {8192 + 200, 2000};
            fill_segs(c, RDMA_OFF, &rd, 1, 951);
            ok = ctl_write(c, "MW %x", rkey) && sync_peer(c, what) && sync_peer(c, what);
        }
        ibv_dealloc_mw(mw);
        return ok;
    }
    unsigned key = 0;
    if (!ctl_read(c, line, sizeof line, 3.0 * c->timeout_s + 10) || sscanf(line, "MW %x", &key) != 1) {
        check(c, false, "%s: no window rkey from the server", what);
        return false;
    }
    struct seg ls = {0, 3000};
    fill_segs(c, LOCAL_OFF, &ls, 1, 950);
    if (!sync_peer(c, what) ||
        !post_rdma(c, "RDMA WRITE through the window", IBV_WR_RDMA_WRITE, &ls, 1, 8192 + 100, key, 0) ||
        !expect_wc(c, false, "RDMA WRITE through the window", IBV_WC_RDMA_WRITE, IBV_WC_SUCCESS, &wc) ||
        !sync_peer(c, what))
        return false;
    struct ibv_sge sge = {.addr = (uintptr_t)(c->buf + SEND_OFF), .length = 16, .lkey = c->mr->lkey};
    struct ibv_send_wr inv = {.wr_id = 13, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND_WITH_INV,
                              .send_flags = IBV_SEND_SIGNALED, .invalidate_rkey = key};
    if (!sync_peer(c, what) || !post_send(c, "SEND with Invalidate", &inv) ||
        !expect_wc(c, false, "SEND with Invalidate", IBV_WC_SEND, IBV_WC_SUCCESS, &wc))
        return false;
    if (!ctl_read(c, line, sizeof line, 3.0 * c->timeout_s + 10) || sscanf(line, "MW %x", &key) != 1) {
        check(c, false, "%s: no new window rkey from the server", what);
        return false;
    }
    struct seg rd = {0, 2000};
    memset(c->buf + LOCAL_OFF, FILL, AREA);
    ok = sync_peer(c, what) && post_rdma(c, "RDMA READ through the window", IBV_WR_RDMA_READ, &rd, 1, 8192 + 200, key, 0) &&
         expect_wc(c, false, "RDMA READ through the window", IBV_WC_RDMA_READ, IBV_WC_SUCCESS, &wc);
    if (ok) {
        bool data = verify_segs(c, LOCAL_OFF, &rd, 1, 2000, 951, why, sizeof why);
        check(c, data, "%s: RDMA READ through the rebound window %s%s", what, data ? "intact" : "wrong", why);
    }
    return ok && sync_peer(c, what);
}

/* A UD QP on the shared CQs, up to RTS as ibv_ud_pingpong brings one; NULL (errno set) on failure. */
static struct ibv_qp *make_ud_qp(struct ctx *c, uint32_t qkey)
{
    struct ibv_qp_init_attr qa = {
        .send_cq = c->scq, .recv_cq = c->rcq, .qp_type = IBV_QPT_UD,
        .cap = {.max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1},
    };
    struct ibv_qp *qp = ibv_create_qp(c->pd, &qa);
    if (!qp)
        return NULL;
    struct ibv_qp_attr init = {.qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = (uint8_t)c->ib_port,
                               .qkey = qkey};
    struct ibv_qp_attr rtr = {.qp_state = IBV_QPS_RTR};
    struct ibv_qp_attr rts = {.qp_state = IBV_QPS_RTS, .sq_psn = 0};
    if (ibv_modify_qp(qp, &init, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY) ||
        ibv_modify_qp(qp, &rtr, IBV_QP_STATE) || ibv_modify_qp(qp, &rts, IBV_QP_STATE | IBV_QP_SQ_PSN)) {
        int err = errno;
        ibv_destroy_qp(qp);
        errno = err;
        return NULL;
    }
    return qp;
}

static int qp_state(struct ibv_qp *qp)
{
    struct ibv_qp_attr a;
    struct ibv_qp_init_attr ia;
    return ibv_query_qp(qp, &a, IBV_QP_STATE, &ia) == 0 ? (int)a.qp_state : -1;
}

/* A UD QP on each side. The client's first datagram names a wrong lkey: it must fail with a local
 * protection error and leave the QP in SQE, where only the send queue has stopped (IBA 10.3.1); the
 * modify from SQE back to RTS (as the MAD layer and IPoIB do it) must work, and the next datagram
 * must reach the server's UD QP behind its 40-byte GRH, from the client's QPN. */
static bool step_ud_send_queue_error(struct ctx *c)
{
    const char *what = "UD send error, SQE and back to RTS";
    enum { QKEY = 0x11111111, GRH = 40, LEN = 600, SEED = 700 };
    struct ibv_qp *ud = make_ud_qp(c, QKEY);
    if (!ud)
        check(c, false, "%s: a UD QP up to RTS: %s", what, strerror(errno));
    /* Both sides send their QPN (0: none), so a failure on either side stops both here. */
    char line[256];
    unsigned peer_qpn = 0;
    bool ok = ctl_write(c, "UDQPN %x", ud ? ud->qp_num : 0) && ctl_read(c, line, sizeof line, 3.0 * c->timeout_s + 10) &&
              sscanf(line, "UDQPN %x", &peer_qpn) == 1 && peer_qpn != 0 && ud;
    struct ibv_wc wc;
    struct ibv_ah *ah = NULL;
    if (ok && c->is_server) {
        memset(c->buf + RECV_OFF, FILL, GRH + LEN + GUARD);
        struct ibv_sge sge = {.addr = (uintptr_t)(c->buf + RECV_OFF), .length = GRH + LEN, .lkey = c->mr->lkey};
        struct ibv_recv_wr wr = {.wr_id = 30, .sg_list = &sge, .num_sge = 1}, *bad;
        int err = ibv_post_recv(ud, &wr, &bad);
        if (err)
            check(c, false, "%s: ibv_post_recv: %s", what, strerror(err));
        ok = err == 0 && sync_peer(c, what) && expect_wc(c, true, what, IBV_WC_RECV, IBV_WC_SUCCESS, &wc);
        if (ok) {
            char why[160];
            struct seg s = {0, LEN};
            bool data = verify_segs(c, RECV_OFF + GRH, &s, 1, LEN, SEED, why, sizeof why);
            /* The GRH names the sender: an IPv6 header (source at 8), or an IPv4 one in its last 20 bytes
             * (source at 12 of it) for a GID that maps an IPv4 address. */
            const uint8_t *g = c->buf + RECV_OFF;
            bool from_peer = (g[0] >> 4) == 6 ? memcmp(g + 8, c->peer.gid.raw, 16) == 0
                                              : g[20] == 0x45 && memcmp(g + 32, c->peer.gid.raw + 12, 4) == 0;
            check(c, data && wc.byte_len == GRH + LEN && wc.src_qp == peer_qpn && (wc.wc_flags & IBV_WC_GRH) && from_peer,
                  "%s: datagram of %u bytes (want %d) from QPN 0x%06x (want 0x%06x), GRH %s%s, data %s%s", what,
                  wc.byte_len, GRH + LEN, wc.src_qp, peer_qpn, (wc.wc_flags & IBV_WC_GRH) ? "present" : "missing",
                  from_peer ? " naming the client" : " not naming the client", data ? "intact" : "wrong", why);
        }
        ok = sync_peer(c, what) && ok;
    } else if (ok) {
        struct ibv_ah_attr aa = {.is_global = 1, .port_num = (uint8_t)c->ib_port,
                                 .grh = {.dgid = c->peer.gid, .sgid_index = (uint8_t)c->gid_index, .hop_limit = 64}};
        ah = ibv_create_ah(c->pd, &aa);
        if (!ah)
            check(c, false, "%s: ibv_create_ah: %s", what, strerror(errno));
        ok = sync_peer(c, what) && ah;
        struct seg s = {0, LEN};
        fill_segs(c, SEND_OFF, &s, 1, SEED);
        struct ibv_sge sge = {.addr = (uintptr_t)(c->buf + SEND_OFF), .length = LEN, .lkey = c->mr->lkey ^ 0x80};
        struct ibv_send_wr wr = {.wr_id = 31, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
                                 .send_flags = IBV_SEND_SIGNALED,
                                 .wr.ud = {.ah = ah, .remote_qpn = peer_qpn, .remote_qkey = QKEY}}, *bad;
        int err = 0;
        if (ok && !c->skip_sqe) {
            err = ibv_post_send(ud, &wr, &bad);
            if (err)
                check(c, false, "%s: ibv_post_send: %s", what, strerror(err));
            ok = err == 0 && expect_wc(c, false, what, IBV_WC_SEND, IBV_WC_LOC_PROT_ERR, &wc);
        }
        if (ok && !c->skip_sqe) {
            int state = qp_state(ud);
            check(c, state == IBV_QPS_SQE, "%s: a wrong lkey gave IBV_WC_LOC_PROT_ERR; the QP is in state %d (want SQE, %d)",
                  what, state, IBV_QPS_SQE);
            struct ibv_qp_attr back = {.qp_state = IBV_QPS_RTS, .cur_qp_state = IBV_QPS_SQE};
            err = ibv_modify_qp(ud, &back, IBV_QP_STATE | IBV_QP_CUR_STATE);
            state = qp_state(ud);
            ok = err == 0 && state == IBV_QPS_RTS;
            check(c, ok, "%s: modify SQE -> RTS %s (state now %d)", what, err ? strerror(err) : "done", state);
        }
        if (ok) {
            sge.lkey = c->mr->lkey;
            err = ibv_post_send(ud, &wr, &bad);
            if (err)
                check(c, false, "%s: ibv_post_send: %s", what, strerror(err));
            ok = err == 0 && expect_wc(c, false, what, IBV_WC_SEND, IBV_WC_SUCCESS, &wc);
        }
        ok = sync_peer(c, what) && ok;
    }
    if (ah)
        ibv_destroy_ah(ah);
    if (ud)
        ibv_destroy_qp(ud);
    return ok;
}

/* ---- set-up ------------------------------------------------------------------------------------ */

static int connect_tcp(struct ctx *c)
{
    char port[16];
    snprintf(port, sizeof port, "%d", c->tcp_port);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = c->server ? 0 : AI_PASSIVE};
    struct addrinfo *res;
    int err = getaddrinfo(c->server, port, &hints, &res);
    if (err) {
        fprintf(stderr, "getaddrinfo %s: %s\n", c->server ? c->server : "(any)", gai_strerror(err));
        return -1;
    }
    int fd = -1;
    double deadline = now() + 3.0 * c->timeout_s + 30;  /* the server may still be starting */
    if (c->server) {
        while (fd < 0 && now() < deadline) {
            for (struct addrinfo *a = res; a && fd < 0; a = a->ai_next) {
                fd = socket(a->ai_family, a->ai_socktype, 0);
                if (fd >= 0 && connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
                    close(fd);
                    fd = -1;
                }
            }
            if (fd < 0)
                usleep(500 * 1000);
        }
    } else {
        int lfd = socket(res->ai_family, res->ai_socktype, 0), one = 1;
        setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (lfd >= 0 && bind(lfd, res->ai_addr, res->ai_addrlen) == 0 && listen(lfd, 1) == 0) {
            printf("waiting for a client on TCP port %d\n", c->tcp_port);
            fflush(stdout);
            struct pollfd p = {.fd = lfd, .events = POLLIN};
            if (poll(&p, 1, (int)((deadline - now()) * 1000)) > 0)
                fd = accept(lfd, NULL, NULL);
        } else {
            perror("listen");
        }
        if (lfd >= 0)
            close(lfd);
    }
    freeaddrinfo(res);
    if (fd < 0)
        fprintf(stderr, "no TCP connection %s port %d\n", c->server ? "to the server on" : "on", c->tcp_port);
    return fd;
}

/* The RoCE v2 GID with an IPv4 address, else the first RoCE v2 GID, else index 0. */
static int pick_gid(struct ctx *c, int table_len)
{
    int any_v2 = -1;
    for (int i = 0; i < table_len; i++) {
        struct ibv_gid_entry e;
        if (ibv_query_gid_ex(c->dev, c->ib_port, i, &e, 0) || e.gid_type != IBV_GID_TYPE_ROCE_V2)
            continue;
        static const uint8_t v4mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
        if (memcmp(e.gid.raw, v4mapped, 12) == 0)
            return i;
        if (any_v2 < 0)
            any_v2 = i;
    }
    return any_v2 >= 0 ? any_v2 : 0;
}

static bool setup_verbs(struct ctx *c)
{
    int n;
    struct ibv_device **list = ibv_get_device_list(&n), *d = NULL;
    for (int i = 0; list && i < n && !d; i++)
        if (!c->devname || strcmp(ibv_get_device_name(list[i]), c->devname) == 0)
            d = list[i];
    if (!d) {
        fprintf(stderr, "no RDMA device %s\n", c->devname ? c->devname : "at all");
        return false;
    }
    c->devname = ibv_get_device_name(d);
    c->dev = ibv_open_device(d);
    ibv_free_device_list(list);
    if (!c->dev) {
        perror("ibv_open_device");
        return false;
    }
    struct ibv_device_attr da;
    struct ibv_port_attr pa;
    if (ibv_query_device(c->dev, &da) || ibv_query_port(c->dev, c->ib_port, &pa)) {
        perror("ibv_query_device/port");
        return false;
    }
    c->atomics = da.atomic_cap != IBV_ATOMIC_NONE;
    c->xrc = (da.device_cap_flags & IBV_DEVICE_XRC) != 0;
    c->mw_type2 = (da.device_cap_flags & (IBV_DEVICE_MEM_WINDOW_TYPE_2A | IBV_DEVICE_MEM_WINDOW_TYPE_2B)) != 0;
    c->rd_atomic = da.max_qp_rd_atom < 16 ? da.max_qp_rd_atom : 16;
    if (c->gid_index < 0 && pa.link_layer == IBV_LINK_LAYER_ETHERNET)
        c->gid_index = pick_gid(c, pa.gid_tbl_len);
    c->buf = aligned_alloc(4096, BUF_SIZE);
    c->pd = ibv_alloc_pd(c->dev);
    c->chan = ibv_create_comp_channel(c->dev);
    if (!c->buf || !c->pd || !c->chan) {
        perror("buffer, PD or completion channel");
        return false;
    }
    fcntl(c->chan->fd, F_SETFL, fcntl(c->chan->fd, F_GETFL) | O_NONBLOCK);
    memset(c->buf, FILL, BUF_SIZE);
    c->mr = ibv_reg_mr(c->pd, c->buf, BUF_SIZE, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                                                    IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC |
                                                    (c->mw_type2 ? IBV_ACCESS_MW_BIND : 0));
    c->scq = ibv_create_cq(c->dev, MAX_WR, NULL, c->chan, 0);
    c->rcq = ibv_create_cq(c->dev, MAX_WR, NULL, c->chan, 0);
    if (!c->mr || !c->scq || !c->rcq) {
        perror("ibv_reg_mr or ibv_create_cq");
        return false;
    }
    struct ibv_qp_init_attr qa = {
        .send_cq = c->scq, .recv_cq = c->rcq, .qp_type = IBV_QPT_RC, .sq_sig_all = 0,
        .cap = {.max_send_wr = MAX_WR, .max_recv_wr = MAX_WR, .max_send_sge = MAX_SGE, .max_recv_sge = MAX_SGE,
                .max_inline_data = WANT_INLINE},
    };
    c->qp = ibv_create_qp(c->pd, &qa);
    if (!c->qp) {
        perror("ibv_create_qp");
        return false;
    }
    c->max_inline = qa.cap.max_inline_data;
    struct ibv_qp_attr init = {.qp_state = IBV_QPS_INIT, .port_num = c->ib_port, .pkey_index = 0,
                               .qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                                                  IBV_ACCESS_REMOTE_ATOMIC};
    if (ibv_modify_qp(c->qp, &init, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)) {
        perror("modify QP to INIT");
        return false;
    }
    c->me = (struct endpoint){.lid = pa.lid, .qpn = c->qp->qp_num, .psn = (uint32_t)lrand48() & 0xffffff,
                              .rkey = c->mr->rkey, .addr = (uintptr_t)c->buf, .mtu = pa.active_mtu};
    if (c->gid_index >= 0 && ibv_query_gid(c->dev, c->ib_port, c->gid_index, &c->me.gid)) {
        perror("ibv_query_gid");
        return false;
    }
    char gid[INET6_ADDRSTRLEN];
    inet_ntop(AF_INET6, c->me.gid.raw, gid, sizeof gid);
    printf("%s: %s port %d (%s, active MTU %d), GID index %d %s, QPN 0x%06x, max_inline_data %u, "
           "atomics %s, max_qp_rd_atom %d, %s mode\n",
           c->side, c->devname, c->ib_port, pa.link_layer == IBV_LINK_LAYER_ETHERNET ? "Ethernet" : "InfiniBand",
           128 << pa.active_mtu, c->gid_index, gid, c->me.qpn, c->max_inline, c->atomics ? "yes" : "no",
           da.max_qp_rd_atom, c->events ? "event" : "polling");
    return true;
}

static bool exchange_and_connect(struct ctx *c)
{
    char gid[33], line[256];
    for (int i = 0; i < 16; i++)
        sprintf(gid + 2 * i, "%02x", c->me.gid.raw[i]);
    if (!ctl_write(c, "HCAV1 %x %x %x %x %" PRIx64 " %s %d", c->me.lid, c->me.qpn, c->me.psn, c->me.rkey, c->me.addr,
                   gid, c->me.mtu) ||
        !ctl_read(c, line, sizeof line, 3.0 * c->timeout_s)) {
        fprintf(stderr, "no connection data from the %s\n", c->other);
        return false;
    }
    unsigned lid, qpn, psn, rkey;
    int mtu;
    if (sscanf(line, "HCAV1 %x %x %x %x %" SCNx64 " %32s %d", &lid, &qpn, &psn, &rkey, &c->peer.addr, gid, &mtu) != 7) {
        fprintf(stderr, "bad connection data from the %s: '%s'\n", c->other, line);
        return false;
    }
    c->peer.lid = (uint16_t)lid;
    c->peer.qpn = qpn;
    c->peer.psn = psn;
    c->peer.rkey = rkey;
    c->peer.mtu = mtu;
    for (int i = 0; i < 16; i++)
        sscanf(gid + 2 * i, "%2hhx", &c->peer.gid.raw[i]);
    enum ibv_mtu path_mtu = (enum ibv_mtu)(mtu < c->me.mtu ? mtu : c->me.mtu);
    c->mtu_bytes = 128 << path_mtu;
    struct ibv_qp_attr rtr = {
        .qp_state = IBV_QPS_RTR, .path_mtu = path_mtu, .dest_qp_num = c->peer.qpn, .rq_psn = c->peer.psn,
        .max_dest_rd_atomic = (uint8_t)c->rd_atomic, .min_rnr_timer = 12,
        .ah_attr = {.dlid = c->peer.lid, .sl = 0, .port_num = (uint8_t)c->ib_port, .is_global = c->gid_index >= 0,
                    .grh = {.dgid = c->peer.gid, .sgid_index = (uint8_t)c->gid_index, .hop_limit = 64}},
    };
    if (ibv_modify_qp(c->qp, &rtr, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                                       IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER)) {
        perror("modify QP to RTR");
        return false;
    }
    /* timeout 17: 0.54 s per try, generous for guests under TCG. */
    struct ibv_qp_attr rts = {.qp_state = IBV_QPS_RTS, .sq_psn = c->me.psn, .timeout = 17, .retry_cnt = 7,
                              .rnr_retry = 7, .max_rd_atomic = (uint8_t)c->rd_atomic};
    if (ibv_modify_qp(c->qp, &rts, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                                       IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC)) {
        perror("modify QP to RTS");
        return false;
    }
    printf("%s: connected to QPN 0x%06x, path MTU %d\n", c->side, c->peer.qpn, c->mtu_bytes);
    return sync_peer(c, "connected");
}

static void usage(FILE *f)
{
    fprintf(f,
            "Usage: hca_verbs_check [options] [SERVER_HOST]\n"
            "Scripted verbs checks (RC, UC, XRC and UD steps) between two hosts, or two processes of one host.\n"
            "Start it without SERVER_HOST on one host (server), then with the server's address on the other\n"
            "(client; it retries the connection for a while).\n"
            "Checks: SEND/RECV of many sizes both ways, SEND with immediate, inline SEND, multi-SGE SEND,\n"
            "RDMA WRITE (and with immediate), multi-SGE RDMA READ, CMP_AND_SWP and FETCH_AND_ADD,\n"
            "unsignalled SENDs, RDMA WRITE (and with immediate) and SENDs (plain, with immediate, inline,\n"
            "multi-SGE) over a UC QP whose access flags were set at INIT only, ibv_rereg_mr (access flags,\n"
            "then the pages) checked by RDMA READs, XRC (SEND, with immediate, RDMA WRITE with immediate\n"
            "and READ from an initiator QP into the other side's XRC SRQ), a type 2 memory window (RDMA\n"
            "WRITE through it, SEND with Invalidate, bound again, RDMA READ through it),\n"
            "a UD datagram after a send error (the QP must go to SQE and back to\n"
            "RTS), and last an RDMA WRITE with a bad rkey (must fail: REM_ACCESS_ERR).\n"
            "Each check prints 'CHECK ok: ...' or 'CHECK FAILED: ...'. Exit status 0 only if no check\n"
            "failed on either side; 1 otherwise; 2 on a usage error.\n\n"
            "Options:\n"
            "  -d DEV     RDMA device (default: the first one)\n"
            "  -i PORT    device port (default 1)\n"
            "  -g INDEX   GID index (default: the RoCE v2 GID with an IPv4 address, on Ethernet ports)\n"
            "  -p PORT    TCP port of the connection set-up (default 18517)\n"
            "  -e         sleep on completion events instead of busy polling the CQs\n"
            "  -U         skip the UD step's send error and SQE part (for Soft-RoCE: it fails that send\n"
            "             with a local QP operation error and has no SQE state)\n"
            "  -S         leave out the XRC and memory window steps where the device reports no XRC or\n"
            "             no type 2 windows (Soft-RoCE); without -S a missing capability fails a check\n"
            "  -L         a lossy link: only the reliable steps (RC, XRC); UC and UD drop a message that\n"
            "             loses a packet, by design, so their steps are left out\n"
            "  -t SEC     timeout of each wait for a completion (default 20)\n"
            "  -h, --help this text\n");
}

int main(int argc, char **argv)
{
    struct ctx c = {.ib_port = 1, .gid_index = -1, .tcp_port = 18517, .timeout_s = 20, .sock = -1};
    static const struct option longopts[] = {{"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
    int opt;
    while ((opt = getopt_long(argc, argv, "d:i:g:p:eUSLt:h", longopts, NULL)) != -1) {
        switch (opt) {
        case 'd': c.devname = optarg; break;
        case 'i': c.ib_port = atoi(optarg); break;
        case 'g': c.gid_index = atoi(optarg); break;
        case 'p': c.tcp_port = atoi(optarg); break;
        case 'e': c.events = true; break;
        case 'U': c.skip_sqe = true; break;
        case 'S': c.allow_missing = true; break;
        case 'L': c.reliable_only = true; break;
        case 't': c.timeout_s = atoi(optarg); break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind + 1 < argc || c.ib_port < 1 || c.timeout_s < 1 || c.tcp_port < 1) {
        usage(stderr);
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    c.server = optind < argc ? argv[optind] : NULL;
    c.is_server = c.server == NULL;
    c.side = c.is_server ? "server" : "client";
    c.other = c.is_server ? "client" : "server";
    srand48(getpid() ^ (long)time(NULL));

    if (!setup_verbs(&c) || (c.sock = connect_tcp(&c)) < 0 || !exchange_and_connect(&c))
        return 1;

    static const struct {
        const char *name;
        bool (*run)(struct ctx *);
        bool unreliable; /* UC or UD: a lost packet loses the message */
    } steps[] = {
        {"SEND/RECV sizes", step_send_sizes, false}, {"SEND flavours", step_send_flavours, false},
        {"RDMA WRITE", step_rdma_write, false},       {"RDMA READ", step_rdma_read, false},
        {"atomics", step_atomics, false},             {"unsignalled SENDs", step_unsignalled, false},
        {"UC RDMA WRITE and SENDs", step_uc_write, true}, {"MR re-registration", step_rereg_mr, false},
        {"XRC", step_xrc, false},                     {"memory window and SEND with Invalidate", step_memory_window, false},
        {"UD send error", step_ud_send_queue_error, true}, {"ODP", step_odp, false},
        {"bad rkey", step_bad_rkey, false},
    };
    bool completed = true;
    for (size_t i = 0; i < sizeof steps / sizeof steps[0] && completed; i++) {
        if (c.reliable_only && steps[i].unreliable) {
            printf("%s: step %s left out (-L: a lossy link)\n", c.side, steps[i].name);
            continue;
        }
        printf("%s: step %s\n", c.side, steps[i].name);
        completed = steps[i].run(&c);
        if (!completed)
            printf("%s: stopped at step '%s'\n", c.side, steps[i].name);
    }

    /* Swap the counts (the QP may be in error now: TCP carries them). */
    int peer_checks = -1, peer_failed = -1;
    char line[256];
    bool got = c.peer_result[0] != '\0';
    if (got)
        snprintf(line, sizeof line, "%s", c.peer_result);
    if (ctl_write(&c, "RESULT %d %d %d", c.checks, c.failed, completed))
        while (!got && ctl_read(&c, line, sizeof line, 3.0 * c.timeout_s + 10))
            got = strncmp(line, "RESULT ", 7) == 0;  /* skip where a stopped peer said it was */
    if (got) {
        int peer_completed = 0;
        if (sscanf(line, "RESULT %d %d %d", &peer_checks, &peer_failed, &peer_completed) != 3 || !peer_completed)
            peer_failed = peer_failed > 0 ? peer_failed : 1;
    }
    bool pass = completed && c.failed == 0 && peer_failed == 0;
    printf("%s: %d checks, %d failed; %s: %d checks, %d failed%s -> %s\n", c.side, c.checks, c.failed, c.other,
           peer_checks, peer_failed, peer_checks < 0 ? " (no report)" : "", pass ? "PASS" : "FAIL");
    close(c.sock);
    ibv_destroy_qp(c.qp);
    ibv_destroy_cq(c.scq);
    ibv_destroy_cq(c.rcq);
    ibv_dereg_mr(c.mr);
    ibv_destroy_comp_channel(c.chan);
    ibv_dealloc_pd(c.pd);
    ibv_close_device(c.dev);
    free(c.buf);
    return pass ? 0 : 1;
}
