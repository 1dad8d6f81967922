"""The robots.txt evidence archive: every distinct body fetched, stored once, named by its sha256.

    <dir>/<sha256>        the body exactly as the rules were parsed from it (at most 500 KiB)
    <dir>/<sha256>.json   the fetch that first brought it: URL, status, headers, fetched_at

Audit records carry `robots_sha256`, so a block can be shown with the file that caused it. Files
are published with link(2) from a temporary name: a reader never sees half a file, and when
several fetches (or several proxies sharing the directory) bring the same body at once, exactly
one of them creates it. The sidecar is published before the body, so a body always has one.
"""

import asyncio
import json
import os
import secrets
from pathlib import Path
from typing import Any

from robotsgate.audit.records import timestamp
from robotsgate.retrieval.fetch import FetchResult


class RobotsArchive:
    """A directory of robots.txt bodies; the directory is created when missing."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        if not os.access(self.directory, os.W_OK | os.X_OK):
            raise PermissionError(13, "not writable", str(self.directory))

    def path(self, sha256: str) -> Path:
        return self.directory / sha256

    def sidecar(self, sha256: str) -> Path:
        return self.directory / f"{sha256}.json"

    async def keep(self, sha256: str, result: FetchResult, fetched_at: float) -> bool:
        """Store the body unless it is already there; True when this call stored it."""
        if self.path(sha256).exists():  # the common case, after the first fetch: no thread hop
            return False
        return await asyncio.to_thread(self.store, sha256, result, fetched_at)

    def store(self, sha256: str, result: FetchResult, fetched_at: float) -> bool:
        if self.path(sha256).exists():
            return False
        meta: dict[str, Any] = {
            "sha256": sha256, "url": result.robots_url, "final_url": result.final_url,
            "status": result.status, "headers": [list(pair) for pair in result.headers],
            "fetched_at": timestamp(fetched_at), "size": len(result.body)}
        self._publish(self.sidecar(sha256),
                      (json.dumps(meta, ensure_ascii=False, indent=1) + "\n").encode("utf-8"))
        return self._publish(self.path(sha256), result.body)

    def _publish(self, target: Path, data: bytes) -> bool:
        """Write `data` to `target` if it does not exist yet; True when this call created it."""
        temporary = target.with_name(f".{target.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(data)
                out.flush()
                os.fsync(out.fileno())  # evidence: on disk before it has a name
            os.link(temporary, target)
            return True
        except FileExistsError:
            return False  # another fetch stored the same content first
        finally:
            temporary.unlink(missing_ok=True)
