"""`robotsgate verify` on a large audit log: records per second and peak memory.

Writes a chained, signed log with the proxy's own writer (AuditLog with a Chain and a key, a
checkpoint every 1,000 records, two proxies interleaved as a fleet sharing one file would), then
times `verify` on it in this process, and reports the cost of writing a chained, signed record
against a plain one, measured back to back in the same run.

    .venv/bin/python scripts/bench_verify.py [--records 1000000]
"""

import argparse
import resource
import tempfile
import time
from pathlib import Path

from robotsgate.audit.chain import Chain
from robotsgate.audit.log import AuditLog
from robotsgate.audit.records import AuditRecord
from robotsgate.audit.verify import verify
from robotsgate.outcomes import Reason
from robotsgate.signing import keys as signing_keys


def record(n: int) -> AuditRecord:
    return AuditRecord(ts="2026-11-27T12:00:00.000+00:00", event="block",
                       reason=Reason.DISALLOWED, status=403, agent="BenchBot",
                       user_agent="BenchBot/1.0 (+https://example.com/bot)",
                       client="10.0.0.7:51234", method="GET",
                       url=f"https://shop{n % 5000}.example/private/item-{n}?ref=list",
                       robots_url=f"https://shop{n % 5000}.example/robots.txt",
                       robots_status=200, robots_fetched_at="2026-11-27T11:00:00.000+00:00",
                       robots_sha256="ab" * 32, group="*", rule="Disallow: /private",
                       line=2, delay_ms=0, mode="enforce")


def write(path: Path, count: int, key: signing_keys.SigningKey | None, chained: bool) -> float:
    """Seconds per record written."""
    logs = [AuditLog(str(path), chain=Chain(f"bench-{n}") if chained else None, key=key,
                     checkpoint_every=1000) for n in range(2)]
    started = time.perf_counter()
    for n in range(count):
        logs[n % 2].write(record(n))
    elapsed = time.perf_counter() - started
    for log in logs:
        log.close()
    return elapsed / count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="robotsgate-verify-") as folder:
        key = signing_keys.generate(str(Path(folder) / "key.pem"))
        sample = min(args.records, 100_000)
        plain = write(Path(folder) / "plain.jsonl", sample, None, chained=False)
        chained = write(Path(folder) / "chained.jsonl", sample, key, chained=True)
        print(f"writing a record: plain {plain * 1e6:.1f} µs, chained and signed "
              f"{chained * 1e6:.1f} µs ({chained / plain:.2f}x; {sample:,} records each)")
        log = Path(folder) / "audit.jsonl"
        write(log, args.records, key, chained=True)
        size = log.stat().st_size
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        started = time.perf_counter()
        with log.open("rb") as stream:
            report = verify([(str(log), stream)], [key.public])
        elapsed = time.perf_counter() - started
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        assert report.ok and report.vouched == report.chained, report.problems[:3]
        print(f"verify, a log that holds: {report.lines:,} lines ({size / 2**20:.0f} MiB) in "
              f"{elapsed:.1f} s, {report.lines / elapsed:,.0f} lines/s; peak memory "
              f"{peak / 1024:.0f} MiB (+{max(0, peak - before) / 1024:.0f} MiB while verifying)")
        # One byte changed in the middle: the second pass, which keeps every line's place.
        with log.open("r+b") as stream:
            stream.seek(size // 2)
            stream.readline()
            at = stream.tell()
            line = stream.readline()
            stream.seek(at + line.index(b"item-") + 5)
            stream.write(b"X")
        started = time.perf_counter()
        with log.open("rb") as stream:
            report = verify([(str(log), stream)], [key.public])
        elapsed = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        assert [problem.what.split(":")[0] for problem in report.problems] == ["changed"]
        print(f"verify, one byte changed: named in {elapsed:.1f} s ({report.problems[0]}); "
              f"peak memory {after / 1024:.0f} MiB")


if __name__ == "__main__":
    main()
