"""The flow.metadata keys through which robotsgate's addons cooperate on one flow."""

from typing import Final

IDENTITY: Final = "robotsgate.identity"  # who the request was decided for (identity.Identity)
DECIDED: Final = "robotsgate.decided"  # the request was decided (normally at its headers)
ANSWERED: Final = "robotsgate.answered"  # the response is robotsgate's own answer
HOST: Final = "robotsgate.host"  # the origin's host, as the pacer knows it
USER_AGENT: Final = "robotsgate.user_agent"  # the request's User-Agent
DELAY_MS: Final = "robotsgate.delay_ms"  # the politeness wait applied before forwarding
PURPOSES: Final = "robotsgate.purposes"  # what the bot crawls for (robotsgate.purposes)
VERDICT: Final = "robotsgate.verdict"  # the gate's verdict on a request that was forwarded
USAGE_STATED: Final = "robotsgate.usage_stated"  # what the answer's headers state of its use
USAGE_JUDGED: Final = "robotsgate.usage_judged"  # the refusal found on the headers, or None
USAGE_RECORDED: Final = "robotsgate.usage_recorded"  # its usage refusal is in the audit log
TDM_RESERVED: Final = "robotsgate.tdm_reserved"  # the page's META reserves TDM rights
PACED: Final = "robotsgate.paced"  # the interval it keeps, until it takes its turn
LIVE: Final = "robotsgate.live"  # the configuration the flow is decided with (runtime.Live)
