"""Save and load a trained association model as an inspectable directory.

Layout (no pickle anywhere; arrays are read with ``allow_pickle=False``):

- ``config.json``: ``kind``, ``format_version``, ``rag_multihop_version``, ``encoder``
  (``name``, ``dim`` and, when the model knows its encoder, ``probe_texts``), ``scoring``
  (``lambda``, ``mode``), ``pair_source`` (``"corpus"``: label-free, ``"labelled"``, or
  ``null``; absent from models saved before it was recorded), ``training``
  (hyperparameters), ``training_stats``, ``pair_stats``, ``passages``;
- ``model.safetensors``: the weights of f under torch's parameter names;
- ``passage_vectors.npy`` / ``passage_transformed.npy``: the raw passage embeddings ``P``
  and ``f(P)``, one float32 row per id of ``passage_ids.json``;
- ``encoder_fingerprint.npy`` (with ``probe_texts``): the encoder's embeddings of the probe
  texts, one float32 row each (:class:`~rag_multihop.encoders.fingerprint.EncoderFingerprint`).
  The fingerprint is optional within format version 1: models saved without it load (the
  encoder is then checked by name), and older rag-multihop versions ignore it.

Writes are atomic (:mod:`rag_multihop._atomic`): a crash never leaves a half-written model,
and a save deletes nothing but the model's own superseded versions. An existing directory
with files that is not a saved association model is refused rather than written into.

Example:
    >>> import tempfile, numpy as np
    >>> from rag_multihop.association.model import AssociationWeights
    >>> w = AssociationWeights.identity(2)
    >>> saved = SavedModel(w, {"encoder": {"name": "toy", "dim": 2}}, ("a",),
    ...                    np.ones((1, 2), "float32"), np.ones((1, 2), "float32"))
    >>> path = save_model(saved, tempfile.mkdtemp() + "/m")
    >>> load_model(path).passage_ids
    ('a',)
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from rag_multihop._artifact_config import read_config as read_artifact_config
from rag_multihop._artifact_config import write_config
from rag_multihop._atomic import (
    artifact_path,
    atomic_directory,
    holds_only_leftovers,
    read_artifact,
)
from rag_multihop._optional import require
from rag_multihop.association.model import AssociationWeights
from rag_multihop.encoders.fingerprint import EncoderFingerprint

KIND = "rag_multihop.association"
FORMAT_VERSION = 1
CONFIG_FILE = "config.json"
WEIGHTS_FILE = "model.safetensors"
VECTORS_FILE = "passage_vectors.npy"
TRANSFORMED_FILE = "passage_transformed.npy"
IDS_FILE = "passage_ids.json"
FINGERPRINT_FILE = "encoder_fingerprint.npy"
FILES = (CONFIG_FILE, WEIGHTS_FILE, VECTORS_FILE, TRANSFORMED_FILE, IDS_FILE)
"""The files every saved model holds (:data:`FINGERPRINT_FILE` only with ``probe_texts``)."""


@dataclass(frozen=True)
class SavedModel:
    """Everything a model directory holds. ``config`` needs at least ``encoder.name/dim``;
    ``fingerprint`` is the encoder's, when known."""

    weights: AssociationWeights
    config: Mapping[str, Any]
    passage_ids: tuple[str, ...]
    passage_vectors: np.ndarray
    passage_transformed: np.ndarray
    fingerprint: EncoderFingerprint | None = None


def save_model(model: SavedModel, directory: str | os.PathLike[str]) -> Path:
    """Write ``model`` into ``directory`` atomically; returns the directory path."""
    safetensors_numpy = require("safetensors.numpy", extra="train")
    target = Path(directory)
    if target.exists() and (
        not target.is_dir()
        or (any(target.iterdir()) and not _is_model(target) and not holds_only_leftovers(target))
    ):
        raise FileExistsError(
            f"{target} exists and is not a saved association model; refusing to overwrite it "
            "(choose a new or empty directory)"
        )
    encoder = {key: value for key, value in model.config["encoder"].items() if key != "probe_texts"}
    if model.fingerprint is not None:
        encoder["probe_texts"] = list(model.fingerprint.texts)
    config = {**model.config, "encoder": encoder, "passages": len(model.passage_ids)}
    with atomic_directory(target) as staging:
        write_config(staging, KIND, FORMAT_VERSION, config, filename=CONFIG_FILE)
        safetensors_numpy.save_file(
            model.weights.to_state_dict(), str(staging / WEIGHTS_FILE), metadata={"kind": KIND}
        )
        os.chmod(staging / WEIGHTS_FILE, (staging / CONFIG_FILE).stat().st_mode)
        np.save(staging / VECTORS_FILE, np.ascontiguousarray(model.passage_vectors, "float32"))
        np.save(
            staging / TRANSFORMED_FILE, np.ascontiguousarray(model.passage_transformed, "float32")
        )
        (staging / IDS_FILE).write_text(json.dumps(list(model.passage_ids), ensure_ascii=False))
        if model.fingerprint is not None:
            np.save(staging / FINGERPRINT_FILE, np.ascontiguousarray(model.fingerprint.vectors))
    return target


def _is_model(directory: Path) -> bool:
    try:
        return read_config(directory).get("kind") == KIND
    except (OSError, ValueError):
        return False


def read_config(directory: str | os.PathLike[str]) -> dict[str, Any]:
    """The model's ``config.json``, checked for kind and format version (no arrays loaded)."""
    source = artifact_path(directory)
    path = source / CONFIG_FILE
    config = read_artifact_config(
        source,
        KIND,
        (FORMAT_VERSION,),
        filename=CONFIG_FILE,
        label="association model",
        hint="save one with AssociationReranker.save or `rag-multihop aar train`",
    )
    encoder = config.get("encoder")
    name = encoder.get("name") if isinstance(encoder, dict) else None
    dim = encoder.get("dim") if isinstance(encoder, dict) else None
    if not isinstance(name, str) or not isinstance(dim, int) or dim <= 0:
        raise ValueError(f"{path} is corrupted: 'encoder' must hold a name and a positive dim")
    texts = encoder.get("probe_texts")  # type: ignore[union-attr]
    if texts is not None and (
        not isinstance(texts, list) or not texts or not all(isinstance(t, str) and t for t in texts)
    ):
        raise ValueError(
            f"{path} is corrupted: 'encoder.probe_texts' must be a list of non-empty strings"
        )
    return config


def load_model(directory: str | os.PathLike[str]) -> SavedModel:
    """Read a model directory; ``ValueError`` names the corrupted or inconsistent file."""
    with read_artifact(directory) as source:
        return _read_model(source)


def _read_model(source: Path) -> SavedModel:
    config = read_config(source)
    missing = [name for name in FILES if not (source / name).is_file()]
    if missing:
        raise ValueError(f"{source} is an incomplete association model: missing {missing}")
    safetensors_numpy = require("safetensors.numpy", extra="train")
    safetensor_error = require("safetensors", extra="train").SafetensorError
    try:
        state = safetensors_numpy.load_file(str(source / WEIGHTS_FILE))
    except (safetensor_error, OSError, ValueError) as exc:
        raise ValueError(f"{source / WEIGHTS_FILE} is corrupted: {exc}") from None
    try:
        weights = AssociationWeights.from_state_dict(state)
    except ValueError as exc:
        raise ValueError(f"{source / WEIGHTS_FILE}: {exc}") from None
    dim = config["encoder"]["dim"]
    if weights.dim != dim:
        raise ValueError(
            f"{source}: weights have dimension {weights.dim} but config.json says {dim}"
        )
    try:
        ids = json.loads((source / IDS_FILE).read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"{source / IDS_FILE} is corrupted: {exc}") from None
    if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
        raise ValueError(f"{source / IDS_FILE} must hold a JSON list of passage id strings")
    if len(set(ids)) != len(ids):
        raise ValueError(f"{source / IDS_FILE} holds duplicate passage ids")
    arrays = [
        _load_matrix(source / name, len(ids), dim) for name in (VECTORS_FILE, TRANSFORMED_FILE)
    ]
    return SavedModel(
        weights, config, tuple(ids), arrays[0], arrays[1], _load_fingerprint(source, config)
    )


def _load_fingerprint(source: Path, config: Mapping[str, Any]) -> EncoderFingerprint | None:
    texts = config["encoder"].get("probe_texts")
    if texts is None:
        return None
    path = source / FINGERPRINT_FILE
    if not path.is_file():
        raise ValueError(f"{source} is an incomplete association model: missing {FINGERPRINT_FILE}")
    return EncoderFingerprint(
        tuple(texts),
        _load_matrix(path, len(texts), config["encoder"]["dim"], "encoder.probe_texts"),
    )


def _load_matrix(path: Path, rows: int, dim: int, rows_from: str = IDS_FILE) -> np.ndarray:
    try:
        array = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path} is corrupted: {exc}") from None
    if array.dtype != np.float32 or array.shape != (rows, dim):
        raise ValueError(
            f"{path} holds a {array.dtype} array of shape {array.shape}; expected float32 "
            f"({rows}, {dim}) to match {rows_from} and the encoder dimension"
        )
    if not np.isfinite(array).all():
        raise ValueError(f"{path} contains NaN or inf values")
    return array
