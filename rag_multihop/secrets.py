"""Credentials pasted into the wrong field: recognised, refused, never echoed.

A model name (``LLMSettings.model``, ``--llm``, an adapter's ``llm``) and the name of a key's
environment variable (``api_key_env``, a Haystack ``Secret.from_env_var`` name) are kept in
settings, serialised into pipeline files and shown in reprs, errors and logs. A key pasted
there by mistake would travel everywhere with them, so every such field goes through
:func:`check_model_name` or :func:`check_env_var_name`, which refuse a value that
:func:`looks_like_secret` with a :class:`SecretInFieldError` that names the field and the fix
but never the value (nor chains an exception that holds it).

What looks like a secret (each rule was checked against every model name in litellm's
price map, none of which it matches):

- a known provider key prefix followed by at least 16 more characters with a run of 10
  letters and digits in them: ``sk-`` (OpenAI,
  Anthropic's ``sk-ant-``, DeepSeek, ...), ``gsk_`` (Groq), ``xai-``, ``AIza`` (Google),
  ``hf_`` (Hugging Face), ``r8_`` (Replicate), ``pplx-``, ``nvapi-``, GitHub, Slack, AWS,
  Stripe, ...;
- a long token: a run of at least 24 letters and digits (no ``-``, ``_``, ``.``, ``:`` or
  ``/`` inside) that mixes upper case, lower case and digits, or one of at least 32 that
  mixes letters and digits, or any run of at least 40. Model names are words and numbers
  joined by separators (``claude-3-5-sonnet-20241022``, ``llama3.1:8b-instruct-q4_K_M``);
  keys are long random runs. A 40-digit hexadecimal run inside a path
  (``.../snapshots/<commit>``) is a git commit, not a key.

Example:
    >>> looks_like_secret("openai/gpt-4o-mini"), looks_like_secret("sk-proj-" + "a1B2" * 10)
    (False, True)
    >>> check_model_name("sk-ant-api03-" + "Xy9" * 30, "llm")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    rag_multihop.secrets.SecretInFieldError: llm looks like an API key, not a litellm model name...
"""

from __future__ import annotations

import re

__all__ = [
    "SecretInFieldError",
    "check_env_var_name",
    "check_model_name",
    "looks_like_secret",
]

KEY_PREFIXES = (
    "sk-",
    "sk_",
    "pk_",
    "rk_",
    "gsk_",
    "xai-",
    "AIza",
    "hf_",
    "r8_",
    "pplx-",
    "nvapi-",
    "csk-",
    "tgp_",
    "fw_",
    "jina_",
    "pcsk_",
    "lsv2_",
    "ghp_",
    "gho_",
    "ghu_",
    "ghs_",
    "ghr_",
    "github_pat_",
    "glpat-",
    "xoxb-",
    "xoxp-",
    "xoxa-",
    "AKIA",
    "ASIA",
)
"""Prefixes of provider keys and tokens (:func:`looks_like_secret` says what may follow)."""

_PREFIX_TAIL = 16
_PREFIX_RUN = 10
_PIECES = re.compile(r"[\s/\\=:,;\"'@?&]+")
_RUNS = re.compile(r"[A-Za-z0-9]+")
_PIECES_KEPT = re.compile(r"[^\s/\\=:,;\"'@?&{}()\[\]]+")
_COMMIT = re.compile(r"[0-9a-f]{40}")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


_EXAMPLES = {
    "sentence-transformers model": "'sentence-transformers/all-MiniLM-L6-v2'",
    "local model": "'local' or 'local/smollm2-135m'",
}


class SecretInFieldError(ValueError):
    """A credential was given where a model name or a variable name belongs.

    Its message names the field and what to do, never the value; it is raised outside any
    ``except`` block, so it chains no exception that could hold the value (``__cause__`` and
    ``__context__`` are ``None``)."""


def looks_like_secret(value: str) -> bool:
    """Whether ``value`` looks like an API key or token (module docstring for the rules).

    >>> [looks_like_secret(v) for v in ("local", "gpt-4o", "ollama/llama3", "hf_" + "x" * 34)]
    [False, False, False, True]
    """
    if not isinstance(value, str):
        return False
    pieces = [piece for piece in _PIECES.split(value.strip()) if piece]
    in_path = len(pieces) > 1
    for piece in pieces:
        if any(_keyed(piece, prefix) for prefix in KEY_PREFIXES):
            return True
        for run in _RUNS.findall(piece):
            if _long_random(run, in_path=in_path):
                return True
    return False


def redact_secrets(text: str) -> str:
    """``text`` with every piece that :func:`looks_like_secret` replaced by ``[redacted]``
    (a provider's error text may echo the request's headers or URL).

    >>> redact_secrets("401 from proxy: {'authorization': 'Bearer sk-proj-" + "a1B2" * 10 + "'}")
    "401 from proxy: {'authorization': 'Bearer [redacted]'}"
    """
    return _PIECES_KEPT.sub(
        lambda m: "[redacted]" if looks_like_secret(m.group()) else m.group(), text
    )


def _keyed(piece: str, prefix: str) -> bool:
    """Whether ``piece`` is ``prefix`` followed by a key: 16+ characters holding a run of 10+
    letters and digits (``pplx-embed-context-v1-4b`` is a model: its runs are words)."""
    if not piece.startswith(prefix) or len(piece) < len(prefix) + _PREFIX_TAIL:
        return False
    return any(len(run) >= _PREFIX_RUN for run in _RUNS.findall(piece[len(prefix) :]))


def _long_random(run: str, *, in_path: bool) -> bool:
    """Whether one run of letters and digits is long and mixed enough to be a key."""
    if len(run) < 24:
        return False
    if in_path and _COMMIT.fullmatch(run):
        return False  # a git commit in a path (a Hugging Face snapshot folder)
    digits = any(c.isdigit() for c in run)
    lower = any(c.islower() for c in run)
    upper = any(c.isupper() for c in run)
    if len(run) >= 40:
        return True
    if len(run) >= 32:
        return digits and (lower or upper)
    return digits and lower and upper


def _refuse(message: str) -> SecretInFieldError:
    error = SecretInFieldError(message)
    error.__suppress_context__ = True
    return error


def check_model_name(value: object, field: str, *, kind: str = "litellm model") -> str:
    """``value`` when it is a non-empty string that does not look like a key; else a
    ``ValueError`` naming ``field`` (for a key a :class:`SecretInFieldError` that never shows
    the value). ``kind`` says what belongs there (``"sentence-transformers model"``, ...).

    >>> check_model_name("openai/gpt-4o-mini", "llm")
    'openai/gpt-4o-mini'
    >>> check_model_name("", "llm")
    Traceback (most recent call last):
    ...
    ValueError: llm must be a non-empty litellm model string, got ''
    """
    if not isinstance(value, str) or not value.strip():
        shown = repr(value) if isinstance(value, str) else f"a {type(value).__name__}"
        raise ValueError(f"{field} must be a non-empty {kind} string, got {shown}")
    if looks_like_secret(value):
        raise _refuse(
            f"{field} looks like an API key, not a {kind} name; the value is not shown or kept. "
            f"Give the {kind} name here (e.g. {_EXAMPLES.get(kind, repr('openai/gpt-4o-mini'))}), "
            "put the key in an environment "
            "variable (export OPENAI_API_KEY=...) and name that variable where a key "
            "variable is asked for (api_key_env='OPENAI_API_KEY', or Haystack's "
            "Secret.from_env_var('OPENAI_API_KEY')); revoke the key if it was shared"
        )
    return value


def _secret_name(name: str) -> bool:
    """Stricter for variable names, which are short and usually upper case: any key prefix,
    or 24+ characters mixing lower case, upper case and digits, is a key."""
    mixed = (
        len(name) >= 24
        and any(c.islower() for c in name)
        and any(c.isupper() for c in name)
        and any(c.isdigit() for c in name)
    )
    return name.startswith(KEY_PREFIXES) or mixed or looks_like_secret(name)


def check_env_var_name(value: object, field: str) -> str | None:
    """``value`` when it is ``None`` or the NAME of an environment variable; a
    ``ValueError`` that never shows ``value`` when it is not one or looks like a secret
    itself (:func:`looks_like_secret`, any key prefix, or a long mixed-case name with digits).

    >>> check_env_var_name("OPENAI_API_KEY", "api_key_env")
    'OPENAI_API_KEY'
    >>> check_env_var_name("sk_live_51HxYz", "api_key_env")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    rag_multihop.secrets.SecretInFieldError: api_key_env must be the NAME of the environment ...
    """
    if value is None:
        return None
    if not isinstance(value, str) or not _ENV_NAME.match(value) or _secret_name(value):
        raise _refuse(
            f"{field} must be the NAME of the environment variable that holds the key (letters, "
            "digits, underscores, e.g. 'OPENAI_API_KEY'), not the key itself; the value given "
            "is not shown or kept. Export the key under that name (export "
            "OPENAI_API_KEY=...) and pass the name; revoke the key if it was shared"
        )
    return value
