"""Audit log rotation: reopen after a rename (logrotate + SIGHUP), and rotation by size."""

import json
import multiprocessing
import os
import time
from pathlib import Path

import pytest
from mitmproxy import exceptions
from support.driver import driven

from robotsgate.audit.log import AuditLog
from robotsgate.audit.records import AuditRecord


def record(n: int) -> AuditRecord:
    return AuditRecord(ts=f"2026-01-01T00:00:{n % 60:02d}.000+00:00", event="block",
                       reason="disallowed", status=403, agent="Bot", user_agent="Bot/1.0",
                       client="127.0.0.1:1", method="GET", url=f"http://a.example/{n}",
                       robots_url="http://a.example/robots.txt", robots_status=200,
                       robots_fetched_at=None, robots_sha256=None, group="*",
                       rule="Disallow: /", line=2, delay_ms=0, mode="enforce")


def urls(path: Path) -> list[str]:
    return [json.loads(line)["url"] for line in path.read_text().splitlines()]


def test_reopen_writes_a_new_file_after_a_rename(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    log = AuditLog(str(path))
    log.write(record(1))
    path.rename(tmp_path / "audit.jsonl.1")
    log.write(record(2))  # still the old file: it was not reopened yet
    log.reopen()
    log.write(record(3))
    log.close()
    assert urls(tmp_path / "audit.jsonl.1") == ["http://a.example/1", "http://a.example/2"]
    assert urls(path) == ["http://a.example/3"]


def test_a_failed_reopen_keeps_the_old_file(tmp_path: Path) -> None:
    directory = tmp_path / "logs"
    directory.mkdir()
    log = AuditLog(str(directory / "audit.jsonl"))
    (directory / "audit.jsonl").rename(tmp_path / "moved.jsonl")
    directory.rmdir()
    with pytest.raises(OSError):
        log.reopen()
    log.write(record(1))
    log.close()
    assert urls(tmp_path / "moved.jsonl") == ["http://a.example/1"]


def test_size_rotation_keeps_n_files_and_never_splits_a_record(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    size = len(record(0).to_json()) + 1
    log = AuditLog(str(path), max_bytes=size * 3, keep=2)
    for n in range(10):  # 10 records, 3 per file: 4 files' worth, 3 kept
        log.write(record(n))
    log.close()
    assert urls(path) == ["http://a.example/9"]
    assert urls(tmp_path / "audit.jsonl.1") == [f"http://a.example/{n}" for n in (6, 7, 8)]
    assert urls(tmp_path / "audit.jsonl.2") == [f"http://a.example/{n}" for n in (3, 4, 5)]
    assert not (tmp_path / "audit.jsonl.3").exists()
    for name in ("audit.jsonl", "audit.jsonl.1", "audit.jsonl.2"):
        assert (tmp_path / name).stat().st_size <= size * 3


def test_size_rotation_notices_a_file_rotated_by_someone_else(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    size = len(record(0).to_json()) + 1
    first = AuditLog(str(path), max_bytes=size * 2, keep=3)
    second = AuditLog(str(path), max_bytes=size * 2, keep=3)  # another proxy, same file
    first.write(record(1))
    second.write(record(2))
    first.write(record(3))  # full: first rotates
    second.write(record(4))  # second's count says full too, but the file is the new one
    first.close()
    second.close()
    assert urls(tmp_path / "audit.jsonl.1") == ["http://a.example/1", "http://a.example/2"]
    assert urls(path) == ["http://a.example/3", "http://a.example/4"]
    assert not (tmp_path / "audit.jsonl.2").exists()


def test_a_record_larger_than_the_limit_gets_a_file_of_its_own(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    log = AuditLog(str(path), max_bytes=10, keep=5)
    for n in range(3):
        log.write(record(n))
    log.close()
    assert [urls(p) for p in (tmp_path / "audit.jsonl.2", tmp_path / "audit.jsonl.1", path)] \
        == [["http://a.example/0"], ["http://a.example/1"], ["http://a.example/2"]]


@pytest.mark.parametrize(("option", "value"), [
    ("robots_audit_max_bytes", -1), ("robots_audit_keep", 0), ("robots_audit_keep", 1001),
    ("robots_metrics_port", 70000),
])
def test_bad_rotation_options_are_refused_naming_the_option(option: str, value: int,
                                                           tmp_path: Path) -> None:
    with driven(robots_audit_log=str(tmp_path / "a.jsonl")) as addon, \
            pytest.raises(exceptions.OptionsError, match=option):
        addon.configure(**{option: value})


def test_the_addon_rotates_its_log_by_size(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    with driven(robots_audit_log=str(path), robots_audit_max_bytes=1, robots_audit_keep=1) as addon:
        assert addon.recorder is not None
        audit = addon.recorder.audit
        audit.write(record(1))
        audit.write(record(2))
        addon.reopen_audit()  # what SIGHUP does
        audit.write(record(3))
    assert urls(tmp_path / "a.jsonl.1") == ["http://a.example/2"]
    assert urls(path) == ["http://a.example/3"]
    assert not os.path.exists(tmp_path / "a.jsonl.2")


def _write_many(path: str, first: int, count: int, max_bytes: int) -> None:
    # Renaming the full file takes a while, as on a busy disk: the others find it full too, in
    # the meantime (this process is forked, the patch is its own).
    rename = os.replace

    def slow_rename(src: str, dst: str) -> None:
        if dst.endswith(".1"):
            time.sleep(0.002)
        rename(src, dst)

    os.replace = slow_rename  # type: ignore[assignment]
    log = AuditLog(path, max_bytes=max_bytes, keep=200)
    for n in range(first, first + count):
        log.write(record(n))
    log.close()


def test_processes_sharing_one_log_rotate_it_without_losing_a_record(tmp_path: Path) -> None:
    """Four proxies writing one file, each rotating it by size: every record is kept, in as
    many files as the records fill (160 here, 200 kept); two proxies rotating the same full
    file at once would make more files, and the oldest would be dropped."""
    path = tmp_path / "audit.jsonl"
    size = len(record(0).to_json()) + 1
    context = multiprocessing.get_context("fork")
    writers = [context.Process(target=_write_many, args=(str(path), first, 1500, size * 40))
               for first in (0, 10_000, 20_000, 30_000)]
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join(timeout=60)
        assert writer.exitcode == 0
    found = [url for file in tmp_path.glob("audit.jsonl*") if not file.name.endswith(".lock")
             for url in urls(file)]
    assert sorted(found) == sorted(f"http://a.example/{first + n}" for n in range(1500)
                                   for first in (0, 10_000, 20_000, 30_000))
