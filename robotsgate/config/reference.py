"""The references, written from the code's own declarations: they cannot drift from it.

The documentation site (docs/, built by MkDocs with scripts/docs_hooks.py) puts these tables
where a page says `<!-- reference: NAME -->`: every option (robotsgate.config.options), every answer
the proxy gives itself and every reason (robotsgate.outcomes), every field of an audit record
(robotsgate.audit.log). `robotsgate options` prints the options' reference as text, from the same
rows (`option_rows`), and mitmproxy's `--options` shows the same help.
"""

import textwrap
from collections.abc import Callable, Iterable, Sequence
from dataclasses import fields

from robotsgate.audit.records import AuditRecord
from robotsgate.config.options import OPTIONS, OptionSpec
from robotsgate.outcomes import FORWARDED, OUTCOMES, Reason


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _table(head: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(_cell(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def _code(text: str) -> str:
    return f"`{text}`"


def _plain(text: str) -> str:
    return text


def _default(spec: OptionSpec, code: Callable[[str], str]) -> str:
    value = spec.default
    if isinstance(value, list):
        return ", ".join(code(item) for item in value) if value else "none"
    if isinstance(value, bool):
        return code(str(value).lower())
    return code(str(value)) if value != "" else "unset"


def _values(spec: OptionSpec, code: Callable[[str], str]) -> str:
    if spec.choices:
        return " (" + ", ".join(code(choice) for choice in spec.choices) + ")"
    if spec.bounds:
        return f" ({spec.bounds[0]:,} to {spec.bounds[1]:,})"
    return ""


def option_rows(code: Callable[[str], str] = _plain) -> list[tuple[str, str, str]]:
    """Every robots_* option, in declaration order: its name, its default and what it does,
    what it takes and what a change rebuilds; `code` marks names and values (Markdown's
    backticks for the site, nothing for a terminal)."""
    return [(code(spec.name), _default(spec, code), spec.help + _values(spec, code)
             + ("" if spec.rebuilds == "nothing" else f" A change rebuilds the {spec.rebuilds}."))
            for spec in OPTIONS]


def options() -> str:
    """Every robots_* option: name, default, what it does and what a change rebuilds."""
    return _table(("option", "default", "meaning"), option_rows(_code))


def options_text(names: Iterable[str] | None = None, width: int = 100) -> str:
    """The options' reference for a terminal: each option (or each of `names`) on a line with
    its default, its meaning wrapped and indented below it."""
    wanted = None if names is None else set(names)
    blocks = []
    for name, default, meaning in option_rows():
        if wanted is None or name in wanted:
            blocks.append(f"{name}  (default: {default})\n" + textwrap.fill(
                meaning, width, initial_indent="    ", subsequent_indent="    ",
                break_long_words=False, break_on_hyphens=False))
    return "\n\n".join(blocks) + "\n"


def answers() -> str:
    """Every answer the proxy gives itself: reason, status, when, the headers that say why."""
    def headers(reason: Reason) -> str:
        outcome = OUTCOMES[reason]
        names = [f"`X-Robotsgate-Reason: {reason}`", *(f"`{h}`" for h in outcome.headers)]
        if outcome.retry_after or reason in (Reason.VISIT_TIME,):
            names.append("`Retry-After`")
        if outcome.close:
            names.append("`Connection: close`")
        return ", ".join(names)

    return _table(("reason", "status", "when", "headers"), (
        (f"`{reason}`", str(outcome.status), outcome.when, headers(reason))
        for reason, outcome in OUTCOMES.items()))


def reasons() -> str:
    """Every reason an audit record (or a metric) can name, and what it means."""
    def meaning(reason: Reason) -> str:
        said = []
        if reason in OUTCOMES:
            said.append(f"{OUTCOMES[reason].status}: {OUTCOMES[reason].when}")
        if reason in FORWARDED:
            said.append(FORWARDED[reason])
        return "; or ".join(said)

    return _table(("reason", "meaning"), ((f"`{reason}`", meaning(reason)) for reason in Reason))


def audit_fields() -> str:
    """Every field of an audit record, in the order written."""
    return _table(("field", "meaning"), (
        (f"`{declared.name}`", declared.metadata["doc"]) for declared in fields(AuditRecord)))


REFERENCES: dict[str, Callable[[], str]] = {
    "options": options, "answers": answers, "reasons": reasons, "audit-fields": audit_fields}
