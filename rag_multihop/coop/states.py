"""Token hidden states of a sentence-transformers encoder, for RaLa's late interaction.

:class:`HiddenStateEncoder` runs the encoder's transformer with ``output_hidden_states`` and
keeps, per text, the token vectors of some layers and one pooled vector of others
(:class:`StateLayout`), L2-normalised. Layers are hidden-state indices: 0 is the embedding
output, :attr:`HiddenStateEncoder.n_layers` the last transformer layer (6 for MiniLM-L6).
Pooling follows the encoder's own pooling module (mean for MiniLM and MPNet, CLS for
CLS-pooled models), so the pooled last layer is the encoder's sentence embedding.

Passage tokens that are only punctuation are dropped (the paper does the same); query tokens
are all kept. Any sentence-transformers model whose first module is a Hugging Face
transformer works; a model without reachable hidden states raises
:class:`HiddenStatesUnavailable` naming what was found.

Example (needs the ``encoders`` extra; loads the bundled MiniLM):
    >>> from rag_multihop.encoders.sentence_transformer import default_encoder
    >>> encoder = HiddenStateEncoder(default_encoder())                     # doctest: +SKIP
    >>> layout = StateLayout(token_layers=(6,), pooled_layers=(6, 2))
    >>> [states] = encoder.encode(["Who directed Polish Wedding?"], layout)  # doctest: +SKIP
    >>> states.tokens.shape, states.pooled.shape                            # doctest: +SKIP
    ((1, 9, 384), (2, 384))
"""

from __future__ import annotations

import logging
import string
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from rag_multihop._optional import require
from rag_multihop.encoders.sentence_transformer import (
    SMALL_CALL,
    load_sentence_transformer,
    torch_threads,
)
from rag_multihop.validation import check_texts

logger = logging.getLogger(__name__)

POOLINGS = ("mean", "cls")
"""Pooled vectors RaLa can use: the mean of the tokens or the first ([CLS]) token."""

_SUBWORD_MARKS = ("##", "Ġ", "▁")


class HiddenStatesUnavailable(TypeError):
    """The encoder does not expose per-layer token states (RaLa needs them)."""


@dataclass(frozen=True)
class StateLayout:
    """Which layers a :class:`TokenStates` keeps.

    ``token_layers``: layers whose token vectors are kept (the first is the layer RaLa
    scores on); ``pooled_layers``: layers whose pooled vector is kept (for the gap weight).

    >>> StateLayout(token_layers=(), pooled_layers=(6,))
    Traceback (most recent call last):
    ...
    ValueError: token_layers must name at least one layer, got ()
    """

    token_layers: tuple[int, ...]
    pooled_layers: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        for name in ("token_layers", "pooled_layers"):
            layers = tuple(getattr(self, name))
            if any(isinstance(x, bool) or not isinstance(x, int | np.integer) for x in layers):
                raise ValueError(f"{name} must hold integer layer indices, got {layers!r}")
            if len(set(layers)) != len(layers):
                raise ValueError(f"{name} must not repeat a layer, got {layers!r}")
            object.__setattr__(self, name, tuple(int(x) for x in layers))
        if not self.token_layers:
            raise ValueError(f"token_layers must name at least one layer, got {self.token_layers}")

    def check(self, n_layers: int) -> None:
        """Raise ``ValueError`` when a layer is outside ``0 .. n_layers``."""
        for layer in (*self.token_layers, *self.pooled_layers):
            if not 0 <= layer <= n_layers:
                raise ValueError(
                    f"layer {layer} does not exist: the encoder has hidden states 0 (embeddings) "
                    f"to {n_layers} (last layer)"
                )


@dataclass(frozen=True)
class TokenStates:
    """One text's states: ``tokens`` ``(len(token_layers), T, D)`` and ``pooled``
    ``(len(pooled_layers), D)``, unit rows (float16 when stored, float32 when fresh), and
    ``ids``, the tokenizer ids of the whole text (int32, before punctuation is dropped: for a
    query they line up with ``tokens``; for a passage they are its vocabulary)."""

    tokens: np.ndarray
    pooled: np.ndarray
    ids: np.ndarray

    @property
    def n_tokens(self) -> int:
        return int(self.tokens.shape[1])

    @property
    def nbytes(self) -> int:
        return int(self.tokens.nbytes + self.pooled.nbytes + self.ids.nbytes)


def _unit(x: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(x, axis=-1, keepdims=True)
    return x / np.where(norms == 0, 1.0, norms)


def is_punctuation(token: str) -> bool:
    """A tokenizer token made only of punctuation (subword marks ignored).

    >>> is_punctuation(","), is_punctuation("##."), is_punctuation("it"), is_punctuation("[CLS]")
    (True, True, False, False)
    """
    for mark in _SUBWORD_MARKS:
        if token.startswith(mark):
            token = token[len(mark) :]
            break
    return bool(token) and all(ch in string.punctuation for ch in token)


class HiddenStateEncoder:
    """Per-layer token states of a sentence-transformers encoder; the model loads on first use.

    Args:
        model: a :class:`~rag_multihop.encoders.sentence_transformer.SentenceTransformerEncoder`,
            a loaded ``sentence_transformers.SentenceTransformer``, or a local model path.
        name: the id recorded with precomputed states (default: the encoder's name or path).
        max_length: tokens per text (default: the model's ``max_seq_length``).
        batch_size: texts per forward pass.
        device: torch device string, for a model given as a path.
    """

    def __init__(
        self,
        model: Any,
        *,
        name: str | None = None,
        max_length: int | None = None,
        batch_size: int = 32,
        device: str = "cpu",
    ) -> None:
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
        if max_length is not None and (
            isinstance(max_length, bool) or not isinstance(max_length, int) or max_length < 2
        ):
            raise ValueError(f"max_length must be an integer >= 2 or None, got {max_length!r}")
        self._source = model
        self._name = name or str(getattr(model, "name", None) or model)
        self.max_length = max_length
        self.batch_size = batch_size
        self.device = device
        self._parts: tuple[Any, Any, str, int] | None = None
        self._punctuation: frozenset[int] | None = None

    @property
    def name(self) -> str:
        return self._name

    def _load(self) -> tuple[Any, Any, str, int]:
        """(transformer, tokenizer, pooling, max_length), or :class:`HiddenStatesUnavailable`."""
        if self._parts is not None:
            return self._parts
        st = self._source
        if isinstance(st, str):
            st = load_sentence_transformer(st, self.device)
        elif hasattr(st, "model") and not hasattr(st, "__getitem__"):
            st = st.model  # our SentenceTransformerEncoder
        try:
            first = st[0]
        except (TypeError, IndexError, KeyError):
            raise HiddenStatesUnavailable(
                f"RaLa needs token hidden states, but {self._name!r} is a "
                f"{type(st).__name__}, not a sentence-transformers model; pass a "
                "SentenceTransformer, its path, or a SentenceTransformerEncoder"
            ) from None
        transformer = getattr(first, "auto_model", None)
        tokenizer = getattr(first, "tokenizer", None)
        config = getattr(transformer, "config", None)
        if transformer is None or tokenizer is None or not hasattr(config, "num_hidden_layers"):
            raise HiddenStatesUnavailable(
                f"RaLa needs token hidden states, but the first module of {self._name!r} "
                f"({type(first).__name__}) is not a Hugging Face transformer with "
                "hidden states (sentence-transformers' Transformer module)"
            )
        pooling = "mean"
        for module in list(st)[1:]:
            mode = getattr(module, "pooling_mode", None)
            if mode is not None:
                pooling = "cls" if mode == "cls" else "mean"
                break
        max_length = self.max_length or int(getattr(st, "max_seq_length", 0) or 512)
        self._parts = (transformer, tokenizer, pooling, max_length)
        return self._parts

    @property
    def n_layers(self) -> int:
        """The last hidden-state index (the number of transformer layers)."""
        return int(self._load()[0].config.num_hidden_layers)

    @property
    def dim(self) -> int:
        return int(self._load()[0].config.hidden_size)

    @property
    def pooling(self) -> str:
        """``"mean"`` or ``"cls"``: the encoder's own sentence pooling."""
        return self._load()[2]

    def _punctuation_ids(self, tokenizer: Any) -> frozenset[int]:
        if self._punctuation is None:
            vocab = tokenizer.get_vocab()
            self._punctuation = frozenset(i for tok, i in vocab.items() if is_punctuation(tok))
        return self._punctuation

    def encode(
        self,
        texts: Sequence[str],
        layout: StateLayout,
        *,
        drop_punctuation: bool = False,
        pooling: str | None = None,
        show_progress: bool = False,
    ) -> list[TokenStates]:
        """One :class:`TokenStates` per text, float32 unit rows.

        ``pooling`` (``"mean"`` or ``"cls"``; default the encoder's own) is computed over all
        tokens before punctuation is dropped, so the pooled last layer is the sentence
        embedding. A text whose tokens are all punctuation keeps them.
        """
        texts = list(texts)
        if any(not isinstance(t, str) for t in texts):
            raise ValueError("texts must be strings")
        transformer, tokenizer, own_pooling, max_length = self._load()
        pooling = pooling or own_pooling
        if pooling not in POOLINGS:
            raise ValueError(f"pooling must be one of {POOLINGS}, got {pooling!r}")
        layout.check(self.n_layers)
        torch = require("torch", extra="encoders")
        punctuation = self._punctuation_ids(tokenizer) if drop_punctuation else frozenset()
        order = np.argsort([len(t) for t in texts], kind="stable")  # similar lengths batch well
        out: list[TokenStates | None] = [None] * len(texts)
        batches = range(0, len(texts), self.batch_size)
        if show_progress:
            from tqdm.auto import tqdm

            batches = tqdm(batches, desc="token states", unit="batch")
        device = next(transformer.parameters()).device
        # a query or a few candidates: one thread (SMALL_CALL's reason, docs/benchmarks.md)
        threads = 1 if len(texts) <= SMALL_CALL else None
        with torch.inference_mode(), torch_threads(torch, threads):
            for start in batches:
                index = order[start : start + self.batch_size]
                batch = tokenizer(
                    [texts[i] for i in index],
                    truncation=True,
                    max_length=max_length,
                    padding=True,
                    return_tensors="pt",
                ).to(device)
                output = transformer(**batch, output_hidden_states=True, return_dict=True)
                hidden = getattr(output, "hidden_states", None)
                if hidden is None:
                    raise HiddenStatesUnavailable(
                        f"the transformer of {self._name!r} ({type(transformer).__name__}) "
                        "returned no hidden_states with output_hidden_states=True"
                    )
                stacked = torch.stack(list(hidden), dim=1).float().cpu().numpy()  # B, L+1, S, D
                mask = batch["attention_mask"].cpu().numpy().astype(bool)
                ids = batch["input_ids"].cpu().numpy()
                for row, i in enumerate(index):
                    out[i] = _states(
                        stacked[row], mask[row], ids[row], layout, pooling, punctuation
                    )
        return [s for s in out if s is not None]


def _states(
    hidden: np.ndarray,
    mask: np.ndarray,
    ids: np.ndarray,
    layout: StateLayout,
    pooling: str,
    punctuation: frozenset[int],
) -> TokenStates:
    """One text's :class:`TokenStates` from its ``(L+1, S, D)`` hidden states."""
    valid = hidden[:, mask]  # L+1, T, D
    if layout.pooled_layers:
        layers = list(layout.pooled_layers)
        pooled = valid[layers, 0] if pooling == "cls" else valid[layers].mean(axis=1)
    else:
        pooled = np.zeros((0, hidden.shape[-1]), dtype=np.float32)
    keep = np.array([int(t) not in punctuation for t in ids[mask]])
    if not keep.any():
        keep[:] = True
    tokens = valid[list(layout.token_layers)][:, keep]
    return TokenStates(
        _unit(tokens).astype(np.float32),
        _unit(pooled).astype(np.float32),
        ids[mask].astype(np.int32),
    )


class LayerEncoder:
    """One layer of a :class:`HiddenStateEncoder` seen as an
    :class:`~rag_multihop.encoders.base.Encoder`: a text's vector is the mean of its token
    states at ``layer`` (unit length). RaLa stores use it to fingerprint the model whose
    states they hold (:class:`~rag_multihop.encoders.fingerprint.EncoderFingerprint`).
    """

    def __init__(self, encoder: HiddenStateEncoder, layer: int) -> None:
        self.encoder = encoder
        self.layer = layer

    @property
    def name(self) -> str:
        return f"{self.encoder.name}@layer{self.layer}"

    @property
    def dim(self) -> int:
        return self.encoder.dim

    def encode(self, texts: Sequence[str], *, show_progress: bool = False) -> np.ndarray:
        texts = check_texts(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        layout = StateLayout(token_layers=(self.layer,), pooled_layers=(self.layer,))
        states = self.encoder.encode(texts, layout, pooling="mean", show_progress=show_progress)
        return np.stack([s.pooled[0] for s in states]).astype(np.float32)
