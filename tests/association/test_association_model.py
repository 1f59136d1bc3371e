"""The association function f and the scoring modes: hand-built inputs and torch agreement."""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest

from rag_multihop.association.model import (
    SCORING_MODES,
    AssociationWeights,
    association_scores,
    association_transform,
    blend,
    gelu,
    get_scoring_mode,
    layer_norm,
    mixed_association,
    reverse_association,
)


def random_weights(dim: int, seed: int = 0, scale: float = 0.3) -> AssociationWeights:
    rng = np.random.default_rng(seed)
    state = {
        key: rng.normal(scale=scale, size=value.shape).astype(np.float32)
        for key, value in AssociationWeights.identity(dim).to_state_dict().items()
    }
    return AssociationWeights.from_state_dict(state)


def test_identity_weights_make_f_the_normalisation():
    x = np.array([[3.0, 4.0], [0.0, 2.0]], dtype=np.float32)
    np.testing.assert_allclose(
        association_transform(x, AssociationWeights.identity(2)), [[0.6, 0.8], [0.0, 1.0]]
    )


def test_residual_blend_by_hand():
    # g(x) = b4 (last layer: zero matrix, bias b4); alpha = sigmoid(0) = 0.5.
    state = AssociationWeights.identity(2).to_state_dict()
    state["net.9.bias"] = np.array([0.0, 2.0], dtype=np.float32)
    state["residual_weight"] = np.asarray(0.0, dtype=np.float32)
    weights = AssociationWeights.from_state_dict(state)
    assert weights.alpha == 0.5
    out = association_transform(np.array([[2.0, 0.0]], dtype=np.float32), weights)
    expected = np.array([1.0, 1.0]) / math.sqrt(2)  # 0.5*[2, 0] + 0.5*[0, 2] = [1, 1]
    np.testing.assert_allclose(out[0], expected, rtol=1e-6)


def test_gelu_and_layer_norm_known_values():
    x = np.array([0.0, 1.0, -1.0, 10.0], dtype=np.float32)
    np.testing.assert_allclose(gelu(x), [0.0, 0.8413447, -0.1586553, 10.0], rtol=1e-6)
    row = np.array([[1.0, 3.0]], dtype=np.float32)
    normed = layer_norm(row, np.ones(2, np.float32), np.zeros(2, np.float32))
    np.testing.assert_allclose(normed, [[-1.0, 1.0]], atol=1e-5)


def test_scoring_modes_by_hand():
    q = np.array([1.0, 0.0], dtype=np.float32)
    fq = np.array([0.0, 1.0], dtype=np.float32)
    passages = np.array([[1.0, 0.0], [0.0, 1.0]], dtype=np.float32)
    passages_f = np.array([[0.0, 1.0], [1.0, 0.0]], dtype=np.float32)
    # mixed: ½[f(q)·p + f(p)·q]; reverse: f(p)·q
    np.testing.assert_allclose(mixed_association(q, fq, passages, passages_f), [0.0, 1.0])
    np.testing.assert_allclose(reverse_association(q, fq, passages, passages_f), [0.0, 1.0])
    passages_f2 = np.array([[1.0, 0.0], [0.0, 1.0]], dtype=np.float32)
    np.testing.assert_allclose(mixed_association(q, fq, passages, passages_f2), [0.5, 0.5])
    np.testing.assert_allclose(reverse_association(q, None, passages, passages_f2), [1.0, 0.0])


def test_blend_and_lambda_range():
    np.testing.assert_allclose(blend(np.array([1.0]), np.array([0.0]), 0.25), [0.75])
    np.testing.assert_allclose(blend(np.array([0.2]), np.array([0.8]), 1.0), [0.8])
    for bad in (-0.1, 1.5, float("nan"), "0.5"):
        with pytest.raises(ValueError, match=r"lambda_ must be in \[0, 1\]"):
            blend(np.array([1.0]), np.array([1.0]), bad)


def test_association_scores_skips_f_of_q_for_reverse():
    weights = random_weights(4)
    rng = np.random.default_rng(1)
    q = rng.normal(size=4).astype(np.float32)
    passages = rng.normal(size=(3, 4)).astype(np.float32)
    passages_f = association_transform(passages, weights)
    reverse = association_scores(q, passages, passages_f, weights, mode="reverse")
    np.testing.assert_allclose(reverse, passages_f @ q, rtol=1e-6)
    mixed = association_scores(q, passages, passages_f, weights, mode="mixed")
    fq = association_transform(q[None, :], weights)[0]
    np.testing.assert_allclose(mixed, 0.5 * (passages @ fq + passages_f @ q), rtol=1e-5)


def test_unknown_scoring_mode_lists_registered_names():
    with pytest.raises(ValueError, match=r"mode must be one of \['mixed', 'reverse'\], got 'both'"):
        get_scoring_mode("both")
    assert set(SCORING_MODES) == {"mixed", "reverse"}


def test_state_dict_round_trip_uses_torch_names():
    weights = random_weights(3)
    state = weights.to_state_dict()
    assert sorted(state)[:3] == ["net.0.bias", "net.0.weight", "net.1.bias"]
    assert state["residual_weight"].shape == ()
    again = AssociationWeights.from_state_dict(state)
    x = np.random.default_rng(0).normal(size=(5, 3)).astype(np.float32)
    np.testing.assert_array_equal(
        association_transform(x, again), association_transform(x, weights)
    )


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda s: s.pop("net.4.bias"), r"missing \['net.4.bias'\]"),
        (lambda s: s.update(extra=np.zeros(1)), r"unexpected \['extra'\]"),
        (lambda s: s.update({"net.3.weight": np.zeros((3, 2))}), r"net.3.weight has shape"),
        (lambda s: s.update({"net.0.weight": np.zeros(3)}), r"net.0.weight must be a square"),
        (lambda s: s["net.6.bias"].__setitem__(0, np.nan), r"net.6.bias contains NaN"),
    ],
)
def test_from_state_dict_names_the_bad_entry(edit, message):
    state = random_weights(3).to_state_dict()
    edit(state)
    with pytest.raises(ValueError, match=message):
        AssociationWeights.from_state_dict(state)


def test_numpy_forward_matches_torch_forward():
    torch = pytest.importorskip("torch")
    from rag_multihop.association.training import module_forward, module_from_weights

    weights = random_weights(16, seed=3)
    x = np.random.default_rng(4).normal(size=(7, 16)).astype(np.float32)
    with torch.no_grad():
        expected = module_forward(module_from_weights(weights), torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(association_transform(x, weights), expected, atol=2e-6)


def test_numpy_forward_matches_an_independent_torch_functional_forward():
    torch = pytest.importorskip("torch")
    functional = torch.nn.functional
    weights = random_weights(8, seed=5)
    x = torch.from_numpy(np.random.default_rng(6).normal(size=(4, 8)).astype(np.float32))
    h = x
    for i in range(4):
        w, b = (torch.from_numpy(a) for a in (weights.linear_weights[i], weights.linear_biases[i]))
        h = functional.linear(h, w, b)
        if i < 3:
            gamma, beta = (
                torch.from_numpy(a) for a in (weights.norm_weights[i], weights.norm_biases[i])
            )
            h = functional.gelu(functional.layer_norm(h, (8,), gamma, beta))
    alpha = torch.sigmoid(torch.tensor(weights.residual_weight))
    expected = functional.normalize(alpha * x + (1 - alpha) * h, dim=-1).numpy()
    np.testing.assert_allclose(association_transform(x.numpy(), weights), expected, atol=2e-6)


def test_importing_the_package_does_not_import_torch():
    heavy = ("torch", "safetensors", "llama_index", "haystack")
    code = (
        "import sys, rag_multihop.association, rag_multihop.eval.methods.association\n"
        f"print([m for m in {heavy!r} if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
