"""robotsgate's share of the running proxy's CPU, sampled: where `mitmdump -s addon.py` spends
its time under load, and how much of it is robotsgate's own code.

scripts/bench_proxy.py times the proxy and scripts/bench_instructions.py counts its
instructions; neither says where the time goes in the running process, where robotsgate's code,
run once per request between long stretches of mitmproxy's, finds the caches cold and costs
more per instruction than a count suggests. This samples the process instead: behind it the
nginx origin of bench_proxy.py with its robots.txt cached, wrk sends the allowed page at
concurrency `--concurrency` (keep-alive) for `--seconds`, and py-spy reads the proxy's Python
stack `--rate` times a second (idle samples left out). A sample counts for robotsgate when any
frame of its stack is robotsgate's code: its share of the samples is its share of the proxy's
CPU, collections its allocations set off included. It bounds what bench_proxy.py can read:
the gate serves at most (1 - share) of plain mitmdump's requests/s, less the few per cent
mitmproxy spends finding a script's hooks. Per part (the hook that ran) and per function (the
innermost robotsgate frame: its own lines and the library calls it makes) say where to cut.
Sampling is statistical: with 8,000 samples a share of 6% reads to within about 0.5%.

With `--against REV`, robotsgate at that git revision is sampled the same way, in alternate
rounds, and both are printed.

    .venv/bin/python scripts/bench_share.py [--seconds 20] [--rounds 1] [--rate 400]
        [--concurrency 10] [--against REV]

Needs nginx, wrk (as bench_proxy.py) and py-spy (`.venv/bin/pip install py-spy`), and the
right to read another process's memory (root, or kernel.yama.ptrace_scope=0).
"""

import argparse
import os
import shutil
import subprocess
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from bench_proxy import (
    LOAD_CPUS,
    REPO,
    cache_robots,
    start_mitmdump,
    start_nginx,
    stop,
    worktree,
    wrk,
)

# The frames of robotsgate's own code, in whichever checkout: py-spy names a file by its path.
OURS = "robotsgate/"
# Frames that only pass a hook on to the parts (robotsgate.mitm._in_order).
DISPATCH = ("_in_order.<locals>.hook", "_in_order.<locals>.hook_of_one", "_awaiting")


@dataclass
class Samples:
    total: int = 0
    ours: int = 0
    parts: Counter[str] = field(default_factory=Counter)
    functions: Counter[str] = field(default_factory=Counter)

    def add(self, raw: str) -> None:
        """py-spy's raw output: a stack per line, outermost first, frames joined by ';', then
        its count."""
        for line in raw.splitlines():
            stack, _, count = line.rpartition(" ")
            if not stack:
                continue
            n = int(count)
            self.total += n
            frames = [frame for frame in stack.split(";") if OURS in frame]
            if not frames:
                continue
            self.ours += n
            named = [frame.split(" (")[0] for frame in frames]
            hooks = [name for name in named if name not in DISPATCH]
            self.parts[hooks[0] if hooks else "(passing hooks on)"] += n
            self.functions[named[-1]] += n

    def share(self, count: int) -> float:
        return count / self.total if self.total else 0.0


def sample(pid: int, port: int, url: str, args: argparse.Namespace, workdir: Path,
           into: Samples) -> float:
    """One wrk run sampled by py-spy; requests/s."""
    out = workdir / f"{pid}.txt"
    spy = subprocess.Popen([args.py_spy, "record", "--format", "raw", "--rate", str(args.rate),
                            "--output", str(out), "--pid", str(pid)],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    time.sleep(1.5)  # py-spy attaches
    if spy.poll() is not None:
        raise SystemExit(f"py-spy could not sample the proxy:\n{spy.communicate()[1][-1000:]}")
    run = wrk(port, pid, url, args.concurrency, False, args.seconds, workdir)
    spy.send_signal(2)  # py-spy writes what it has on SIGINT
    _, err = spy.communicate(timeout=60)
    if not out.exists():
        raise SystemExit(f"py-spy wrote no samples:\n{err[-1000:]}")
    into.add(out.read_text())
    out.unlink()
    return run.rps


def table(name: str, got: Samples, rps: list[float], top: int) -> None:
    print(f"\n{name}: {got.total} samples, {sum(rps) / len(rps):.0f} requests/s while sampled;"
          f" robotsgate's code in {got.share(got.ours):.1%} of them "
          f"(so at most {1 - got.share(got.ours):.3f} of plain mitmdump)")
    print("  by part (the hook that ran):")
    for part, count in got.parts.most_common(top):
        print(f"    {got.share(count):6.2%}  {part}")
    print("  by function (innermost robotsgate frame):")
    for function, count in got.functions.most_common(top):
        print(f"    {got.share(count):6.2%}  {function}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=int, default=20, help="length of each sampled run")
    parser.add_argument("--rounds", type=int, default=1,
                        help="sampled runs per revision (alternating with --against)")
    parser.add_argument("--rate", type=int, default=400, help="samples per second")
    parser.add_argument("--concurrency", type=int, default=10, help="wrk's connections")
    parser.add_argument("--top", type=int, default=12, help="rows per breakdown")
    parser.add_argument("--against", metavar="REV",
                        help="also sample robotsgate at this git revision, in alternate rounds")
    args = parser.parse_args()
    if min(args.seconds, args.rounds, args.rate, args.concurrency, args.top) < 1:
        parser.error("--seconds, --rounds, --rate, --concurrency and --top must be at least 1")
    args.py_spy = shutil.which("py-spy") or shutil.which("py-spy", path=str(REPO / ".venv/bin"))
    for tool in ("nginx", "wrk"):
        if shutil.which(tool) is None:
            raise SystemExit(f"{tool} is missing: apt-get install -y nginx wrk && "
                             "service nginx stop")
    if args.py_spy is None:
        raise SystemExit("py-spy is missing: .venv/bin/pip install py-spy")

    os.sched_setaffinity(0, LOAD_CPUS)  # as bench_proxy.py: nginx and wrk on their own CPU
    with tempfile.TemporaryDirectory(prefix="bench-share-") as tmp:
        workdir = Path(tmp)
        then = worktree(args.against, workdir / "then") if args.against else None
        checkouts = {"now": REPO} | ({f"then ({args.against})": then} if then else {})
        started: dict[str, tuple[subprocess.Popen[bytes], int]] = {}
        nginx = None
        try:
            nginx, origin_port, _ = start_nginx(workdir, False)
            url = f"http://127.0.0.1:{origin_port}/page.html"
            for name, checkout in checkouts.items():
                started[name] = start_mitmdump(workdir, name.split()[0], checkout)
                process, port = started[name]
                cache_robots(port, url)
                wrk(port, process.pid, url, args.concurrency, False, 2, workdir)  # warm-up
            got = {name: Samples() for name in checkouts}
            rps: dict[str, list[float]] = {name: [] for name in checkouts}
            for round_ in range(args.rounds):
                names = list(checkouts)
                turn = round_ % len(names)
                for name in names[turn:] + names[:turn]:
                    process, port = started[name]
                    rps[name].append(sample(process.pid, port, url, args, workdir, got[name]))
        finally:
            stop([process for process, _ in started.values()], nginx, then)
    print(f"the allowed page through mitmdump -s addon.py, keep-alive, c={args.concurrency}, "
          f"{args.rounds} x {args.seconds} s sampled by py-spy at {args.rate}/s (the proxy's "
          "requests/s is lower while it is sampled)")
    for name in checkouts:
        table(name, got[name], rps[name], args.top)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
