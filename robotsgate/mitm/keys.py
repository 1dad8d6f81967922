"""The flow.metadata keys through which robotsgate's addons cooperate on one flow.

Plain values (flags, numbers, names) are kept in flow.metadata itself. robotsgate's objects (the
flow's configuration, verdict, identity, usage) are kept in `private(flow)`: mitmproxy copies a
flow's metadata deeply (Flow.get_state, flow.copy) and writes it as plain values when it saves
flows (`-w`, save_stream_file), which these objects are not.
"""

from typing import Any, Final

from mitmproxy import flow as flows


class Private(dict[str, Any]):
    """robotsgate's objects on one flow: kept with the flow while it lives, shared by its
    copies (never copied: they hold live services), and never written with it (mitmproxy's
    writer sees an empty dictionary)."""

    __slots__ = ()

    def __deepcopy__(self, memo: dict[int, Any]) -> "Private":
        return self

    def items(self) -> Any:  # what mitmproxy's writer reads of a dictionary
        return {}.items()


PRIVATE: Final = "robotsgate"


def private(flow: flows.Flow) -> Private:
    """The flow's Private, made on first use. Asked for a dozen times per request: one line
    once it holds something (an empty one, still falsy, is found again by setdefault)."""
    # Not cast(): that is a call, on every one of those dozen times.
    return flow.metadata.get(PRIVATE) or _made(flow)


def _made(flow: flows.Flow) -> Private:
    made: Private = flow.metadata.setdefault(PRIVATE, Private())
    return made


IDENTITY: Final = "robotsgate.identity"  # who the request was decided for (identity.Identity)
DECIDED: Final = "robotsgate.decided"  # the request was decided (normally at its headers)
ANSWERED: Final = "robotsgate.answered"  # the response is robotsgate's own answer
HOST: Final = "robotsgate.host"  # the origin's host, as the pacer knows it
USER_AGENT: Final = "robotsgate.user_agent"  # the request's User-Agent
DELAY_MS: Final = "robotsgate.delay_ms"  # the politeness wait applied before forwarding
PURPOSES: Final = "robotsgate.purposes"  # what the bot crawls for (robotsgate.decision.purposes)
VERDICT: Final = "robotsgate.verdict"  # the gate's verdict on a request that was forwarded
USAGE_STATED: Final = "robotsgate.usage_stated"  # what the answer's headers state of its use
USAGE_JUDGED: Final = "robotsgate.usage_judged"  # the refusal found on the headers, or None
USAGE_RECORDED: Final = "robotsgate.usage_recorded"  # its usage refusal is in the audit log
TDM_META: Final = "robotsgate.tdm_meta"  # the page's META tdm-reservation: "1" or "0"
TDM_POLICY: Final = "robotsgate.tdm_policy"  # the page's META tdm-policy (TDMRep), a URL
NO_AI: Final = "robotsgate.no_ai"  # noai, noimageai of the page's META (a tuple of names)
LICENSE_LINKS: Final = "robotsgate.license_links"  # the page's RSL <link>s, resolved URLs
LICENSE_INLINE: Final = "robotsgate.license_inline"  # the page's RSL <script>s, their XML
LICENSE_JUDGED: Final = "robotsgate.license_judged"  # the Link header's licence refusal
LICENSE_RECORDED: Final = "robotsgate.license_recorded"  # that refusal is in the audit log
REFUSED: Final = "robotsgate.refused"  # monitor mode: forwarded, though its verdict refused it
SIGNED: Final = "robotsgate.signed"  # whether Web Bot Auth signing was decided for it
PACED: Final = "robotsgate.paced"  # (start, interval) of its slot, until it takes its turn
LIVE: Final = "robotsgate.live"  # the configuration the flow is decided with (runtime.Live)
