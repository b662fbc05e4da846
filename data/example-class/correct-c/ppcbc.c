/* ppcbc <tcp|udp|udpr> HOST PORT < file : send stdin to a PPCB server, exit 0 after RCVD. */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <signal.h>
#include <stdarg.h>
#include <unistd.h>

#include "ppcb.h"

static uint8_t sid[8];

static void fail(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "ERROR: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    exit(1);
}

static uint8_t *read_all(size_t *n) {
    size_t cap = 1 << 16;
    uint8_t *buf = malloc(cap);
    *n = 0;
    for (;;) {
        if (*n == cap) buf = realloc(buf, cap *= 2);
        ssize_t r = read(0, buf + *n, cap - *n);
        if (r < 0) fail("cannot read stdin: %s", strerror(errno));
        if (r == 0) return buf;
        *n += r;
    }
}

static int connect_to(const char *host, const char *port, int type) {
    struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = type}, *res;
    if (getaddrinfo(host, port, &hints, &res) != 0) fail("cannot resolve %s", host);
    int fd = socket(AF_INET, type, 0);
    if (fd < 0 || connect(fd, res->ai_addr, res->ai_addrlen) < 0) fail("cannot connect: %s", strerror(errno));
    freeaddrinfo(res);
    return fd;
}

/* ---------------------------------------------------------------- tcp */
static void recv_exact(int fd, uint8_t *buf, size_t n) {
    size_t got = 0;
    while (got < n) {
        if (!wait_readable(fd, now() + max_wait)) fail("timeout waiting for the server");
        ssize_t r = recv(fd, buf + got, n - got, 0);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) fail("connection closed by the server");
        got += r;
    }
}

static void read_packet(int fd, uint8_t *buf) {
    recv_exact(fd, buf, 1);
    size_t h = header_size(buf[0]);
    if (!h) fail("server sent a packet of unknown type %d", buf[0]);
    recv_exact(fd, buf + 1, h - 1);
}

static void tcp_client(const char *host, const char *port, const uint8_t *data, size_t n) {
    uint8_t buf[MAX_PACKET];
    int fd = connect_to(host, port, SOCK_STREAM);
    struct timeval tv = {.tv_sec = (long)max_wait, .tv_usec = (long)((max_wait - (long)max_wait) * 1e6)};
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    size_t len = build_conn(buf, sid, 1, n);
    if (send(fd, buf, len, 0) != (ssize_t)len) fail("cannot send CONN");
    read_packet(fd, buf);
    if (buf[0] == CONRJT) fail("server refused the connection (CONRJT)");
    if (buf[0] != CONACC) fail("expected CONACC, got type %d", buf[0]);
    uint64_t no = 0;
    for (size_t off = 0; off < n; off += CHUNK, no++) {
        uint32_t k = n - off < CHUNK ? n - off : CHUNK;
        len = build_data(buf, sid, no, data + off, k);
        if (send(fd, buf, len, 0) != (ssize_t)len) break;     /* the server hung up: read why */
    }
    read_packet(fd, buf);
    if (buf[0] == RJT) fail("server rejected packet %llu (RJT)", (unsigned long long)get64(buf + 9));
    if (buf[0] != RCVD) fail("expected RCVD, got type %d", buf[0]);
}

/* ---------------------------------------------------------------- udp, udpr */
/* Next packet of our session accepted by `want` before the deadline; 0 on timeout. CONRJT/RJT end it. */
static int wait_packet(int fd, double deadline, int (*want)(const uint8_t *, uint64_t), uint64_t arg, uint8_t *buf) {
    while (wait_readable(fd, deadline)) {
        ssize_t r = recv(fd, buf, MAX_PACKET, 0);
        if (r < 0) {
            if (errno == EINTR) continue;
            fail("receive failed: %s", strerror(errno));
        }
        if (!valid_datagram(buf, r) || memcmp(buf + 1, sid, 8) != 0) continue;   /* junk or not ours */
        if (buf[0] == CONRJT) fail("server refused the connection (CONRJT)");
        if (buf[0] == RJT) fail("server rejected packet %llu (RJT)", (unsigned long long)get64(buf + 9));
        if (want(buf, arg)) return 1;
    }
    return 0;
}

static int is_conacc(const uint8_t *p, uint64_t a) { (void)a; return p[0] == CONACC; }
static int is_rcvd(const uint8_t *p, uint64_t a) { (void)a; return p[0] == RCVD; }
static int is_acc(const uint8_t *p, uint64_t a) { return (p[0] == ACC && get64(p + 9) == a) || p[0] == RCVD; }

/* Send and wait; with `reliable`, resend on timeout up to MAX_RETRANSMITS times. */
static void exchange(int fd, const uint8_t *pkt, size_t len, int reliable,
                     int (*want)(const uint8_t *, uint64_t), uint64_t arg, uint8_t *buf, const char *what) {
    for (int attempt = 0; attempt <= (reliable ? max_retransmits : 0); attempt++) {
        send(fd, pkt, len, 0);
        if (wait_packet(fd, now() + max_wait, want, arg, buf)) return;
    }
    fail("timeout waiting for %s", what);
}

static void udp_client(const char *host, const char *port, const uint8_t *data, size_t n, int reliable) {
    static uint8_t buf[MAX_PACKET], pkt[MAX_PACKET];
    int fd = connect_to(host, port, SOCK_DGRAM);
    size_t len = build_conn(pkt, sid, reliable ? 3 : 2, n);
    exchange(fd, pkt, len, reliable, is_conacc, 0, buf, "CONACC");
    int done = 0;
    uint64_t no = 0;
    for (size_t off = 0; off < n; off += CHUNK, no++) {
        uint32_t k = n - off < CHUNK ? n - off : CHUNK;
        len = build_data(pkt, sid, no, data + off, k);
        if (!reliable) { send(fd, pkt, len, 0); continue; }
        char what[40];
        snprintf(what, sizeof what, "ACC %llu", (unsigned long long)no);
        exchange(fd, pkt, len, 1, is_acc, no, buf, what);
        done = buf[0] == RCVD;
    }
    if (!done && !wait_packet(fd, now() + max_wait, is_rcvd, 0, buf)) fail("timeout waiting for RCVD");
}

int main(int argc, char **argv) {
    if (argc != 4 || (strcmp(argv[1], "tcp") && strcmp(argv[1], "udp") && strcmp(argv[1], "udpr"))) {
        fprintf(stderr, "usage: ppcbc <tcp|udp|udpr> HOST PORT < file\n");
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    read_constants();
    int rnd = open("/dev/urandom", O_RDONLY);
    if (rnd < 0 || read(rnd, sid, 8) != 8) fail("no random session id");
    close(rnd);
    size_t n;
    uint8_t *data = read_all(&n);
    if (!strcmp(argv[1], "tcp")) tcp_client(argv[2], argv[3], data, n);
    else udp_client(argv[2], argv[3], data, n, !strcmp(argv[1], "udpr"));
    free(data);
    return 0;
}
