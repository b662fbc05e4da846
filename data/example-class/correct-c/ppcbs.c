/* ppcbs <tcp|udp> PORT > received : a PPCB server; serves clients one after another, forever. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <unistd.h>

#include "ppcb.h"

static void warn(const char *what) { fprintf(stderr, "ERROR: %s\n", what); }

static int bound_socket(int type, int port) {
    int fd = socket(AF_INET, type, 0), one = 1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = INADDR_ANY};
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) < 0) { perror("ERROR: bind"); exit(1); }
    return fd;
}

/* ---------------------------------------------------------------- tcp */
/* Read exactly n bytes within MAX_WAIT each: 1 ok, 0 closed or timed out. */
static int recv_exact(int fd, uint8_t *buf, size_t n) {
    size_t got = 0;
    while (got < n) {
        if (!wait_readable(fd, now() + max_wait)) { warn("timeout: the client went silent"); return 0; }
        ssize_t r = recv(fd, buf + got, n - got, 0);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) { warn("connection closed by the client"); return 0; }
        got += r;
    }
    return 1;
}

static void reject(int fd, const uint8_t *sid, uint64_t number, const char *why) {
    uint8_t p[17];
    send(fd, p, build(p, RJT, sid, number), 0);
    warn(why);
}

static void tcp_session(int fd) {
    static uint8_t buf[MAX_PACKET];
    if (!recv_exact(fd, buf, 1)) return;
    if (buf[0] != CONN) { warn("the connection did not start with CONN"); return; }
    if (!recv_exact(fd, buf + 1, 17)) return;
    uint8_t sid[8], reply[17];
    memcpy(sid, buf + 1, 8);
    uint64_t total = get64(buf + 10), got = 0, expected = 0;
    if (buf[9] != 1) { send(fd, reply, build(reply, CONRJT, sid, 0), 0); warn("CONN not for tcp"); return; }
    send(fd, reply, build(reply, CONACC, sid, 0), 0);
    while (got < total) {
        if (!recv_exact(fd, buf, 1)) break;
        if (buf[0] != DATA) { reject(fd, sid, expected, "a packet other than DATA"); break; }
        if (!recv_exact(fd, buf + 1, 20)) break;
        uint64_t no = get64(buf + 9);
        uint32_t len = get32(buf + 17);
        if (memcmp(buf + 1, sid, 8) || no != expected || len < 1 || len > MAX_DATA || len > total - got) {
            reject(fd, sid, no, "bad DATA (session, number or length)");
            break;
        }
        if (!recv_exact(fd, buf + 21, len)) break;
        fwrite(buf + 21, 1, len, stdout);
        got += len;
        expected++;
    }
    fflush(stdout);
    if (got == total) send(fd, reply, build(reply, RCVD, sid, 0), 0);
}

static void tcp_server(int port) {
    int listener = bound_socket(SOCK_STREAM, port);
    listen(listener, 8);
    for (;;) {
        int fd = accept(listener, NULL, NULL);
        if (fd < 0) continue;
        tcp_session(fd);
        close(fd);
    }
}

/* ---------------------------------------------------------------- udp (serves udp and udpr) */
static void udp_server(int port) {
    static uint8_t buf[MAX_PACKET];
    int fd = bound_socket(SOCK_DGRAM, port), busy = 0, reliable = 0, resends = 0;
    struct sockaddr_in client, from;
    uint8_t sid[8], last[17], reply[17];
    size_t last_len = 0;
    uint64_t total = 0, got = 0, expected = 0;
    double last_sent = 0;
    for (;;) {
        if (!wait_readable(fd, busy ? last_sent + max_wait : -1)) {          /* MAX_WAIT of silence */
            if (reliable && resends < max_retransmits) {
                sendto(fd, last, last_len, 0, (struct sockaddr *)&client, sizeof client);
                resends++;
                last_sent = now();
            } else {
                warn("timeout: the client went silent, session dropped");
                fflush(stdout);
                busy = 0;
            }
            continue;
        }
        socklen_t fl = sizeof from;
        ssize_t n = recvfrom(fd, buf, sizeof buf, 0, (struct sockaddr *)&from, &fl);
        if (n < 0) continue;
        int same_client = busy && from.sin_addr.s_addr == client.sin_addr.s_addr && from.sin_port == client.sin_port;
        if (!valid_datagram(buf, n)) {
            if (same_client && n >= 9 && buf[0] == DATA && !memcmp(buf + 1, sid, 8)) {   /* our client, bad DATA */
                sendto(fd, reply, build(reply, RJT, sid, expected), 0, (struct sockaddr *)&from, fl);
                warn("invalid DATA");
                fflush(stdout);
                busy = 0;
            }
            continue;
        }
        if (!busy) {
            if (buf[0] != CONN || (buf[9] != 2 && buf[9] != 3)) continue;
            busy = 1, reliable = buf[9] == 3, resends = 0, got = 0, expected = 0;
            client = from;
            memcpy(sid, buf + 1, 8);
            total = get64(buf + 10);
            last_len = build(last, CONACC, sid, 0);
            sendto(fd, last, last_len, 0, (struct sockaddr *)&client, sizeof client);
            last_sent = now();
            if (total == 0) { sendto(fd, reply, build(reply, RCVD, sid, 0), 0, (struct sockaddr *)&client, sizeof client); busy = 0; }
            continue;
        }
        if (buf[0] == CONN) {
            if (memcmp(buf + 1, sid, 8))                                       /* someone else: busy */
                sendto(fd, reply, build(reply, CONRJT, buf + 1, 0), 0, (struct sockaddr *)&from, fl);
            continue;                                                          /* our CONN again */
        }
        if (buf[0] != DATA) continue;
        uint64_t no = get64(buf + 9);
        uint32_t len = get32(buf + 17);
        if (memcmp(buf + 1, sid, 8) || !same_client) {                         /* another session */
            sendto(fd, reply, build(reply, RJT, buf + 1, no), 0, (struct sockaddr *)&from, fl);
            continue;
        }
        if (reliable && no < expected) continue;                               /* a duplicate */
        if (no != expected || len > total - got) {
            sendto(fd, reply, build(reply, RJT, sid, no), 0, (struct sockaddr *)&from, fl);
            warn("DATA out of order or too long: session ended");
            fflush(stdout);
            busy = 0;
            continue;
        }
        fwrite(buf + 21, 1, len, stdout);
        got += len;
        expected++;
        if (reliable) {
            last_len = build(last, ACC, sid, no);
            sendto(fd, last, last_len, 0, (struct sockaddr *)&client, sizeof client);
            resends = 0;
        }
        last_sent = now();
        if (got == total) {
            fflush(stdout);
            sendto(fd, reply, build(reply, RCVD, sid, 0), 0, (struct sockaddr *)&client, sizeof client);
            busy = 0;
        }
    }
}

int main(int argc, char **argv) {
    if (argc != 3 || (strcmp(argv[1], "tcp") && strcmp(argv[1], "udp"))) {
        fprintf(stderr, "usage: ppcbs <tcp|udp> PORT > received\n");
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    read_constants();
    if (!strcmp(argv[1], "tcp")) tcp_server(atoi(argv[2]));
    else udp_server(atoi(argv[2]));
    return 0;
}
