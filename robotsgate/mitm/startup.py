"""What the proxy checks and says as it starts: robotsgate's options declared to mitmproxy
(`declare`, `dump_options`), options given before they were declared (`apply_deferred`) or
never declared (`unknown_options`, with the option meant), the listening port, and the line that
says what is in force (`summary`). The runtime (robotsgate.mitm.runtime) calls them; they hold
no state of their own.
"""

import difflib
import os
from collections.abc import Sequence
from typing import Any, TextIO

from mitmproxy import ctx, exceptions, optmanager

from robotsgate.config.options import NAMES, OPTIONS, PREFIX, SPECS, Settings
from robotsgate.metrics.prometheus import MetricsServer
from robotsgate.mitm import compat
from robotsgate.mitm import master as lean
from robotsgate.state.redis_url import redacted


def declare(loader: Any) -> None:
    """Every robots_* option declared to mitmproxy (a Loader, or an OptManager)."""
    for spec in OPTIONS:
        loader.add_option(spec.name, Sequence[str] if spec.kind is Sequence else spec.kind,
                          spec.default, spec.help, choices=spec.choices)


def dump_options(out: TextIO) -> None:
    """`robotsgate serve --options`: robotsgate's options first, then mitmproxy's own, each as
    mitmdump --options writes them (a config.yaml with every option's help as a comment)."""
    ours = optmanager.OptManager()
    declare(ours)
    out.write("# robotsgate's options (robotsgate options says the same, for reading)\n")
    lean.dump_options(ours, out)
    out.write("\n# mitmproxy's own options\n")
    lean.dump_options(lean.mitmdump_options(), out)


def apply_deferred(options: Any) -> list[str]:
    """Apply `--set robots_...` values now, one by one; return what is wrong with them.

    mitmproxy defers `--set` for options that a script registers, then applies them all at once
    when the script loads; one value that does not parse makes the whole script fail to load,
    with a traceback, and mitmdump would run on as a plain proxy that forwards everything. A
    name it does not know (`robot_agent`, `robots-agent`) it keeps deferred for ever, silently.
    Here each of ours is applied and checked alone, and a name that looks like one of ours but
    is not is reported with the one it probably means.
    """
    deferred = compat.deferred(options)
    problems = []
    for name in sorted(deferred):
        if name not in NAMES:
            meant = _meant(name)
            if meant is not None:
                deferred.pop(name)
                problems.append(f"unknown option {name}; did you mean {meant}?")
            elif name.startswith(PREFIX):
                deferred.pop(name)
                problems.append(f"unknown option {name}; robotsgate's options are "
                                f"{', '.join(sorted(NAMES))}")
            continue
        value = deferred.pop(name)
        try:
            given = compat.given_strings(value)
            if given is not None:
                options.set(*(f"{name}={v}" for v in given))
            else:
                options.update(**{name: value})
            SPECS[name].check(getattr(options, name))
        except (exceptions.OptionsError, ValueError) as exc:
            message = str(exc)
            problems.append(message if name in message else f"{name}: {message}")
    return problems


def unknown_options(options: Any) -> list[str]:
    """The options set on the command line (or in config.yaml) that no addon registered."""
    known = sorted(options.keys())
    problems = []
    for name in sorted(compat.deferred(options)):
        close = difflib.get_close_matches(name, known, n=1, cutoff=0.8)
        problems.append(f"unknown option {name}" + (f"; did you mean {close[0]}?" if close
                                                    else " (no addon has it)"))
    return problems


def check_listen_port(opts: Any) -> None:
    """mitmproxy takes any integer for listen_port and listens on it modulo 65536 (99999:
    34463), or on a port of the system's choosing."""
    if "listen_port" in opts and opts.listen_port is not None and \
            not 0 <= opts.listen_port <= 65_535:
        raise ValueError(f"listen_port must be a port number from 0 to 65535; got "
                         f"{opts.listen_port}")


def only_script(options: Any) -> bool:
    """Whether robotsgate is the only script given (`-s`): no other one has options of its
    own still to declare."""
    return "scripts" in options and len(options.scripts) == 1


def scripted() -> bool:
    """Whether robotsgate runs as mitmdump's script (not as an addon driven by tests)."""
    return ctx.master.addons.get("scriptloader") is not None


def starting() -> bool:
    """Whether mitmdump is still starting: its script loader has not seen it run yet (a script
    reloaded into a running proxy, or an addon driven by tests, is not starting)."""
    return compat.scripts_starting(ctx.master.addons.get("scriptloader"))


def _meant(name: str) -> str | None:
    """The robots_* option a misspelled name most probably means, if it looks like one."""
    normal = name.lower().replace("-", "_")
    if not normal.startswith(PREFIX):
        if not normal.startswith("robot"):
            return None
        normal = PREFIX + normal.removeprefix("robots").removeprefix("robot").lstrip("_")
    if normal in NAMES:
        return normal
    close = difflib.get_close_matches(normal, NAMES, n=1, cutoff=0.8)
    return close[0] if close else None


def _count(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def summary(settings: Settings, *, metrics: MetricsServer | None, proxyauth: bool = False,
            chain: str | None = None, signer: str | None = None) -> str:
    """One line that says what is in force, so that a mistake shows at once."""
    if settings.agent:
        agent = f"as {settings.agent} (robots_agent)"
    elif proxyauth:
        agent = "as each bot's proxy-auth user name names it (else its User-Agent)"
    else:
        agent = "as each request's User-Agent names its bot"
    if settings.agents:
        agent += f", {_count(len(settings.agents), 'client mapping')} first (robots_agents)"
    if settings.purpose:
        agent += f", crawling for {settings.purpose}"
    if settings.purposes:
        agent += f", {_count(len(settings.purposes), 'purpose mapping')} (robots_purposes)"
    audit = "standard output" if settings.audit_log == "-" else \
        os.path.abspath(settings.audit_log)
    if chain:
        audit += f" (chained as proxy {chain}" + \
            (f", checkpoints signed by key {signer})" if signer else ", unsigned)")
    store = f"Redis {redacted(settings.redis)} (fallback {settings.redis_fallback})" \
        if settings.redis else "this process's memory"
    served = f"http://{metrics.host}:{metrics.port}/metrics" if metrics else "off"
    # Which addresses bots may reach, when it is not the default (this machine refused).
    egress = ""
    if settings.egress_allow:
        egress += f"; bots may reach {', '.join(settings.egress_allow)}"
    if settings.egress_deny:
        egress += f"; bots may not reach {', '.join(settings.egress_deny)} either"
    archive = f"; robots.txt files kept in {os.path.abspath(settings.archive_dir)}" \
        if settings.archive_dir else ""
    return (f"robotsgate: obeying robots.txt {agent}; mode {settings.mode}, semantics "
            f"{settings.semantics}; audit log {audit}{archive}; state in {store}; metrics "
            f"{served}{egress}")
