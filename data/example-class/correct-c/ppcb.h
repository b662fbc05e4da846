/* PPCB (notebooks/ppcb-protocol.md): packet layout, constants, small helpers shared by ppcbc and ppcbs. */
#ifndef PPCB_H
#define PPCB_H

#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

enum { CONN = 1, CONACC, CONRJT, DATA, ACC, RJT, RCVD };
enum { CHUNK = 1000, MAX_DATA = 64000, MAX_PACKET = 65535 };

static double max_wait = 5.0;      /* seconds: PPCB_MAX_WAIT */
static int max_retransmits = 5;    /* PPCB_MAX_RETRANSMITS */

static inline void read_constants(void) {
    const char *w = getenv("PPCB_MAX_WAIT"), *r = getenv("PPCB_MAX_RETRANSMITS");
    if (w) max_wait = atof(w);
    if (r) max_retransmits = atoi(r);
}

/* Header bytes of each type (DATA without its body); 0: unknown type. */
static inline size_t header_size(int type) {
    static const size_t sizes[] = {0, 18, 9, 9, 21, 17, 17, 9};
    return type >= 1 && type <= 7 ? sizes[type] : 0;
}

static inline void put64(uint8_t *p, uint64_t v) { for (int i = 7; i >= 0; i--) { p[i] = v & 0xff; v >>= 8; } }
static inline void put32(uint8_t *p, uint32_t v) { for (int i = 3; i >= 0; i--) { p[i] = v & 0xff; v >>= 8; } }
static inline uint64_t get64(const uint8_t *p) { uint64_t v = 0; for (int i = 0; i < 8; i++) v = v << 8 | p[i]; return v; }
static inline uint32_t get32(const uint8_t *p) { uint32_t v = 0; for (int i = 0; i < 4; i++) v = v << 8 | p[i]; return v; }

/* Build a packet without data into buf; returns its length. */
static inline size_t build(uint8_t *buf, int type, const uint8_t *sid, uint64_t number) {
    buf[0] = type;
    memcpy(buf + 1, sid, 8);
    if (type == ACC || type == RJT) { put64(buf + 9, number); return 17; }
    return 9;
}

static inline size_t build_conn(uint8_t *buf, const uint8_t *sid, int proto, uint64_t total) {
    buf[0] = CONN;
    memcpy(buf + 1, sid, 8);
    buf[9] = proto;
    put64(buf + 10, total);
    return 18;
}

static inline size_t build_data(uint8_t *buf, const uint8_t *sid, uint64_t number, const uint8_t *body, uint32_t n) {
    buf[0] = DATA;
    memcpy(buf + 1, sid, 8);
    put64(buf + 9, number);
    put32(buf + 17, n);
    memcpy(buf + 21, body, n);
    return 21 + n;
}

static inline double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

/* Wait until fd is readable or the deadline passes: 1 readable, 0 timeout. deadline < 0: forever. */
static inline int wait_readable(int fd, double deadline) {
    struct pollfd p = {.fd = fd, .events = POLLIN};
    for (;;) {
        int ms = -1;
        if (deadline >= 0) {
            double left = deadline - now();
            if (left <= 0) return 0;
            ms = (int)(left * 1000) + 1;
        }
        int r = poll(&p, 1, ms);
        if (r > 0) return 1;
        if (r == 0 && deadline >= 0 && now() >= deadline) return 0;
        if (r < 0 && errno != EINTR) return 0;
    }
}

/* Whole valid datagram? (type known, header complete, exact length for DATA and others.) */
static inline int valid_datagram(const uint8_t *p, size_t n) {
    size_t h = n ? header_size(p[0]) : 0;
    if (!h || n < h) return 0;
    if (p[0] == DATA) { uint32_t len = get32(p + 17); return len >= 1 && len <= MAX_DATA && n == h + len; }
    return n == h;
}

#endif
