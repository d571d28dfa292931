"""GitHub's REST API for the GitHub remote (`changes.lifecycle.remotes.github`): the shared GitHub
client (`connectors.vendors.github.api.GitHubClient`, on httpx), its failures read as the
`RemoteError`s a change's remote raises."""
from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import IO, TYPE_CHECKING, Any

from connectors.errors import DriverError, RemoteError
from connectors.vendors.github.api import API_VERSION, MAX_PAGES, GitHubClient

if TYPE_CHECKING:
    import httpx  # imported at the first request: see connectors.http.client


class GitHubAPI:
    """GitHub's REST API as `GitHubRemote` calls it: the shared client, every failure a `RemoteError`
    (retryable when trying later may help, with GitHub's wait), GitHub's own message in its
    `data["message"]`."""

    api_url: str
    token: Callable[[], str | None]
    timeout: float
    max_archive_bytes: int
    client: GitHubClient

    def _list(self, path: str, query: Mapping[str, str] | None = None, *, key: str | None = None) -> list[Any]:
        """A list endpoint's items, 100 a page, following `Link: rel="next"` (at most MAX_PAGES pages)."""
        try:
            return self.client.items(path, query, key=key)
        except DriverError as err:
            raise remote_error(err) from None

    def _call(self, method: str, path: str, *, body: Any = None) -> Any:
        try:
            return self.client.call(method, path, json=body)
        except DriverError as err:
            raise remote_error(err) from None

    @contextmanager
    def _open(self, method: str, path: str) -> Iterator[httpx.Response]:
        """The answer, read as it arrives (a tarball)."""
        try:
            with self.client.stream(method, path) as response:
                yield response
        except RemoteError:
            raise
        except DriverError as err:
            raise remote_error(err) from None

    def _copy_capped(self, reply: httpx.Response, out: IO[bytes], what: str) -> None:
        import httpx

        total = 0
        try:
            for chunk in reply.iter_bytes(1 << 20):
                total += len(chunk)
                if total > self.max_archive_bytes:
                    raise RemoteError(f"the tarball of {what} is over {self.max_archive_bytes} bytes")
                out.write(chunk)
        except httpx.HTTPError as err:  # an answer that breaks off may go through on a later try
            raise RemoteError(f"GitHub's answer to {what} broke off: {err!r}", retryable=True) from None


def remote_error(err: DriverError) -> RemoteError:
    """The client's failure as a remote's: the same message, status, retryability and wait."""
    data = dict(err.data) if err.data else ({"status": err.status} if err.status is not None else {})
    return RemoteError(err.message, retryable=err.retryable, status=err.status, retry_after=err.retry_after,
                       data=data)


__all__ = ["API_VERSION", "MAX_PAGES", "GitHubAPI", "remote_error"]
