"""The transport of the embedded local model: requests for ``local[/name]`` go to its server.

:class:`LocalTransport` is a :class:`~rag_multihop.llm.transport.StreamingTransport` that, on
each attempt, makes sure the local server runs (:func:`~rag_multihop.llm.local.
ensure_local_server` starts it on first use, shared by the process), rewrites the request to
its OpenAI-compatible address and model name, sends the server's own API key, and hands the
attempt to an inner transport (litellm by default). The client knows nothing of local models
beyond choosing this transport (:func:`default_transport`); starting a server is the
transport's business, as opening connections is litellm's.

Example (nothing starts until the first attempt):
    >>> transport = default_transport("local")
    >>> type(transport).__name__, transport.missing_credentials("local", None)
    ('LocalTransport', [])
    >>> type(default_transport("openai/gpt-4o-mini")).__name__
    'LiteLLMTransport'
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator, Mapping
from typing import Any

from rag_multihop.llm.local import (
    REPEAT_PENALTY,
    ensure_local_server,
    is_local_model,
    local_model_name,
)
from rag_multihop.llm.transport import (
    LiteLLMTransport,
    RawReply,
    StreamDelta,
    StreamingTransport,
    Transport,
    aclose_stream,
)


class LocalTransport:
    """Routes ``local[/name]`` requests to the embedded server, through ``inner``.

    Args:
        inner: makes the attempts against the server (default :class:`LiteLLMTransport`).
    """

    def __init__(self, inner: StreamingTransport | None = None) -> None:
        self.inner: StreamingTransport = inner if inner is not None else LiteLLMTransport()

    def check_model(self, model: str) -> None:
        local_model_name(model)  # LLMConfigError listing the local models

    def missing_credentials(self, model: str, api_base: str | None) -> list[str]:
        return []  # the server's key is the transport's own

    def supports_response_schema(self, model: str) -> bool:
        return True  # llama.cpp's server turns the schema into a decoding grammar

    def route(self, request: Mapping[str, Any]) -> tuple[dict[str, Any], str]:
        """The request as the server takes it and the server's key (starting the server
        the first time). A free-text request also carries llama.cpp's ``repeat_penalty``
        (:data:`~rag_multihop.llm.local.REPEAT_PENALTY`, in litellm's ``extra_body``); a
        JSON request does not, its grammar already bounds it."""
        server = ensure_local_server(local_model_name(str(request["model"])))
        routed = {**request, "model": server.model, "api_base": server.base_url}
        if "response_format" not in request:
            routed["extra_body"] = {
                "repeat_penalty": REPEAT_PENALTY,
                **request.get("extra_body", {}),
            }
        return routed, server.api_key

    def complete(
        self, request: Mapping[str, Any], *, api_key: str | None, timeout: float
    ) -> RawReply:
        routed, key = self.route(request)
        return self.inner.complete(routed, api_key=key, timeout=timeout)

    async def acomplete(
        self, request: Mapping[str, Any], *, api_key: str | None, timeout: float
    ) -> RawReply:
        routed, key = await asyncio.to_thread(self.route, request)  # a start blocks
        return await self.inner.acomplete(routed, api_key=key, timeout=timeout)

    def stream(
        self, request: Mapping[str, Any], *, api_key: str | None, timeout: float
    ) -> Iterator[StreamDelta]:
        routed, key = self.route(request)
        yield from self.inner.stream(routed, api_key=key, timeout=timeout)

    async def astream(
        self, request: Mapping[str, Any], *, api_key: str | None, timeout: float
    ) -> AsyncIterator[StreamDelta]:
        routed, key = await asyncio.to_thread(self.route, request)
        deltas = self.inner.astream(routed, api_key=key, timeout=timeout)
        try:
            async for delta in deltas:
                yield delta
        finally:  # the reader stopped early: close the inner stream now, not when collected
            await aclose_stream(deltas)


def default_transport(model: str) -> Transport:
    """:class:`LocalTransport` for ``local[/name]``, else :class:`LiteLLMTransport`."""
    return LocalTransport() if is_local_model(model) else LiteLLMTransport()
