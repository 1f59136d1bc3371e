"""The encoder for embedding a corpus in bulk: a faster form of MiniLM when it is the same model.

For more than :data:`BULK_PASSAGES` passages, :func:`bulk_encoder_name` picks
``minilm-bf16`` on a CPU that multiplies bfloat16 in hardware (Intel AMX:
:func:`cpu_has_amx_bf16`; 2.35× the passages per second of torch fp32 on the 2-core project
machine, 1.34× int8 ONNX), else ``minilm-int8`` (1.75× fp32 there; ``docs/benchmarks.md``,
``scripts/index_build_bench.py --embed 2000``), when its fingerprint
(:mod:`~rag_multihop.encoders.fingerprint`) matches the fp32 model's within
:data:`~rag_multihop.encoders.fingerprint.FINGERPRINT_TOLERANCE`; otherwise, or when
ONNX Runtime is missing, the fp32 default, with the reason logged.

Example:
    >>> bulk_encoder_name(100)
    ('minilm', '100 passages is not a bulk job (more than 2000): the fp32 default')
"""

from __future__ import annotations

import logging
from functools import cache

from rag_multihop.encoders.fingerprint import FINGERPRINT_TOLERANCE, EncoderFingerprint
from rag_multihop.encoders.registry import DEFAULT_ENCODER, make_encoder

logger = logging.getLogger(__name__)

BULK_PASSAGES = 2000
"""More passages than this are embedded with the bulk encoder when it passes the check."""


@cache
def cpu_has_amx_bf16() -> bool:
    """Whether this CPU multiplies bfloat16 matrices in hardware (Intel AMX: the ``amx_bf16``
    flag Linux lists in ``/proc/cpuinfo``; ``False`` where there is no such file)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as cpuinfo:
            return any(line.startswith("flags") and "amx_bf16" in line.split() for line in cpuinfo)
    except OSError:
        return False


def bulk_encoder() -> str:
    """The faster encoder this machine has: ``minilm-bf16`` with AMX, else ``minilm-int8``."""
    return "minilm-bf16" if cpu_has_amx_bf16() else "minilm-int8"


def bulk_encoder_name(n_passages: int | None, *, threshold: int = BULK_PASSAGES) -> tuple[str, str]:
    """The encoder name for embedding ``n_passages`` (``None``: unknown, a bulk job) and
    why it was chosen."""
    if n_passages is not None and n_passages <= threshold:
        return DEFAULT_ENCODER, (
            f"{n_passages} passages is not a bulk job (more than {threshold}): the fp32 default"
        )
    fast = bulk_encoder()
    try:
        similarity = EncoderFingerprint.of(make_encoder(DEFAULT_ENCODER)).similarity(
            make_encoder(fast)
        )
    except (ImportError, OSError, RuntimeError, ValueError) as exc:
        reason = f"the {fast} encoder is unavailable ({type(exc).__name__}: {exc}); using fp32"
        logger.warning(reason)
        return DEFAULT_ENCODER, reason
    if similarity < 1.0 - FINGERPRINT_TOLERANCE:
        reason = (
            f"the {fast} encoder's fingerprint differs from fp32 (lowest probe cosine "
            f"{similarity:.4f} < {1.0 - FINGERPRINT_TOLERANCE}); using fp32"
        )
        logger.warning(reason)
        return DEFAULT_ENCODER, reason
    reason = f"bulk job: {fast}, fingerprint matches fp32 (lowest probe cosine {similarity:.4f})"
    logger.info(reason)
    return fast, reason
