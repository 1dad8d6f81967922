"""mitmproxy glue for robotsgate."""

import logging

logger = logging.getLogger(__name__)


class RobotsGate:
    def running(self) -> None:
        logger.info("robotsgate loaded")
