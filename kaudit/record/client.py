"""Talk to the API server for ``kaudit record``: configuration, raw list and watch requests.

The official Kubernetes client (an optional dependency, imported lazily) provides the
configuration (kubeconfig or in-cluster) and the authenticated HTTP transport; responses are
read raw with orjson, never through the typed models, so every field is kept. Each recording
thread uses its own :class:`Channel`, which another thread can :meth:`~Channel.abort` to end a
blocked read at once.
"""

from __future__ import annotations

import contextlib
import http.client
import os
import threading
from collections.abc import Generator, Iterator, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import orjson

from kaudit import __version__
from kaudit.errors import InputError

INSTALL_HINT = "kaudit record needs the Kubernetes client: pip install 'kaudit[record]'"
LIST_TIMEOUT = (10.0, 60.0)  # (connect, read) seconds
_READ_SIZE = 1 << 16
_BODY_SNIPPET = 2000


class ApiError(Exception):
    """The API server answered with an error status (an HTTP status or a watch ERROR event)."""

    def __init__(self, status: int, reason: str, message: str) -> None:
        self.status = status
        self.reason = reason
        self.message = message
        text = f"{status} {reason}".strip()
        super().__init__(f"{text}: {message}" if message else text)

    @classmethod
    def from_status(cls, status: dict[str, Any], http_status: int = 0) -> ApiError:
        """The error described by a ``Status`` object (as in watch ERROR events)."""
        code = status.get("code")
        return cls(code if isinstance(code, int) else http_status,
                   str(status.get("reason") or ""), str(status.get("message") or ""))


class TransportError(Exception):
    """The request failed before a complete answer: connection, timeout, malformed data."""


def import_kubernetes() -> ModuleType:
    """The ``kubernetes`` package; an :class:`InputError` with the install hint if missing."""
    try:
        import kubernetes.client
        import kubernetes.config
    except ImportError:
        raise InputError(INSTALL_HINT) from None
    return kubernetes


def _default_kubeconfig() -> str | None:
    """``KUBECONFIG`` (its existing files) or ``~/.kube/config`` when it exists."""
    env = os.environ.get("KUBECONFIG")
    if env:
        existing = [p for p in env.split(os.pathsep) if p and Path(p).expanduser().is_file()]
        if existing:
            return os.pathsep.join(existing)
    home = Path(os.path.expanduser("~/.kube/config"))
    return str(home) if home.is_file() else None


def load_configuration(kubeconfig: Path | None = None, context: str | None = None) -> Any:
    """A ``kubernetes.client.Configuration``: from ``kubeconfig``, else ``KUBECONFIG`` or
    ``~/.kube/config``, else the in-cluster service account."""
    kubernetes = import_kubernetes()
    config = kubernetes.client.Configuration()
    if kubeconfig is not None:
        if not kubeconfig.is_file():
            raise InputError(f"kubeconfig {kubeconfig}: "
                             f"{'not a file' if kubeconfig.exists() else 'no such file'}")
        source: str | None = str(kubeconfig)
    else:
        source = _default_kubeconfig()
    if source is not None:
        try:
            kubernetes.config.load_kube_config(config_file=source, context=context,
                                               client_configuration=config,
                                               persist_config=False)
        except Exception as exc:  # ConfigException, YAML errors, exec plugin failures
            raise InputError(f"kubeconfig {source}: {_one_line(exc)}") from None
        return config
    if os.environ.get("KUBERNETES_SERVICE_HOST"):
        if context is not None:
            raise InputError("--context needs a kubeconfig, and none was found")
        try:
            kubernetes.config.load_incluster_config(client_configuration=config)
        except Exception as exc:
            raise InputError(f"in-cluster configuration: {_one_line(exc)}") from None
        return config
    raise InputError("no Kubernetes configuration found: give --kubeconfig FILE, set "
                     "KUBECONFIG, create ~/.kube/config, or run inside a cluster")


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]


class KubeClient:
    """One authenticated connection pool to the API server, shared by the channels."""

    def __init__(self, configuration: Any, connections: int = 16) -> None:
        kubernetes = import_kubernetes()
        configuration.connection_pool_maxsize = max(configuration.connection_pool_maxsize or 0,
                                                    connections)
        configuration.keep_alive = True  # as client-go dials: a dead watch is noticed
        self.host: str = configuration.host
        self._api = kubernetes.client.ApiClient(configuration)
        self._api.user_agent = f"kaudit/{__version__} (record)"

    def channel(self) -> Channel:
        return Channel(self)

    def close(self) -> None:
        self._api.close()

    def open(self, path: str, params: Sequence[tuple[str, str]],
             timeout: tuple[float, float]) -> Any:
        """Send ``GET path?params``; the raw urllib3 response, or :class:`ApiError`."""
        import urllib3
        from kubernetes.client.exceptions import ApiException

        method, url, headers, body, post_params = self._api.param_serialize(
            "GET", path, query_params=list(params), header_params={"Accept": "application/json"},
            auth_settings=["BearerToken"])
        try:
            # This client version always streams (preload_content=False): the status is
            # checked here, not by the client.
            answer = self._api.call_api(method, url, header_params=headers, body=body,
                                        post_params=post_params, _request_timeout=timeout)
        except (urllib3.exceptions.HTTPError, OSError, http.client.HTTPException) as exc:
            raise TransportError(_one_line(exc)) from None
        except ApiException as exc:  # TLS failures come wrapped with status 0
            raise TransportError(" ".join(str(exc.reason or exc).split()) or "TLS error") from None
        response = answer.response
        if not 200 <= response.status <= 299:
            raise _error_from_response(response)
        return response


def _error_from_response(response: Any) -> ApiError:
    try:
        body = response.read(_BODY_SNIPPET)
    except Exception:
        body = b""
    finally:
        response.close()
        response.release_conn()
    reason = response.reason or http.client.responses.get(response.status, "")
    try:
        status = orjson.loads(body)
    except orjson.JSONDecodeError:
        status = None
    if isinstance(status, dict) and status.get("kind") == "Status":
        error = ApiError.from_status(status, response.status)
        error.status = response.status
        return error
    return ApiError(response.status, reason, body.decode("utf-8", "replace").strip()[:200])


class Channel:
    """Sequential requests of one thread; :meth:`abort` ends the current one from any thread."""

    def __init__(self, client: KubeClient) -> None:
        self._client = client
        self._lock = threading.Lock()
        self._response: Any = None
        self._aborted = False

    def _begin(self, path: str, params: Sequence[tuple[str, str]],
               timeout: tuple[float, float]) -> Any:
        if self._aborted:
            raise TransportError("aborted")
        response = self._client.open(path, params, timeout)
        with self._lock:
            self._response = response
            aborted = self._aborted
        if aborted:
            self._end(response, clean=False)
            raise TransportError("aborted")
        return response

    def _end(self, response: Any, clean: bool) -> None:
        with self._lock:
            self._response = None
        if not clean:
            response.close()
        response.release_conn()

    def get_json(self, path: str, params: Sequence[tuple[str, str]]) -> dict[str, Any]:
        """``GET`` a JSON object (a list page)."""
        response = self._begin(path, params, LIST_TIMEOUT)
        clean = False
        try:
            body = response.read()
            clean = True
        except Exception as exc:
            raise TransportError(_one_line(exc)) from None
        finally:
            self._end(response, clean)
        try:
            document = orjson.loads(body)
        except orjson.JSONDecodeError as exc:
            raise TransportError(f"malformed answer from {path}: {exc}") from None
        if not isinstance(document, dict):
            raise TransportError(f"malformed answer from {path}: not a JSON object")
        return document

    def stream_lines(self, path: str, params: Sequence[tuple[str, str]],
                     read_timeout: float) -> Generator[bytes, None, None]:
        """``GET`` a watch stream and yield its lines (chunks reassembled) until it ends.

        The request is sent at the first ``next()``; an error answer raises :class:`ApiError`.
        """
        response = self._begin(path, params, (LIST_TIMEOUT[0], read_timeout))
        clean = False
        try:
            yield from _split_lines(_chunks(response))
            clean = True
        except Exception as exc:
            raise TransportError(_one_line(exc) if not self._aborted else "aborted") from None
        finally:
            self._end(response, clean)

    def abort(self) -> None:
        """End the current request and refuse further ones (callable from any thread)."""
        with self._lock:
            self._aborted = True
            response = self._response
        if response is not None:
            try:
                response.shutdown()  # wakes a read blocked in another thread
            except Exception:
                with contextlib.suppress(Exception):
                    response.close()


def _chunks(response: Any) -> Iterator[bytes]:
    """The body as it arrives: one piece per HTTP chunk, or whatever a read returns."""
    if response.chunked and response.supports_chunked_reads():
        yield from response.read_chunked(None, decode_content=True)
        return
    while True:
        data = response.read1(_READ_SIZE)
        if not data:
            return
        yield data


def _split_lines(chunks: Iterator[bytes]) -> Iterator[bytes]:
    """Complete non-blank lines from pieces that may end anywhere (a line over pieces)."""
    pending: list[bytes] = []
    for chunk in chunks:
        start = 0
        while True:
            end = chunk.find(b"\n", start)
            if end < 0:
                if start < len(chunk):
                    pending.append(chunk[start:])
                break
            if pending:
                pending.append(chunk[start:end])
                line = b"".join(pending)
                pending.clear()
            else:
                line = chunk[start:end]
            start = end + 1
            if line.strip():
                yield line
    line = b"".join(pending)
    if line.strip():
        yield line
