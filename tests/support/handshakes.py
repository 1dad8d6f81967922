"""How many new connections a listening socket queues while its process accepts none."""

import select
import socket


def handshakes_completed(port: int, count: int) -> int:
    """Open `count` connections to 127.0.0.1:`port` without accepting them (the caller makes
    sure nothing does: its event loop blocked, or the process stopped); how many the kernel
    completed, waiting until all have or until the count stops growing (the kernel drops the
    handshakes past the listen backlog, and their retries come a second later at the
    earliest)."""
    sockets = []
    try:
        for _ in range(count):
            s = socket.socket()
            s.setblocking(False)
            s.connect_ex(("127.0.0.1", port))
            sockets.append(s)
        done: set[socket.socket] = set()
        while len(done) < count:
            _, writable, _ = select.select([], [s for s in sockets if s not in done], [], 0.5)
            if not writable:
                break  # nothing more within half a second: the rest are waiting to retry
            done.update(s for s in writable
                        if s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0)
        return len(done)
    finally:
        for s in sockets:
            s.close()
