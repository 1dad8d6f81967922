"""Origins on httpx's MockTransport: robots.txt (or any) answers from a table, counted."""

from collections.abc import Awaitable, Callable, Mapping

import httpx

from robotsgate.retrieval.fetch import Fetcher

Handler = Callable[[httpx.Request], Awaitable[httpx.Response] | httpx.Response]
Route = httpx.Response | Handler


def ok(body: bytes, **headers: str) -> httpx.Response:
    """200 with `body` (header names with '_' for '-': ok(b"", cache_control="no-cache"))."""
    return httpx.Response(200, content=body,
                          headers={name.replace("_", "-"): v for name, v in headers.items()})


class Origins:
    """Answers requests from a table, by full URL first and then by host, and keeps them.

    A route is a response (answered afresh each time) or a handler, plain or async; anything
    not in the table is answered 404.
    """

    def __init__(self, routes: Mapping[str, Route] | None = None, /, **more: Route) -> None:
        self.routes: dict[str, Route] = {**(routes or {}), **more}
        self.seen: list[httpx.Request] = []

    @property
    def urls(self) -> list[str]:
        return [str(request.url) for request in self.seen]

    @property
    def fetches(self) -> int:
        return len(self.seen)

    def transport(self) -> httpx.MockTransport:
        return httpx.MockTransport(self)

    def fetcher(self, timeout: float = 2.0) -> Fetcher:
        """The proxy's own robots.txt fetcher, talking to these origins."""
        return Fetcher(timeout=timeout, transport=self.transport())

    async def __call__(self, request: httpx.Request) -> httpx.Response:
        self.seen.append(request)
        route = self.routes.get(str(request.url)) or self.routes.get(request.url.host)
        if route is None:
            return httpx.Response(404)
        if isinstance(route, httpx.Response):
            return httpx.Response(route.status_code, headers=route.headers, content=route.content)
        answer = route(request)
        return await answer if isinstance(answer, Awaitable) else answer
