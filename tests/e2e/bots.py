"""Bots for `robotsgate run`, real programs each: those that honour the proxy settings and
those that ignore them.

`python bots.py [--exit N] JSON` is the command a test gives `robotsgate run`: it runs each bot
of JSON ([[name, argv], ...]) in turn, in the environment the run gave it, and prints one JSON
object {name: {"status": the HTTP status it got or null, "err": what it said}}; then exits N.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve()
REPO = HERE.parents[2]
FETCH_MJS = REPO / "deploy" / "clients" / "fetch.mjs"

# --- those that honour the proxy settings -------------------------------------------------------


def curl(url: str) -> list[str]:
    return ["curl", "-sS", "--max-time", "20", "-o", "/dev/null", "-w", "%{http_code}", url]


def requests_get(url: str) -> list[str]:
    return [sys.executable, "-c", "import requests, sys\n"
            "print(requests.get(sys.argv[1], timeout=20).status_code)", url]


def node_proxy(url: str) -> list[str]:
    """Node 20 reads no proxy variable itself: the client recipe that asks the proxy."""
    return ["node", str(FETCH_MJS), url]


# --- those that ignore them -----------------------------------------------------------------------


def curl_direct(url: str) -> list[str]:
    return ["curl", "--noproxy", "*", "-sS", "--max-time", "10", "-o", "/dev/null", "-w",
            "%{http_code}", url]


def python_direct(url: str) -> list[str]:
    """Python's http.client, connecting where the URL says (it reads no proxy variable)."""
    return [sys.executable, "-c", "import http.client, sys, urllib.parse\n"
            "u = urllib.parse.urlsplit(sys.argv[1])\n"
            "c = http.client.HTTPConnection(u.hostname, u.port, timeout=10)\n"
            "c.request('GET', u.path)\n"
            "print(c.getresponse().status)", url]


def node_direct(url: str) -> list[str]:
    """Node's fetch() without NODE_USE_ENV_PROXY (and Node 20 reads it in no case)."""
    return ["env", "-u", "NODE_USE_ENV_PROXY", "node", "-e",
            "fetch(process.argv[1], {signal: AbortSignal.timeout(10000)})"
            ".then(r => console.log(r.status))"
            ".catch(e => { console.error(String(e.cause || e)); process.exit(1); })", url]


RESOLVING = """\
import random, socket, struct, sys, urllib.parse
url = urllib.parse.urlsplit(sys.argv[1])
servers = [line.split()[1] for line in open("/etc/resolv.conf")
           if line.startswith("nameserver")]
ident = random.randrange(65536)
query = struct.pack("!HHHHHH", ident, 0x0100, 1, 0, 0, 0) + b"".join(
    bytes([len(part)]) + part.encode() for part in url.hostname.split(".")) + b"\\0" + \
    struct.pack("!HH", 1, 1)
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(10)
s.sendto(query, (servers[0], 53))
answer = s.recv(4096)
count = struct.unpack("!H", answer[6:8])[0]
if answer[3] & 0x0f or not count:
    sys.exit(f"no address for {url.hostname}: rcode {answer[3] & 0x0f}")
address = socket.inet_ntoa(answer[-4:])  # the last answer's A record
print("resolved", address, file=sys.stderr)
c = socket.create_connection((address, url.port), timeout=10)
c.sendall(f"GET {url.path} HTTP/1.1\\r\\nHost: {url.netloc}\\r\\nConnection: close\\r\\n\\r\\n"
          .encode())
print(c.recv(4096).split()[1].decode())
"""


def resolving(url: str) -> list[str]:
    """A bot that resolves the name itself, by DNS to its resolv.conf's server, and speaks
    HTTP to the address it got."""
    return [sys.executable, "-c", RESOLVING, url]


def udp(address: str, port: int) -> list[str]:
    """A datagram (to port 443: what a QUIC client sends first, as far as a firewall sees)."""
    return [sys.executable, "-c", "import socket, sys\n"
            "s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
            "s.settimeout(3)\n"
            "s.sendto(bytes([0xc3]) + bytes(1199), (sys.argv[1], int(sys.argv[2])))\n"
            "try:\n    print(s.recv(100))\nexcept OSError as e:\n    sys.exit(str(e))",
            address, str(port)]


ESCAPING = """\
import ctypes, errno, json, os, socket, sys
stream, datagram, roots, queue = sys.argv[1:5]
libc = ctypes.CDLL(None, use_errno=True)
tried = {}
def attempt(name, action):
    try:
        action()
        tried[name] = "done"
    except OSError as exc:
        tried[name] = errno.errorcode.get(exc.errno, str(exc))
def connect():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(stream)
    s.sendall(b"out")
def send():
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    a.sendto(b"out", datagram)
def send_raw():  # the kernel makes a SOCK_RAW pair a datagram one
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_RAW)
    a.sendto(b"out", datagram)
def queue_message():  # a System V message queue of the machine's
    message = ctypes.create_string_buffer(b"\\x01\\0\\0\\0\\0\\0\\0\\0out")
    if libc.msgsnd(int(queue), message, 3, 0o4000) < 0:  # IPC_NOWAIT
        raise OSError(ctypes.get_errno(), "msgsnd")
def write_root_s():
    with open(roots, "a") as f:
        f.write("out")
def the_run_s_memory():
    run = int(open(f"/proc/{os.getppid()}/stat").read().rsplit(")", 1)[1].split()[1])
    os.close(os.open(f"/proc/{run}/mem", os.O_RDWR))
attempt("unix-stream", connect)
attempt("unix-datagram", send)
attempt("unix-raw-pair", send_raw)
attempt("ipc-queue", queue_message)
attempt("root-file", write_root_s)
attempt("run-memory", the_run_s_memory)
# The session keyring's serial (KEYCTL_GET_KEYRING_ID of KEY_SPEC_SESSION_KEYRING).
keyctl = {"x86_64": 250, "aarch64": 219}[os.uname().machine]
tried["session-keyring"] = str(libc.syscall(keyctl, 0, -3, 0))
print(json.dumps(tried), file=sys.stderr)
"""


def escaping(stream: str, datagram: str, roots: str, queue: int) -> list[str]:
    """A sealed bot looking for another way out: a Unix socket on the filesystem (stream, and
    datagram through a datagram or raw socket pair), a file of root's, the memory of the run
    that holds the bridge to the proxy (its grandparent: bots.py runs it), a System V message
    queue of the machine's. It says what each attempt came to: "done" or the errno's name; and
    its session keyring's serial."""
    return [sys.executable, "-c", ESCAPING, stream, datagram, roots, str(queue)]


def _status(out: str) -> int | None:
    for line in reversed(out.strip().splitlines()):
        line = line.strip()
        if line.startswith("{"):  # fetch.mjs: one JSON object per URL
            return int(json.loads(line)["status"])
        if line.isdigit() and line != "000":  # curl's %{http_code} is 000 without an answer
            return int(line)
    return None


def main(argv: list[str]) -> int:
    status = 0
    if argv[:1] == ["--exit"]:
        status, argv = int(argv[1]), argv[2:]
    results = {}
    for name, command in json.loads(argv[0]):
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=40)
            results[name] = {"status": _status(done.stdout), "err": done.stderr[-2000:]}
        except subprocess.TimeoutExpired:
            results[name] = {"status": None, "err": "timed out"}
    print(json.dumps(results), flush=True)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
