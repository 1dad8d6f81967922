"""A Redis Cluster for the tests: three primaries and three replicas on free ports of 127.0.0.1.

`Cluster` starts six private ``redis-server`` processes with cluster mode on (nothing kept on
disk but each node's cluster configuration, in its own directory) and joins them with
``redis-cli --cluster create``. Nodes notice a dead peer after `node_timeout` ms, so a killed
primary's replica is promoted within a few seconds. `shared_cluster()` is one cluster for a
whole test session (tests keep apart by key prefix); a test that kills a node starts its own.
"""

from __future__ import annotations

import atexit
import random
import socket
import subprocess
import time
from pathlib import Path

import pytest

from .machine import require_tool
from .redis_server import RedisServer

NODES = 6
START_TIMEOUT = 20.0


class Cluster:
    def __init__(self, workdir: Path, *, node_timeout: int = 1000) -> None:
        self.cli = require_tool("redis-cli")
        self.nodes: list[RedisServer] = []
        try:
            for n in range(NODES):  # one by one: those started are stopped if one fails
                self.nodes.append(RedisServer(workdir / f"node{n}", port=cluster_port(), options=(
                    "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                    "--cluster-node-timeout", str(node_timeout),
                    # Replicas copy their primary at once (not 5 s later): a replica that has
                    # not may not be promoted.
                    "--repl-diskless-sync-delay", "0")))
            created = subprocess.run(
                [self.cli, "--cluster", "create",
                 *(f"127.0.0.1:{node.port}" for node in self.nodes),
                 "--cluster-replicas", "1", "--cluster-yes"],
                capture_output=True, text=True, timeout=60)
            if created.returncode != 0:
                pytest.fail(f"redis-cli --cluster create failed: {created.stdout}"
                            f"{created.stderr}")
            self.wait_healthy()
        except BaseException:
            self.stop()
            raise

    @property
    def url(self) -> str:
        """robots_redis for the cluster: any one node will do."""
        return f"redis+cluster://127.0.0.1:{self.nodes[0].port}"

    def node_url(self, node: RedisServer | None = None) -> str:
        """A plain URL of one node (for redis-py's RedisCluster.from_url)."""
        return (node or self.nodes[0]).url.removesuffix("/0")

    def info(self, node: RedisServer) -> dict[str, str]:
        out = subprocess.run([self.cli, "-p", str(node.port), "cluster", "info"],
                             capture_output=True, text=True, timeout=10).stdout
        return dict(line.split(":", 1) for line in out.split() if ":" in line)

    def alive(self) -> list[RedisServer]:
        return [node for node in self.nodes
                if node.process is not None and node.process.poll() is None]

    def replication(self, node: RedisServer) -> dict[str, str]:
        out = subprocess.run([self.cli, "-p", str(node.port), "info", "replication"],
                             capture_output=True, text=True, timeout=10).stdout
        return dict(line.split(":", 1) for line in out.split() if ":" in line)

    def _healthy(self, node: RedisServer) -> bool:
        if self.info(node).get("cluster_state") != "ok":
            return False
        replication = self.replication(node)
        # A replica that never copied its primary cannot stand in for it.
        return replication.get("role") != "slave" or \
            replication.get("master_link_status") == "up"

    def wait_healthy(self, timeout: float = START_TIMEOUT) -> None:
        """Until every live node says the cluster is ok (every slot served), and every
        replica has a copy of its primary."""
        deadline = time.monotonic() + timeout
        while not all(self._healthy(node) for node in self.alive()):
            if time.monotonic() > deadline:
                pytest.fail(f"the Redis Cluster is not ok after {timeout:.0f} s: "
                            f"{[self.info(node) for node in self.alive()]}")
            time.sleep(0.1)

    def primary_of(self, key: str) -> RedisServer:
        """The node that serves `key`'s hash slot now."""
        node = self.alive()[0]
        slot = subprocess.run([self.cli, "-p", str(node.port), "cluster", "keyslot", key],
                              capture_output=True, text=True, timeout=10).stdout.strip()
        for node in self.alive():
            role = subprocess.run([self.cli, "-p", str(node.port), "role"],
                                  capture_output=True, text=True, timeout=10).stdout.split()
            if role[:1] != ["master"]:
                continue
            nodes = subprocess.run([self.cli, "-p", str(node.port), "cluster", "nodes"],
                                   capture_output=True, text=True, timeout=10).stdout
            for line in nodes.splitlines():
                fields = line.split()
                if "myself" in fields[2]:
                    for served in fields[8:]:
                        low, _, high = served.partition("-")
                        if low.isdigit() and int(low) <= int(slot) <= int(high or low):
                            return node
        pytest.fail(f"no primary serves the slot of {key!r} ({slot})")

    def kill(self, node: RedisServer) -> None:
        """SIGKILL: the node is gone, as a crashed machine is."""
        assert node.process is not None
        node.process.kill()
        node.process.wait(timeout=10)

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()


def cluster_port() -> int:
    """A free port whose cluster bus port (10000 above it) is free too."""
    for _ in range(200):
        port = random.randrange(20_000, 45_000)
        if _free(port) and _free(port + 10_000):
            return port
    pytest.fail("no free pair of ports (p, p + 10000) for a Redis Cluster node")


def _free(port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


_shared: Cluster | None = None


def shared_cluster(workdir: Path) -> Cluster:
    """One cluster for the test session (started on first use, stopped when the tests end)."""
    global _shared
    if _shared is None:
        _shared = Cluster(workdir)
        atexit.register(_shared.stop)
    return _shared
