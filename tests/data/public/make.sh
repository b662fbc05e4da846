#!/usr/bin/env bash
# Makes tests/data/public/: captures of real tools (curl, wget, python's http.server, openssl,
# iperf3, the kernel's TCP) taken with dumpcap, for tests/test_capture_public.py. Run as root from
# the repository root: bash tests/data/public/make.sh   (see tests/data/public/README.md)
# Three namespaces: wlpub-a (client) -- wlpub-r (router: tbf, iptables loss) -- wlpub-b (server)
set -euo pipefail
OUT=${OUT:-tests/data/public}
A=wlpub-a; R=wlpub-r; B=wlpub-b
W=$(mktemp -d /tmp/wlpub.XXXX)
nap() { python3 -c "import time; time.sleep($1)"; }
PIDS=()
cleanup() { for p in "${PIDS[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done
            for ns in $A $R $B; do ip netns del $ns 2>/dev/null || true; done; rm -rf "$W"; }
trap cleanup EXIT
for ns in $A $R $B; do ip netns del $ns 2>/dev/null || true; done
for ns in $A $R $B; do ip netns add $ns; ip -n $ns link set lo up; done
ip link add wlpub-a0 netns $A type veth peer name wlpub-r0 netns $R
ip link add wlpub-r1 netns $R type veth peer name wlpub-b0 netns $B
ip -n $A addr add 10.78.1.1/24 dev wlpub-a0; ip -n $R addr add 10.78.1.254/24 dev wlpub-r0
ip -n $R addr add 10.78.2.254/24 dev wlpub-r1; ip -n $B addr add 10.78.2.2/24 dev wlpub-b0
ip -n $A -6 addr add fd78:1::1/64 dev wlpub-a0 nodad; ip -n $R -6 addr add fd78:1::fe/64 dev wlpub-r0 nodad
ip -n $R -6 addr add fd78:2::fe/64 dev wlpub-r1 nodad; ip -n $B -6 addr add fd78:2::2/64 dev wlpub-b0 nodad
for l in "$A wlpub-a0" "$R wlpub-r0" "$R wlpub-r1" "$B wlpub-b0"; do set -- $l
  ip -n $1 link set $2 up; ip netns exec $1 ethtool -K $2 tso off gso off gro off tx off rx off >/dev/null 2>&1 || true; done
ip -n $A route add default via 10.78.1.254; ip -n $B route add default via 10.78.2.254
ip -n $A -6 route add default via fd78:1::fe; ip -n $B -6 route add default via fd78:2::fe
ip netns exec $R sysctl -qw net.ipv4.ip_forward=1 net.ipv6.conf.all.forwarding=1
ip netns exec $R tc qdisc add dev wlpub-r1 root tbf rate 20mbit burst 32kbit latency 50ms
ip netns exec $R tc qdisc add dev wlpub-r0 root tbf rate 20mbit burst 32kbit latency 50ms
ina() { ip netns exec $A "$@"; }
inb() { ip netns exec $B "$@"; }
loss() {  # loss A|D PERCENT [PROTO]: random drop of forwarded packets (both ways)
  ip netns exec $R iptables -$1 FORWARD -p ${3:-tcp} -m statistic --mode random --probability $2 -j DROP; }
capture() {  # capture NS IF NAME FILTER SNAPLEN [dumpcap options...] -- command...
  local ns=$1 dev=$2 name=$3 filter=$4 snap=$5; shift 5; local opts=()
  while [ "$1" != -- ]; do opts+=("$1"); shift; done; shift
  if [ -n "${ONLY:-}" ] && [[ " $ONLY " != *" $name "* ]]; then return 0; fi   # ONLY="a.pcapng b.pcap": just those
  ip netns exec $ns dumpcap -q -i $dev "${opts[@]}" -f "$filter" -s "$snap" -w "$OUT/$name" 2>"$W/$name.err" &
  local pid=$!
  for i in $(seq 100); do grep -q "Capturing on" "$W/$name.err" 2>/dev/null && break; nap 0.05; done
  nap 0.3
  "$@" >/dev/null 2>&1 || true
  nap 0.5; kill -INT $pid; wait $pid || true
}
# servers in wlpub-b: python's http.server over a folder of files, iperf3, openssl s_server
mkdir -p $W/www; for n in 1 4 16 64 200; do head -c ${n}000 /dev/urandom | base64 > $W/www/f$n.txt; done
echo '<html><body>hello</body></html>' > $W/www/index.html
(cd $W/www && inb python3 -m http.server 8080 --bind :: >/dev/null 2>&1) & PIDS+=($!)
inb iperf3 -s -D -p 5201 --pidfile $W/iperf.pid
openssl req -x509 -newkey rsa:2048 -nodes -keyout $W/key.pem -out $W/cert.pem -days 2 -subj /CN=wlpub >/dev/null 2>&1
(inb openssl s_server -accept 8443 -key $W/key.pem -cert $W/cert.pem -www -quiet >/dev/null 2>&1) & PIDS+=($!)
nap 1
U=http://10.78.2.2:8080; U6="http://[fd78:2::2]:8080"
# 1-3. HTTP by curl and wget, clean path, full packets (IPv4 pcapng, IPv6 pcapng, classic pcap)
capture $B wlpub-b0 http-curl.pcapng "tcp port 8080" 0 -- ina curl -s $U/index.html $U/f4.txt $U/f16.txt -o /dev/null -o /dev/null -o /dev/null
capture $B wlpub-b0 http-curl-ipv6.pcapng "tcp port 8080" 0 -- ina curl -s -g $U6/f16.txt -o /dev/null
capture $B wlpub-b0 http-wget.pcap "tcp port 8080" 0 -P -- ina wget -q -O /dev/null $U/f1.txt $U/f4.txt
# 4. ten short HTTP connections one after another (many conversations)
capture $B wlpub-b0 http-ten-connections.pcapng "tcp port 8080" 0 -- bash -c "for i in \$(seq 10); do ip netns exec $A curl -s -o /dev/null $U/f1.txt; done"
# 5. TLS 1.3 and 1.2 by openssl s_client against openssl s_server -www
capture $B wlpub-b0 tls-openssl.pcapng "tcp port 8443" 0 -- bash -c "printf 'GET / HTTP/1.0\r\n\r\n' | ip netns exec $A openssl s_client -connect 10.78.2.2:8443 -quiet; printf 'GET / HTTP/1.0\r\n\r\n' | ip netns exec $A openssl s_client -tls1_2 -connect 10.78.2.2:8443 -quiet"
# 6-7. four parallel curl downloads through 3 % loss: captured at the server (losses after it: retransmissions)
#      and at the client (losses before it: gaps, duplicate ACKs, fast retransmissions), headers only
loss A 0.03
capture $B wlpub-b0 http-parallel-loss-server.pcapng "tcp port 8080" 96 -- ina curl -s -Z $U/f200.txt $U/f200.txt $U/f64.txt $U/f64.txt -o /dev/null -o /dev/null -o /dev/null -o /dev/null
capture $A wlpub-a0 http-parallel-loss-client.pcapng "tcp port 8080" 96 -- ina curl -s -Z $U/f200.txt $U/f200.txt $U/f64.txt $U/f64.txt -o /dev/null -o /dev/null -o /dev/null -o /dev/null
# 8-10. iperf3 through 3 % loss: 3 parallel streams (receiver), reverse (captured at the sender), IPv6
capture $B wlpub-b0 iperf3-P3-loss.pcapng "tcp port 5201" 80 -- ina iperf3 -c 10.78.2.2 -p 5201 -P 3 -n 600K
capture $B wlpub-b0 iperf3-reverse-loss-sender.pcapng "tcp port 5201" 80 -- ina iperf3 -c 10.78.2.2 -p 5201 -R -n 600K
capture $B wlpub-b0 iperf3-ipv6-loss.pcapng "tcp port 5201" 100 -- ina iperf3 -c fd78:2::2 -p 5201 -n 600K
# 11. no SACK, no timestamps on the client (sender): NewReno recovery, more duplicate ACKs
ina sysctl -qw net.ipv4.tcp_sack=0 net.ipv4.tcp_timestamps=0
capture $B wlpub-b0 iperf3-nosack-loss.pcapng "tcp port 5201" 80 -- ina iperf3 -c 10.78.2.2 -p 5201 -n 600K
ina sysctl -qw net.ipv4.tcp_sack=1 net.ipv4.tcp_timestamps=1
# 12. MSS 536 (the server's route advertises it) through loss
ip -n $B route change 10.78.1.0/24 via 10.78.2.254 advmss 536 2>/dev/null || ip -n $B route add 10.78.1.0/24 via 10.78.2.254 advmss 536
capture $B wlpub-b0 iperf3-mss536-loss.pcapng "tcp port 5201" 80 -- ina iperf3 -c 10.78.2.2 -p 5201 -n 300K
ip -n $B route del 10.78.1.0/24
loss D 0.03
# 13. UDP through 3 % loss, two iperf3 runs (two UDP conversations and their TCP control connections)
loss A 0.03 udp
capture $B wlpub-b0 iperf3-udp-loss.pcapng "udp port 5201 or tcp port 5201" 96 -- bash -c "ip netns exec $A iperf3 -c 10.78.2.2 -p 5201 -u -b 2M -l 1000 -n 100K; ip netns exec $A iperf3 -c 10.78.2.2 -p 5201 -u -b 2M -l 400 -n 40K"
loss D 0.03 udp
# 14-15. UDP datagrams over 1500 B: IPv4 fragments (classic pcap), IPv6 fragment headers
capture $B wlpub-b0 udp-fragments-ipv4.pcap "udp port 5201 or (ip[6:2] & 0x1fff != 0) or tcp port 5201" 0 -P --time-stamp-type host -- ina iperf3 -c 10.78.2.2 -p 5201 -u -b 1M -l 4000 -n 24K
capture $B wlpub-b0 udp-fragments-ipv6.pcapng "udp port 5201 or ip6[6] == 44 or tcp port 5201" 0 -- ina iperf3 -c fd78:2::2 -p 5201 -u -b 1M -l 3500 -n 21K
# 16. a small tbf queue (tail drops in bursts) at 5 Mbit/s, captured at the sender
ip netns exec $R tc qdisc change dev wlpub-r1 root tbf rate 5mbit burst 16kbit limit 20000
capture $A wlpub-a0 iperf3-tbf-taildrop-sender.pcapng "tcp port 5201" 80 -- ina iperf3 -c 10.78.2.2 -p 5201 -n 400K
ip netns exec $R tc qdisc change dev wlpub-r1 root tbf rate 20mbit burst 32kbit latency 50ms
# 17-18. a receiver that stops reading (zero window, window full, zero-window probes, window updates),
#        python sockets with a 4 kB receive buffer; then keep-alives (1 s idle, 1 s interval)
cat > $W/zero.py <<'PY'
import socket, sys, threading, time
mode = sys.argv[1]
srv = socket.socket(); srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096); srv.bind(("10.78.2.2", 9000)); srv.listen()
def serve():
    c, _ = srv.accept()
    if mode == "zero":
        time.sleep(1.5)
        while c.recv(1000): time.sleep(0.01)
    else:
        while c.recv(1000): pass
    c.close()
t = threading.Thread(target=serve); t.start()
sys.stdout.flush()
import subprocess
sub = subprocess.Popen(["ip", "netns", "exec", "wlpub-a", "python3", "-c", f"""
import socket, time
c = socket.create_connection(("10.78.2.2", 9000))
if "{mode}" == "zero":
    c.sendall(b"z" * 60000)
else:
    c.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE, 1); c.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPINTVL, 1)
    c.sendall(b"k" * 100); time.sleep(3.6); c.sendall(b"k" * 100)
c.close()
"""])
sub.wait(); t.join()
PY
capture $B wlpub-b0 tcp-zero-window.pcapng "tcp port 9000" 0 -- inb python3 $W/zero.py zero
capture $B wlpub-b0 tcp-keepalive.pcapng "tcp port 9000" 0 -- inb python3 $W/zero.py keep
# 19. resets: curl to a closed port (RST) and to the http server (normal), Linux cooked v1 on "any"
capture $B any tcp-reset-sll.pcapng "tcp port 8081 or tcp port 8080" 0 -y LINUX_SLL -- bash -c "ip netns exec $A curl -s $U/index.html -o /dev/null; ip netns exec $A curl -s http://10.78.2.2:8081/ -o /dev/null"
# 20. HTTP and iperf3 UDP on the server's loopback, Linux cooked v2 on "any"
capture $B any loopback-sll2.pcapng "tcp port 8080 or port 5201" 0 -y LINUX_SLL2 -- bash -c "ip netns exec $B curl -s http://127.0.0.1:8080/f4.txt -o /dev/null; ip netns exec $B iperf3 -c 127.0.0.1 -p 5201 -u -b 1M -l 200 -n 4K"
# 21. the same tools on lo (Ethernet header of zeros)
capture $B lo loopback-lo.pcapng "tcp port 8080 or port 5201" 0 -- bash -c "ip netns exec $B curl -s -g 'http://[::1]:8080/f16.txt' -o /dev/null; ip netns exec $B iperf3 -c 127.0.0.1 -p 5201 -n 100K -l 8K"
# 22. reordering: the router sends one TCP/IPv4 packet in 16 (IP id ending in 0) through a slow
#     htb class (1 Mbit/s) beside a fast one (20 Mbit/s), so later packets overtake it; captured
#     at the receiver (this kernel has no netem and no prio qdisc)
ip netns exec $R tc qdisc del dev wlpub-r1 root
ip netns exec $R tc qdisc add dev wlpub-r1 root handle 1: htb default 10
ip netns exec $R tc class add dev wlpub-r1 parent 1: classid 1:10 htb rate 20mbit
ip netns exec $R tc class add dev wlpub-r1 parent 1: classid 1:20 htb rate 1mbit ceil 1mbit
ip netns exec $R tc filter add dev wlpub-r1 parent 1: protocol ip prio 1 u32 match u16 0x0000 0x000f at 4 match u8 6 0xff at 9 flowid 1:20
capture $B wlpub-b0 iperf3-reordered.pcapng "tcp port 5201" 80 -- ina iperf3 -c 10.78.2.2 -p 5201 -n 300K
ip netns exec $R tc qdisc del dev wlpub-r1 root
ip netns exec $R tc qdisc add dev wlpub-r1 root tbf rate 20mbit burst 32kbit latency 50ms
# 24. TCP in IP fragments: the client sends without DF (ip_no_pmtu_disc), the router's link
#     to the server has an MTU of 1000 (the server keeps 1500: its MSS stays 1460), so every full
#     segment arrives in two fragments
ina sysctl -qw net.ipv4.ip_no_pmtu_disc=1
ip -n $R link set wlpub-r1 mtu 1000
capture $B wlpub-b0 tcp-in-ip-fragments.pcapng "tcp port 5201 or (ip[6:2] & 0x1fff != 0)" 0 -- ina iperf3 -c 10.78.2.2 -p 5201 -n 40K
ip -n $R link set wlpub-r1 mtu 1500
ina sysctl -qw net.ipv4.ip_no_pmtu_disc=0
# 25. one 4-tuple three times: python's socket binds client port 40000 (SO_REUSEADDR) for three
#     HTTP/1.0 GETs one after another (the server closes first, so its TIME_WAIT takes the new SYN)
cat > $W/reuse.py <<'PY'
import socket
for i in range(3):
    c = socket.socket(); c.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); c.bind(("10.78.1.1", 40000))
    c.connect(("10.78.2.2", 8080)); c.sendall(b"GET /f1.txt HTTP/1.0\r\n\r\n")
    while c.recv(65536): pass
    c.close()
PY
capture $B wlpub-b0 tcp-port-reuse.pcapng "tcp port 8080" 0 -- ina python3 $W/reuse.py
# 23. frames the capture lost: 14, 15 and 20 of the first with editcap's frame deletion (ACKed
#     unseen segments, gaps)
if [ -z "${ONLY:-}" ] || [[ " $ONLY " == *" http-curl-frames-deleted.pcapng "* ]]; then
  editcap $OUT/http-curl.pcapng $OUT/http-curl-frames-deleted.pcapng 14 15 20 >/dev/null; fi
ls -l $OUT
