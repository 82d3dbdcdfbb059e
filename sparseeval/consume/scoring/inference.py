"""Score models with a saved predictor using NumPy alone (no torch, scipy or sklearn).

This module owns the on-disk predictor format: a folder with `predictor.json` (the
config, with a `kind`) and `weights.npz` (named arrays, read with `allow_pickle=False`).
`save_predictor` writes any object with `state() -> (config, arrays)`: the training
classes in `sparseeval.method.predictors` as well as the readers here. `load_predictor`
returns a reader whose `predict(X)` maps a +-1 matrix (models x anchors) to estimated
accuracies in [0, 1], matching the trained predictor to within 1e-6. `READERS` is the one
table of published kinds; each reader also widens its own state (`Reader.widened`), so a
new format is one `Reader` subclass and one line there (`sparseeval.method.registry` names
the trainer that publishes each kind).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from sparseeval.consume.answers.responses import ResponsesError
from sparseeval.consume.sets.layout import AnchorSetError

CONFIG_FILE = "predictor.json"
WEIGHTS_FILE = "weights.npz"

# Cephes' rational approximations of erf (|x| < 1) and erfc (1 <= |x| < 6), highest
# power first; their error is ~1e-16. Beyond 6, erf is 1.0 in double precision.
_ERF_T = (9.60497373987051638749e0, 9.00260197203842689217e1, 2.23200534594684319226e3,
          7.00332514112805075473e3, 5.55923013010394962768e4)  # fmt: skip
_ERF_U = (1.0, 3.35617141647503099647e1, 5.21357949780152679795e2, 4.59432382970980127987e3,
          2.26290000613890934246e4, 4.92673942608635921086e4)  # fmt: skip
_ERFC_P = (2.46196981473530512524e-10, 5.64189564831068821977e-1, 7.46321056442269912687e0,
           4.86371970985681366614e1, 1.96520832956077098242e2, 5.26445194995477358631e2,
           9.34528527171957607540e2, 1.02755188689515710272e3,
           5.57535335369399327526e2)  # fmt: skip
_ERFC_Q = (1.0, 1.32281951154744992508e1, 8.67072140885989742329e1, 3.54937778887819891062e2,
           9.75708501743205489753e2, 1.82390916687909736289e3, 2.24633760818710981792e3,
           1.65666309194161350182e3, 5.57535340817727675546e2)  # fmt: skip


def _horner(coefs: tuple[float, ...], x: np.ndarray) -> np.ndarray:
    out = np.full_like(x, coefs[0])
    for c in coefs[1:]:
        out *= x
        out += c
    return out


def erf(x: np.ndarray) -> np.ndarray:
    """The error function of a float64 array, elementwise (agrees with `math.erf`)."""
    a = np.minimum(np.abs(x), 6.0)
    out = np.empty_like(a)
    small = a < 1.0
    s, z = a[small], a[small] ** 2
    out[small] = s * _horner(_ERF_T, z) / _horner(_ERF_U, z)
    b = a[~small]
    out[~small] = 1.0 - np.exp(-b * b) * _horner(_ERFC_P, b) / _horner(_ERFC_Q, b)
    return np.copysign(out, x)


def gelu(x: np.ndarray) -> np.ndarray:
    """Exact GELU, x * Phi(x), as torch's default `nn.GELU()`."""
    return 0.5 * x * (1.0 + erf(x / np.sqrt(2.0)))


def monotone_bounds(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Per unit of a monotone layer of `n`, the (low, high) that `monotone_mix` clips to: a
    third [0, inf) (ReLU: convex), a third (-inf, 0] (-ReLU(-x): concave), the rest [-1, 1]
    (saturated)."""
    a, b = n // 3, 2 * n // 3
    low = np.r_[np.zeros(a), np.full(b - a, -np.inf), np.full(n - b, -1.0)]
    high = np.r_[np.full(a, np.inf), np.zeros(b - a), np.ones(n - b)]
    return low, high


def monotone_mix(x: np.ndarray) -> np.ndarray:
    """The monotone net's activation (Runje and Shankaranarayana, "Constrained Monotonic
    Neural Networks", ICML 2023): with weights >= 0 a net of these approximates any
    non-decreasing function, where tanh alone underfits (metabench, 50 random items: test
    MAE 1.28 vs 1.64 points on MMLU, 1.72 vs 1.74 on ARC). Each unit clipped to its
    `monotone_bounds`."""
    return np.clip(x, *monotone_bounds(x.shape[-1]))


class Reader:
    """A loaded predictor: `predict(X)`, plus `config` and `arrays` to save it again."""

    def __init__(self, config: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
        self.config, self.arrays = config, arrays

    def state(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        return self.config, self.arrays

    def predict(self, X: np.ndarray) -> np.ndarray:
        """Estimated accuracies (float64, in [0, 1]) for the rows of a +-1 matrix."""
        raise NotImplementedError

    @classmethod
    def widened(cls, config: dict, arrays: dict, pad: Callable) -> tuple[dict, dict]:
        """This kind's (config, arrays) reading a wider input: `pad(a, axis)` spreads an
        array's input axis over the new width, zeros elsewhere (see `widen`)."""
        raise NotImplementedError

    def _check(self, X: np.ndarray) -> None:
        k = self.arrays["mean"].size
        if X.ndim != 2 or X.shape[1] != k:
            raise ResponsesError(f"expected a 2-D input with {k} columns, got shape {X.shape}")


class LinearReader(Reader):
    """Ridge and non-negative ridge: clip((X - mean) @ coef + intercept, 0, 1)."""

    def predict(self, X: np.ndarray) -> np.ndarray:
        X = np.asarray(X, dtype=np.float64)
        self._check(X)
        a = self.arrays
        return np.clip((X - a["mean"]) @ a["coef"] + a["intercept"][0], 0.0, 1.0)

    @classmethod
    def widened(cls, config, arrays, pad):
        return config, arrays | {"mean": pad(arrays["mean"]), "coef": pad(arrays["coef"])}


# Between an MLP's layers, by its config's `activation` (sets without one: the paper's GELU).
# "tanh": monotone nets published before "monotone-mix".
ACTIVATIONS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "gelu": gelu, "tanh": np.tanh, "monotone-mix": monotone_mix}  # fmt: skip


class MLPReader(Reader):
    """The MLP: Linear layers with its activation between them (exact GELU, or
    `monotone_mix` for a monotone net; dropout is off), optional sigmoid."""

    def __init__(self, config: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
        super().__init__(config, arrays)
        index = sorted(int(k.split(".")[1]) for k in arrays if k.endswith(".weight"))
        self.layers = [
            (
                arrays[f"net.{i}.weight"].astype(np.float64),
                arrays[f"net.{i}.bias"].astype(np.float64),
            )
            for i in index
        ]
        if len(self.layers) != len(config["hidden"]) + 1:
            raise AnchorSetError(
                f"mlp has {len(self.layers)} linear layers for hidden {config['hidden']}"
            )
        self.mean = arrays["mean"].astype(np.float32)
        name = config.get("activation", "gelu")
        if name not in ACTIVATIONS:
            raise AnchorSetError(
                f"mlp activation {name!r} unknown (known: {', '.join(ACTIVATIONS)})"
            )
        self.activation = ACTIVATIONS[name]

    def predict(self, X: np.ndarray) -> np.ndarray:
        X = np.asarray(X, dtype=np.float32)
        self._check(X)
        h = (X - self.mean).astype(np.float64)  # centred in float32, as the trained net saw it
        for j, (weight, bias) in enumerate(self.layers):
            h = h @ weight.T + bias
            if j < len(self.layers) - 1:
                h = self.activation(h)
        out = h[:, 0]
        if self.config["sigmoid"]:
            out = np.exp(-np.logaddexp(0.0, -out))
        return np.clip(out, 0.0, 1.0)

    @classmethod
    def widened(cls, config, arrays, pad):
        first = {"mean": pad(arrays["mean"]), "net.0.weight": pad(arrays["net.0.weight"], 1)}
        return config | {"n_inputs": len(first["mean"])}, arrays | first


class BlendReader(Reader):
    """A weighted sum of member readers (their arrays are stored under `m{i}/`)."""

    def __init__(self, config: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
        super().__init__(config, arrays)
        self.weights = [float(w) for w in config["weights"]]
        self.members = [
            reader_from_state(
                c, {k[len(f"m{i}/") :]: v for k, v in arrays.items() if k.startswith(f"m{i}/")}
            )
            for i, c in enumerate(config["members"])
        ]

    def predict(self, X: np.ndarray) -> np.ndarray:
        return sum(w * m.predict(X) for w, m in zip(self.weights, self.members, strict=True))

    @classmethod
    def widened(cls, config, arrays, pad):
        members, out = [], {}
        for i, c in enumerate(config["members"]):
            sub = {k[len(f"m{i}/") :]: v for k, v in arrays.items() if k.startswith(f"m{i}/")}
            c2, a2 = _reader_class(c).widened(c, sub, pad)
            members.append(c2)
            out |= {f"m{i}/{k}": v for k, v in a2.items()}
        return config | {"members": members}, out


# The published predictor kinds and their NumPy readers (`sparseeval.method.registry` names
# the trainer that publishes each kind; a new format is a `Reader` subclass plus one line).
READERS: dict[str, type[Reader]] = {
    "ridge": LinearReader,
    "nnridge": LinearReader,
    "mlp": MLPReader,
    "blend": BlendReader,
}


def widen(predictor: Any, columns: np.ndarray, width: int) -> Reader:
    """A reader of `width` inputs that reads `predictor`'s inputs at `columns` and ignores the rest.

    Exact: the other inputs get zero weight (first layer of an MLP, coefficients of a
    ridge, every member of a blend). The suite uses it to read every benchmark's anchors.
    """
    config, arrays = predictor.state()
    return reader_from_state(*_widened_state(config, arrays, np.asarray(columns), width))


def _widened_state(config: dict, arrays: dict, columns: np.ndarray, width: int):
    def pad(a: np.ndarray, axis: int = 0) -> np.ndarray:
        shape = list(a.shape)
        shape[axis] = width
        out = np.zeros(shape, dtype=a.dtype)
        np.moveaxis(out, axis, 0)[columns] = np.moveaxis(a, axis, 0)
        return out

    return _reader_class(config).widened(config, arrays, pad)


def _reader_class(config: dict[str, Any]) -> type[Reader]:
    kind = config.get("kind")
    if kind not in READERS:
        raise AnchorSetError(f"unknown predictor kind {kind!r}")
    return READERS[kind]


def reader_from_state(config: dict[str, Any], arrays: dict[str, np.ndarray]) -> Reader:
    """The reader for a predictor's (config, arrays); an unknown `kind` is a ValueError."""
    return _reader_class(config)(config, arrays)


def save_predictor(predictor: Any, folder: str | Path) -> list[Path]:
    """Write `predictor.state()` as `predictor.json` and `weights.npz`; returns the files."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    config, arrays = predictor.state()
    (folder / CONFIG_FILE).write_text(json.dumps(config, indent=2))
    np.savez(folder / WEIGHTS_FILE, **arrays)
    return [folder / CONFIG_FILE, folder / WEIGHTS_FILE]


def load_predictor(folder: str | Path) -> Reader:
    """Read a predictor saved by `save_predictor` as a NumPy reader, unpickling nothing."""
    folder = Path(folder)
    config = json.loads((folder / CONFIG_FILE).read_text())
    with np.load(folder / WEIGHTS_FILE, allow_pickle=False) as npz:
        arrays = {k: npz[k] for k in npz.files}
    return reader_from_state(config, arrays)


__all__ = [
    "ACTIVATIONS",
    "CONFIG_FILE",
    "READERS",
    "WEIGHTS_FILE",
    "BlendReader",
    "LinearReader",
    "MLPReader",
    "Reader",
    "erf",
    "gelu",
    "load_predictor",
    "monotone_bounds",
    "monotone_mix",
    "reader_from_state",
    "save_predictor",
    "widen",
]
