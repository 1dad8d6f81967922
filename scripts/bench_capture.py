"""mitmproxy's capture modes side by side: how a network namespace's traffic can be brought to
robotsgate when the bot in it ignores every proxy setting, and what each way costs, needs and
leaves open.

Root. One `robotsgate serve` process listens in four modes at once, so that a ratio between
them is never one launch's luck against another's (scripts/bench_proxy.py says why):

- proxy: its regular mode; wrk in the machine's namespace through it (absolute-form targets),
  as a bot that reads the proxy variables. The baseline.
- tun: mitmproxy's TUN mode, the interface moved into a namespace by the code `robotsgate run
  --capture` uses (robotsgate.sealing.capture.CaptureNet: the namespace's only route, quickack).
- transparent: `--mode transparent@H:P`; a veth pair to a namespace whose default route is the
  machine's end of it (quickack too), and an nftables table in the machine's own firewall: TCP
  arriving on that veth redirected to the transparent port, anything else from it dropped (input
  and forward, both families: the veth has IPv6 link-local addresses of its own).
- wireguard: `--mode wireguard:CONF@127.0.0.1:P`; a WireGuard interface made in the machine's
  namespace by wireguard-go (userspace: this kernel has no WireGuard module), configured by `wg`
  with the client key and the proxy's endpoint, then moved into a namespace of its own as its
  only route (quickack), its UDP socket staying outside (as the kernel's WireGuard does).

wrk runs in each capture namespace connecting to the origin itself, with no proxy setting. The
origin is nginx in a namespace of its own (veth), robots.txt allowing everything, reached from
the capture namespaces only through the proxy. For keep-alive connections at each concurrency
(`--close`: a new connection per request too), `--rounds` rounds of every mode back to back, the
order turning each round: requests/s, the proxy's CPU per request (and wireguard-go's), and each
mode's requests/s over the proxy's (the median of the rounds' ratios, with their range).

Then what each mode does with what is not a web request, from inside its namespace (probes): a
DNS query and a QUIC-like datagram to the origin's address (a UDP listener there counts what
arrives), a datagram and a TCP connection to an address of the machine itself (listeners in the
machine's namespace count what arrives); transparent also without its filter rules (the redirect
alone).

Needs nginx, wrk, nftables, wireguard-tools and wireguard-go (Debian: `apt-get install -y nginx
wrk nftables wireguard-tools wireguard-go && service nginx stop`).

    .venv/bin/python scripts/bench_capture.py [--rounds 5] [--seconds 5] [--concurrency 1,10]
        [--close] [--no-quickack]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import bench_proxy as bench
from bench_proxy import REPO, Origin, Run

sys.path.insert(0, str(REPO))
from robotsgate.sealing.capture import CaptureNet

MODES = ("proxy", "tun", "transparent", "wireguard")
WG_CLIENT = "10.0.0.1"  # the client address of mitmproxy's WireGuard configuration

# Run in a capture namespace: what reaches where. argv: origin address, the machine's address,
# the machine's UDP and TCP listening ports.
PROBE = r"""
import json, socket, sys
origin, machine, udp_port, tcp_port = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
said = {}

def udp(address, port, payload):
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.settimeout(2)
        try:
            s.connect((address, port))
            s.send(payload)
            return s.recv(2048)
        except socket.timeout:
            return "no answer"
        except OSError as exc:
            return type(exc).__name__

query = b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x09localhost\x00\x00\x01\x00\x01"
answer = udp(origin, 53, query)
said["dns"] = answer if isinstance(answer, str) else \
    "answered, rcode %d, %d records" % (answer[3] & 15, int.from_bytes(answer[6:8], "big"))
answer = udp(origin, 443, b"\xc0\x00\x00\x00\x01" + bytes(1195))  # a QUIC long header
said["quic"] = answer if isinstance(answer, str) else "answered"
answer = udp(machine, udp_port, b"hello")
said["udp to the machine"] = answer if isinstance(answer, str) else "answered"
try:
    with socket.create_connection((machine, tcp_port), timeout=3) as s:
        s.settimeout(3)
        s.sendall(b"GET / HTTP/1.1\r\nHost: %s:%d\r\n\r\n" % (machine.encode(), tcp_port))
        head = s.recv(200).split(b"\r\n")[0].decode()
        said["tcp to the machine"] = head or "closed"
except OSError as exc:
    said["tcp to the machine"] = type(exc).__name__
print(json.dumps(said))
"""


def run(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(args, capture_output=True, text=True, timeout=60)
    if check and done.returncode != 0:
        raise SystemExit(f"{' '.join(args)}: {done.stderr.strip()}")
    return done


def cpu_of(pid: int | None) -> float:
    return bench.cpu_seconds(pid) if pid else 0.0


@dataclass
class Setup:
    """Where each mode's bot runs, and what the run must undo."""

    namespaces: dict[str, str] = field(default_factory=dict)  # mode: its bot's namespace
    nft_table: str = ""
    wireguard: subprocess.Popen[bytes] | None = None


def transparent(into: Origin, port: int, quickack: bool, setup: Setup) -> None:
    """`into`'s default route to this namespace; TCP from it redirected to `port`."""
    run("ip", "-n", into.name, "route", "add", "default", "via", into.host, "dev", into.inside,
        *(("quickack", "1") if quickack else ()))
    setup.nft_table = f"rgbench_{into.name}"
    ruleset = f"""
table inet {setup.nft_table} {{
    chain bot_redirect {{
        type nat hook prerouting priority -100; policy accept;
        iifname "{into.outside}" meta l4proto tcp redirect to :{port}
    }}
    chain bot_input {{
        type filter hook input priority 0; policy accept;
        iifname "{into.outside}" tcp dport {port} accept
        iifname "{into.outside}" drop
    }}
    chain bot_forward {{
        type filter hook forward priority 0; policy accept;
        iifname "{into.outside}" drop
    }}
}}
"""
    subprocess.run(["nft", "-f", "-"], input=ruleset, text=True, check=True, timeout=30)
    setup.namespaces["transparent"] = into.name


def wireguard(workdir: Path, port: int, quickack: bool, setup: Setup) -> Path:
    """The proxy's WireGuard configuration (written to a file), and the client: an interface
    made by wireguard-go, then moved into a namespace of its own."""
    client_key, server_key = (run("wg", "genkey").stdout.strip() for _ in range(2))
    server_public = subprocess.run(["wg", "pubkey"], input=server_key, capture_output=True,
                                   text=True, check=True).stdout.strip()
    conf = workdir / "wireguard.json"
    conf.write_text(json.dumps({"server_key": server_key, "client_key": client_key}))
    key = workdir / "client.key"
    key.write_text(client_key)
    key.chmod(0o600)
    tag = os.urandom(3).hex()
    interface, name = f"rgwg{tag}", f"rgbw{tag}"
    setup.wireguard = subprocess.Popen(
        ["wireguard-go", interface], env={**os.environ, "WG_PROCESS_FOREGROUND": "1"},
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while run("ip", "link", "show", interface, check=False).returncode != 0:
        if setup.wireguard.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"wireguard-go made no interface {interface}")
        time.sleep(0.05)
    run("wg", "set", interface, "private-key", str(key), "peer", server_public, "endpoint",
        f"127.0.0.1:{port}", "allowed-ips", "0.0.0.0/0")
    run("ip", "netns", "add", name)
    setup.namespaces["wireguard"] = name
    run("ip", "link", "set", interface, "netns", name)
    run("ip", "-n", name, "link", "set", "lo", "up")
    run("ip", "-n", name, "addr", "add", f"{WG_CLIENT}/32", "dev", interface)
    run("ip", "-n", name, "link", "set", interface, "up")
    run("ip", "-n", name, "route", "add", "default", "dev", interface,
        *(("quickack", "1") if quickack else ()))
    return conf


@contextlib.contextmanager
def listeners(origin: Origin) -> Iterator[dict[str, list[bytes]]]:
    """UDP listeners on the origin's ports 53 and 443 (in its namespace) and on a port of this
    namespace, a TCP one here: what reaches each, by name; their ports under "ports"."""
    seen: dict[str, list[bytes]] = {"dns": [], "quic": [], "udp to the machine": [],
                                    "tcp to the machine": []}
    sockets: list[socket.socket] = []

    def origin_sockets() -> None:
        fd = os.open(f"/run/netns/{origin.name}", os.O_RDONLY)
        os.setns(fd, os.CLONE_NEWNET)
        os.close(fd)
        for port, name in ((53, "dns"), (443, "quic")):
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.bind((origin.address, port))
            sockets.append(s)
            threading.Thread(target=receive, args=(s, name), daemon=True).start()

    def receive(s: socket.socket, name: str) -> None:
        with contextlib.suppress(OSError):
            while True:
                seen[name].append(s.recv(2048))

    def accept(s: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while True:
                connection, _ = s.accept()
                seen["tcp to the machine"].append(connection.recv(200))
                connection.close()

    thread = threading.Thread(target=origin_sockets)
    thread.start()
    thread.join()
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("0.0.0.0", 0))
    tcp = socket.socket()
    tcp.bind(("0.0.0.0", 0))
    tcp.listen()
    sockets += [udp, tcp]
    threading.Thread(target=receive, args=(udp, "udp to the machine"), daemon=True).start()
    threading.Thread(target=accept, args=(tcp,), daemon=True).start()
    seen["ports"] = [str(udp.getsockname()[1]).encode(), str(tcp.getsockname()[1]).encode()]
    try:
        yield seen
    finally:
        for s in sockets:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            s.close()


def probe(namespace: str, origin: Origin, seen: dict[str, list[bytes]]) -> str:
    """What one namespace's bot reaches, as a line: its side, and what arrived where."""
    before = {name: len(got) for name, got in seen.items()}
    udp_port, tcp_port = (int(p) for p in seen["ports"])
    done = run("ip", "netns", "exec", namespace, sys.executable, "-c", PROBE, origin.address,
               origin.host, str(udp_port), str(tcp_port))
    said = json.loads(done.stdout)
    time.sleep(0.3)
    parts = []
    for name, what in said.items():
        arrived = len(seen[name]) - before[name]
        where = "the origin" if name in ("dns", "quic") else "the machine"
        parts.append(f"{name}: {what}; {arrived} reached {where}")
    return "; ".join(parts)


def measure(args: argparse.Namespace, setup: Setup, proxy: subprocess.Popen[bytes],
            port: int, url: str, workdir: Path) -> None:
    connections = [False, True] if args.close else [False]
    print(f"{'conn':10} {'c':>3} | " + " | ".join(f"{m + ' rps':>15} {'cpu µs':>6}"
                                                   for m in MODES) +
          " | " + "  ".join(f"{m + '/proxy':>18}" for m in MODES[1:]) + " | wg-go µs")
    for close in connections:
        for c in (int(x) for x in args.concurrency.split(",")):
            runs: dict[str, list[Run]] = {m: [] for m in MODES}
            wg_cpu: list[float] = []
            for round_ in range(args.rounds):
                turn = round_ % len(MODES)
                for mode in MODES[turn:] + MODES[:turn]:
                    pid = setup.wireguard.pid if setup.wireguard else None
                    before = cpu_of(pid)
                    result = bench.wrk(port, proxy.pid, url, c, close, args.seconds, workdir,
                                       setup.namespaces.get(mode))
                    runs[mode].append(result)
                    if mode == "wireguard":
                        wg_cpu.append((cpu_of(pid) - before) / result.requests * 1e6)
            ratios = "  ".join(f"{bench.ratio(runs, m, 'proxy')[1]:>18}" for m in MODES[1:])
            print(f"{'close' if close else 'keep-alive':10} {c:>3} | "
                  f"{bench.cells(runs, list(MODES), 15)} | {ratios} | "
                  f"{statistics.median(wg_cpu):8.0f}", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--concurrency", default="1,10")
    parser.add_argument("--close", action="store_true",
                        help="also a new connection per request")
    parser.add_argument("--no-quickack", action="store_true",
                        help="the capture namespaces' routes without quickack 1")
    parser.add_argument("--probes-only", action="store_true")
    args = parser.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("bench_capture.py needs root (namespaces, a TUN interface, nftables)")
    for tool in ("nginx", "wrk", "nft", "wg", "wireguard-go"):
        if shutil.which(tool) is None:
            raise SystemExit(f"{tool} is missing: apt-get install -y nginx wrk nftables "
                             f"wireguard-tools wireguard-go && service nginx stop")
    os.chdir(REPO)
    os.sched_setaffinity(0, bench.LOAD_CPUS)  # nginx, wrk and wireguard-go inherit it
    quickack = not args.no_quickack
    setup = Setup()
    capture = CaptureNet.new()
    proxy = nginx = None
    with tempfile.TemporaryDirectory(prefix="bench-capture-") as scratch, \
            bench.linked_namespace("rgbo") as origin, \
            bench.linked_namespace("rgbt") as into:
        workdir = Path(scratch)
        workdir.chmod(0o755)  # nginx's workers run as an unprivileged user
        try:
            nginx, origin_port, _ = bench.start_nginx(workdir, False, bench.PAGE, origin)
            url = f"http://{origin.address}:{origin_port}/page.html"
            transparent_port, wireguard_port = bench.free_port(), bench.free_port()
            conf = wireguard(workdir, wireguard_port, quickack, setup)
            proxy, port = bench.start_mitmdump(
                workdir, "proxy", REPO, serve=True,
                extra=[*capture.proxy_args(),
                       "--mode", f"transparent@{into.host}:{transparent_port}",
                       "--mode", f"wireguard:{conf}@127.0.0.1:{wireguard_port}",
                       "--set", f"robots_egress_allow={origin.address}"])
            bench.wait_for_link(capture.tun, proxy)
            capture.make()
            if not quickack:
                run("ip", "-n", capture.netns, "route", "replace", "default", "dev",
                    capture.tun)
            setup.namespaces["tun"] = capture.netns
            transparent(into, transparent_port, quickack, setup)
            bench.cache_robots(port, url)
            for mode in MODES:  # warm-up; each mode must reach the origin through the proxy
                bench.wrk(port, proxy.pid, url, 10, False, 2, workdir,
                          setup.namespaces.get(mode))
            if not args.probes_only:
                print(f"one robotsgate serve in four modes; nginx at {origin.address} in a "
                      f"namespace of its own; wrk (keep-alive unless close) in each mode's "
                      f"namespace, {args.rounds} rotating rounds of {args.seconds} s per cell, "
                      f"medians; routes {'with' if quickack else 'without'} quickack 1; the "
                      f"proxy on CPU {','.join(map(str, sorted(bench.PROXY_CPUS))) or 'shared'},"
                      f" nginx, wrk and wireguard-go on "
                      f"{','.join(map(str, sorted(bench.LOAD_CPUS)))}")
                measure(args, setup, proxy, port, url, workdir)
            print("\nprobes from each capture namespace (a DNS query for localhost and a QUIC "
                  "datagram to the origin's address, a datagram and an HTTP request to the "
                  "machine's address on the origin's link):")
            with listeners(origin) as seen:
                for mode in MODES[1:]:
                    print(f"  {mode}: {probe(setup.namespaces[mode], origin, seen)}")
                run("nft", "delete", "chain", "inet", setup.nft_table, "bot_input")
                run("nft", "delete", "chain", "inet", setup.nft_table, "bot_forward")
                forwarding = Path("/proc/sys/net/ipv4/ip_forward").read_text().strip()
                print(f"  transparent, the redirect alone (no input or forward rule; "
                      f"net.ipv4.ip_forward={forwarding}): "
                      f"{probe(setup.namespaces['transparent'], origin, seen)}")
        finally:
            bench.stop([p for p in (proxy, setup.wireguard) if p is not None], nginx, None)
            if setup.nft_table:
                run("nft", "delete", "table", "inet", setup.nft_table, check=False)
            capture.remove()
            if "wireguard" in setup.namespaces:
                run("ip", "netns", "del", setup.namespaces["wireguard"], check=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
