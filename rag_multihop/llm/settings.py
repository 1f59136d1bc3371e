"""How to reach a model and how patiently to call it: :class:`LLMSettings`, validated once.

Serialisable and free of secrets: the key is read from the environment at call time.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any, cast

from rag_multihop.llm.local import is_local_model, local_defaults, local_model_name
from rag_multihop.secrets import check_env_var_name, check_model_name
from rag_multihop.validation import check_int, check_number


@dataclass(frozen=True)
class LLMSettings:
    """How to reach a model and how patiently to call it. Serialisable; holds no secret.

    Args:
        model: litellm model string, e.g. ``"openai/gpt-4o-mini"``,
            ``"anthropic/claude-3-5-haiku-latest"``, ``"ollama/llama3.1"``, or
            ``"openai/<served-model-name>"`` together with ``api_base``. A value that looks
            like an API key is refused without being shown (:mod:`rag_multihop.secrets`).
        api_base: base URL of an OpenAI-compatible server (``http://localhost:8000/v1``).
        api_key_env: NAME of the environment variable holding the key (never the key).
            ``None``: the provider's own variable (``OPENAI_API_KEY``, ...); with
            ``api_base`` and no such variable set, a placeholder key is sent.
        timeout: seconds per attempt (litellm's default is 6000 s, so it is always set); a
            streamed attempt's whole reply included (the time spent waiting for its pieces).
            ``None``: 60 s, or for the local model a time sized to its output
            (:func:`~rag_multihop.llm.local.local_defaults`).
        max_retries: retries after the first attempt on 429, 5xx, timeouts, connection errors
            (``None``: 3; the local model 1, a retry of a timed-out local call only waits again).
        backoff_base: seconds before the first retry; doubles per retry, jittered to 50-100 %.
        backoff_max: cap on any wait, ``Retry-After`` included.
        temperature: sampling temperature, 0 for repeatable judging.
        max_tokens: cap on reply tokens (``None``: the provider's default; the local model
            :data:`~rag_multihop.llm.local.LOCAL_MAX_TOKENS`, so a looping reply stops).
        max_concurrency: requests in flight at once per client (sync and async counted
            apart; ``None``: 8, the local model as many as its server has slots).
        json_mode: ask for JSON in JSON calls (``response_format``); turn off for servers
            that reject any response format (parsing is defensive either way).
        json_schema: with ``json_mode``, send the reply's JSON schema so the provider decodes
            under it (``{"type": "json_schema", ...}``) instead of ``{"type": "json_object"}``.
            ``None`` (default): when the provider supports it (the local model does; others
            as litellm knows them); ``True``/``False``: always / never.
        input_cost_per_token, output_cost_per_token: US dollars, for models litellm cannot
            price (local servers: 0). Both or neither.

    >>> s = LLMSettings("openai/gpt-4o-mini", timeout=20)
    >>> LLMSettings.from_dict(s.to_dict()) == s
    True
    >>> local = LLMSettings("local")
    >>> local.max_tokens, local.max_concurrency, local.max_retries, local.timeout
    (160, 4, 1, 96.0)
    >>> LLMSettings("openai/gpt-4o-mini", timeout=0)
    Traceback (most recent call last):
    ...
    ValueError: timeout must be in (0, 3600], got 0
    """

    model: str
    api_base: str | None = None
    api_key_env: str | None = None
    timeout: float | None = None
    max_retries: int | None = None
    backoff_base: float = 1.0
    backoff_max: float = 30.0
    temperature: float = 0.0
    max_tokens: int | None = None
    max_concurrency: int | None = None
    json_mode: bool = True
    json_schema: bool | None = None
    input_cost_per_token: float | None = None
    output_cost_per_token: float | None = None

    def __post_init__(self) -> None:
        check_model_name(self.model, "model")  # never echoes a key pasted here
        if is_local_model(self.model):
            local_model_name(self.model)  # an unknown local name fails here, not at first use
            if self.api_base is not None:
                raise ValueError(
                    f"api_base must be None for the local model {self.model!r}: the library "
                    "starts its server and knows its address"
                )
        self._resolve_defaults()
        if self.api_base is not None and not (
            isinstance(self.api_base, str) and self.api_base.startswith(("http://", "https://"))
        ):
            raise ValueError(f"api_base must be an http(s) URL or None, got {self.api_base!r}")
        check_env_var_name(self.api_key_env, "api_key_env")  # never echoes a pasted key
        check_number(self.timeout, "timeout", low=0, high=3600, low_open=True)
        check_int(self.max_retries, "max_retries", low=0, high=20)
        check_number(self.backoff_base, "backoff_base", low=0, high=600)
        check_number(self.backoff_max, "backoff_max", low=self.backoff_base, high=3600)
        check_number(self.temperature, "temperature", low=0, high=2)
        if self.max_tokens is not None:
            check_int(self.max_tokens, "max_tokens", low=1)
        check_int(self.max_concurrency, "max_concurrency", low=1, high=1024)
        if not isinstance(self.json_mode, bool):
            raise ValueError(f"json_mode must be True or False, got {self.json_mode!r}")
        if self.json_schema is not None and not isinstance(self.json_schema, bool):
            raise ValueError(f"json_schema must be True, False or None, got {self.json_schema!r}")
        prices = (self.input_cost_per_token, self.output_cost_per_token)
        if (prices[0] is None) != (prices[1] is None):
            raise ValueError(
                "input_cost_per_token and output_cost_per_token must be given together, "
                f"got {prices[0]!r} and {prices[1]!r}"
            )
        for name, price in zip(
            ("input_cost_per_token", "output_cost_per_token"), prices, strict=True
        ):
            if price is not None:
                check_number(price, name, low=0, high=1)

    def _resolve_defaults(self) -> None:
        """Fill the fields left ``None`` with the model's defaults (set once, so the
        settings stay frozen, round-trip and compare as the values they use)."""
        defaults: dict[str, Any] = {"timeout": 60.0, "max_retries": 3, "max_concurrency": 8}
        if is_local_model(self.model):
            local = local_defaults()
            if self.max_tokens is None:
                object.__setattr__(self, "max_tokens", local.max_tokens)
            tokens = self.max_tokens if isinstance(self.max_tokens, int) else local.max_tokens
            defaults = {
                "timeout": local.timeout_for(tokens),
                "max_retries": local.max_retries,
                "max_concurrency": local.max_concurrency,
            }
        for name, value in defaults.items():
            if getattr(self, name) is None:
                object.__setattr__(self, name, value)

    @property
    def call_timeout(self) -> float:
        """``timeout`` as resolved (always set after construction)."""
        return cast(float, self.timeout)

    @property
    def retries(self) -> int:
        """``max_retries`` as resolved (always set after construction)."""
        return cast(int, self.max_retries)

    @property
    def concurrency(self) -> int:
        """``max_concurrency`` as resolved (always set after construction)."""
        return cast(int, self.max_concurrency)

    def to_dict(self) -> dict[str, Any]:
        """Every field, JSON-ready. The key itself is never part of the settings."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> LLMSettings:
        """The inverse of :meth:`to_dict`; unknown keys raise ``ValueError`` naming them."""
        names = [f.name for f in fields(cls)]
        unknown = sorted(set(data) - set(names))
        if unknown:
            raise ValueError(f"unknown LLMSettings keys {unknown}; choose from {names}")
        return cls(**data)
