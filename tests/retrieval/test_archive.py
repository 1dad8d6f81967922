"""The robots.txt evidence archive: on its own, behind the gate, and through the addon."""

import asyncio
import hashlib
import json
from pathlib import Path

import httpx
import pytest
from mitmproxy import exceptions
from mitmproxy.test import tflow
from support.driver import driven
from support.gate import request_for, wire_gate
from support.origins import Origins, ok

from robotsgate.config.assemble import Clocks
from robotsgate.decision.gate import Gate
from robotsgate.decision.verdict import Request
from robotsgate.retrieval.archive import RobotsArchive
from robotsgate.retrieval.fetch import FetchResult

SHARED = b"User-agent: *\nDisallow: /private\n"
OTHER = b"User-agent: *\nDisallow: /other\n"
NOW = 1_700_000_000.0


def sha(body: bytes) -> str:
    return hashlib.sha256(body).hexdigest()


def names(directory: Path) -> set[str]:
    return {p.name for p in directory.iterdir()}


def result(body: bytes, url: str = "http://a.example/robots.txt") -> FetchResult:
    return FetchResult("ok", url, url, 200, body, (("content-type", "text/plain"),
                                                   ("etag", '"v1"')))


async def test_a_body_is_stored_once_with_its_sidecar(tmp_path: Path) -> None:
    archive = RobotsArchive(tmp_path / "archive")
    assert await archive.keep(sha(SHARED), result(SHARED), NOW) is True
    assert await archive.keep(sha(SHARED), result(SHARED, "http://b.example/robots.txt"),
                              NOW + 5) is False
    assert names(archive.directory) == {sha(SHARED), f"{sha(SHARED)}.json"}
    assert archive.path(sha(SHARED)).read_bytes() == SHARED
    meta = json.loads(archive.sidecar(sha(SHARED)).read_text())
    # The sidecar describes the fetch that first brought the body.
    assert meta["url"] == "http://a.example/robots.txt"
    assert meta["status"] == 200
    assert meta["fetched_at"] == "2023-11-14T22:13:20.000+00:00"
    assert ["etag", '"v1"'] in meta["headers"]
    assert meta["sha256"] == sha(SHARED) and meta["size"] == len(SHARED)


async def test_concurrent_stores_of_one_body_leave_one_copy(tmp_path: Path) -> None:
    archive = RobotsArchive(tmp_path)
    stored = await asyncio.gather(*(asyncio.to_thread(archive.store, sha(SHARED), result(SHARED),
                                                      NOW) for _ in range(20)))
    assert stored.count(True) == 1
    assert names(tmp_path) == {sha(SHARED), f"{sha(SHARED)}.json"}  # no temporary file left


def test_an_unwritable_directory_is_refused(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("not a directory")
    with pytest.raises(OSError):
        RobotsArchive(tmp_path / "file")


def gate_for(answers: dict[str, bytes | int], archive: RobotsArchive) -> Gate:
    origins = Origins({url: httpx.Response(found) if isinstance(found, int) else ok(found)
                       for url, found in answers.items()})
    return wire_gate(origins.fetcher(), lambda: NOW, archive=archive).gate


def request(url: str) -> Request:
    return request_for(url, "Bot/1.0")


async def test_the_gate_archives_each_distinct_body_it_fetches_once(tmp_path: Path) -> None:
    archive = RobotsArchive(tmp_path)
    gate = gate_for({"http://a.example/robots.txt": SHARED,
                     "http://b.example/robots.txt": SHARED,
                     "https://a.example/robots.txt": OTHER,
                     "http://down.example/robots.txt": 503}, archive)
    for url in ("http://a.example/private", "http://b.example/x", "https://a.example/x",
                "http://missing.example/x", "http://down.example/x", "http://a.example/y"):
        await gate.check(request(url))
    assert names(tmp_path) == {sha(SHARED), f"{sha(SHARED)}.json", sha(OTHER),
                               f"{sha(OTHER)}.json"}
    verdict = await gate.check(request("http://b.example/private"))
    # The verdict (and so the audit record) names the archived file that decided.
    assert verdict.entry is not None and verdict.entry.sha256 == sha(SHARED)
    assert archive.path(verdict.entry.sha256).read_bytes() == SHARED


async def test_a_body_that_cannot_be_archived_decides_nothing(tmp_path: Path) -> None:
    archive = RobotsArchive(tmp_path / "archive")
    gate = gate_for({"http://a.example/robots.txt": SHARED}, archive)
    archive.directory.rmdir()
    archive.directory.write_text("no longer a directory")
    with pytest.raises(OSError):
        await gate.check(request("http://a.example/public"))
    # Nothing was cached without its evidence: the next request tries again.
    archive.directory.unlink()
    archive.directory.mkdir()
    assert (await gate.check(request("http://a.example/public"))).action == "forward"
    assert archive.path(sha(SHARED)).read_bytes() == SHARED


# -- through the addon --------------------------------------------------------------------------

def test_robots_archive_dir_is_refused_when_unusable(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    with driven(robots_audit_log=str(tmp_path / "a.jsonl")) as addon, \
            pytest.raises(exceptions.OptionsError, match="robots_archive_dir"):
        addon.configure(robots_archive_dir=str(tmp_path / "file" / "archive"))


async def test_an_archive_failure_fails_closed_through_the_addon(tmp_path: Path) -> None:
    archive = tmp_path / "archive"

    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=SHARED)

    with driven(clocks=Clocks(clock=lambda: NOW), transport=httpx.MockTransport(answer),
                robots_audit_log=str(tmp_path / "a.jsonl"),
                robots_archive_dir=str(archive)) as addon:
        archive.rmdir()
        archive.write_text("no longer a directory")
        flow = tflow.tflow()
        flow.request.url = "http://a.example/public"
        await addon.request(flow)
        assert flow.response is not None and flow.response.status_code == 503
        assert flow.response.headers["X-Robotsgate-Reason"] == "internal-error"


async def test_audit_records_point_into_the_archive(tmp_path: Path) -> None:
    archive = tmp_path / "archive"
    audit = tmp_path / "a.jsonl"

    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=SHARED)

    with driven(clocks=Clocks(clock=lambda: NOW), transport=httpx.MockTransport(answer),
                robots_audit_log=str(audit), robots_archive_dir=str(archive)) as addon:
        flow = tflow.tflow()
        flow.request.url = "http://a.example/private/x"
        await addon.request(flow)
    record = json.loads(audit.read_text().splitlines()[0])
    assert (archive / record["robots_sha256"]).read_bytes() == SHARED
    meta = json.loads((archive / f"{record['robots_sha256']}.json").read_text())
    assert meta["url"] == record["robots_url"] == "http://a.example/robots.txt"
    assert meta["fetched_at"] == record["robots_fetched_at"]
