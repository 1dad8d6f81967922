"""--capture (root): the sealed namespace's traffic brought to the proxy by mitmproxy's TUN
mode, so that a bot that ignores every proxy setting is still gated, not only cut off.

The proxy the run starts gets a TUN interface of its own (`--mode tun:NAME`, beside its regular
mode); the run moves it into a network namespace it makes (`ip netns add`), gives the namespace
an address on it and its default route through it, and the bot joins that namespace as it
starts (robotsgate.sealing.namespace: joined, then a user namespace of its own, so the bot has
no privilege over its routes). Every packet the bot sends to any address then reaches mitmproxy
with the address it was sent to: TCP is decided request by request (the Host or server name
held to that address: robotsgate.decision.names), DNS is answered by the proxy's resolver and
anything else is refused (robotsgate.mitm.capture). The proxy variables still name the proxy,
through the same bridge as --sealed, for the bots that read them.

mitmproxy connects lazily in this run (connection_strategy=lazy): no connection is opened to an
address before a request to it has been decided.
"""

import secrets
import shutil
import subprocess
from dataclasses import dataclass

# The bot's address on the TUN interface: in the shared address space (RFC 6598), which no
# origin is at.
BOT_ADDRESS = "100.64.83.2"


class CaptureError(Exception):
    """The capture namespace could not be made: said in one line, nothing is run."""


@dataclass
class CaptureNet:
    tun: str  # the TUN interface mitmproxy makes
    netns: str  # the namespace it is moved into (ip netns: /run/netns/NAME)
    ip: str  # the ip program
    made: bool = False

    @classmethod
    def new(cls) -> "CaptureNet":
        ip = shutil.which("ip")
        if ip is None:
            raise CaptureError("--capture needs the ip program (apt-get install iproute2)")
        tag = secrets.token_hex(4)
        return cls(f"rgtun{tag}", f"robotsgate-capture-{tag}", ip)

    @property
    def path(self) -> str:
        return f"/run/netns/{self.netns}"

    def proxy_args(self) -> list[str]:
        """serve's options for the proxy a capturing run starts."""
        return ["--mode", "regular", "--mode", f"tun:{self.tun}",
                "--set", "connection_strategy=lazy"]

    def make(self) -> None:
        """The namespace, with the proxy's TUN interface as its only way out (after the proxy
        made the interface)."""
        self._ip("netns", "add", self.netns)
        self.made = True
        self._ip("link", "set", self.tun, "netns", self.netns)
        self._ip("-n", self.netns, "link", "set", "lo", "up")
        self._ip("-n", self.netns, "addr", "add", f"{BOT_ADDRESS}/32", "dev", self.tun)
        self._ip("-n", self.netns, "link", "set", self.tun, "up")
        # quickack: the bot's kernel acknowledges at once on this route. mitmproxy writes a
        # response's head and body apart, and its userspace TCP stack holds the second write
        # until the first is acknowledged (Nagle); the kernel's delayed ACK (40 ms) then stalled
        # every keep-alive request: 56 req/s on one connection, 504 with it (bench_run.py).
        self._ip("-n", self.netns, "route", "add", "default", "dev", self.tun, "quickack", "1")

    def remove(self) -> None:
        if self.made:
            self.made = False
            subprocess.run([self.ip, "netns", "del", self.netns], capture_output=True,
                           timeout=30)

    def _ip(self, *args: str) -> None:
        done = subprocess.run([self.ip, *args], capture_output=True, text=True, timeout=30)
        if done.returncode != 0:
            raise CaptureError(f"ip {' '.join(args)}: {done.stderr.strip()}")
