"""Small builders and stand-ins shared by the tests."""

import fnmatch
import io
import shutil
from pathlib import Path

from sparseeval.method.estimator import SparseEval
from sparseeval.method.metrics import evaluate
from sparseeval.method.splits import split_models
from sparseeval.method.synthetic import make_synthetic
from sparseeval.pipeline.settings import Settings
from sparseeval.pipeline.versions import new_version, write_version


def tiny_fit(seed: int = 0, n_test: int = 80, n_valid: int = 80, item_ids=None):
    """A 300 x 60 synthetic matrix, its split and a quickly fitted 8-anchor SparseEval."""
    m = make_synthetic(300, 60, seed=seed)
    sp = split_models(m.model_ids, n_test=n_test, n_valid=n_valid, seed=seed)
    est = SparseEval(
        n_anchors=8, refine_steps=1, epochs=50, ensemble=1, predictor="ridge",
        progress=lambda s: None,
    )  # fmt: skip
    est.fit(m.values[sp.train], m.y[sp.train], X_valid=m.values[sp.valid], y_valid=m.y[sp.valid],
            item_ids=m.item_ids if item_ids is None else item_ids)  # fmt: skip
    return m, sp, est


def publish_fit(root, benchmark: str, fitted, **kw):
    """Write `fitted` (from `tiny_fit`) as the next version of `benchmark` under `root`."""
    m, sp, est = fitted
    pred = est.predict(m.values[sp.test])
    at = {k: kw.pop(k) for k in ("budget", "flat", "signing_key") if k in kw}
    decided = new_version(
        benchmark, est, data_fingerprint=m.fingerprint(), split_sizes=sp.sizes(),
        metrics={"test": evaluate(pred, m.y[sp.test])}, settings=Settings.of(home=root),
        report_inputs={"test_pred": pred, "test_true": m.y[sp.test]}, **kw,
    )  # fmt: skip
    return write_version(root, decided, **at)


def publish_suite_in_flow(matrices: dict, settings: Settings) -> str:
    """The refresh flow's suite step (`flows.publish.publish_suite`: the publish unit in its
    Prefect transaction) on matrix files {benchmark: path}, in a flow of its own; its line."""
    from prefect import flow
    from sparseeval.flows.publish import publish_suite

    from sparseeval.pipeline.suite_recipe import matrix_info

    infos = {b: matrix_info(b, path) for b, path in matrices.items()}

    @flow(name="suite-publish-test")
    def suite_step() -> str:
        return publish_suite(settings, infos)

    return suite_step()


def published(root: Path, benchmark: str, fitted) -> Path:
    """`fitted` published as v1 of `benchmark` under `root` and promoted (`latest`)."""
    from sparseeval.pipeline.versions import set_latest

    publish_fit(root, benchmark, fitted)
    set_latest(root, benchmark, 1)
    return root


def anchor_answers(fitted, model: int = 0) -> dict[str, int]:
    """The `model`-th test model's 0/1 answers to the anchors of a fit whose item ids are
    the column numbers ("0".."59", `tiny_fit(item_ids=...)`)."""
    m, sp, est = fitted
    row = m.values[int(sp.test[model])]
    return {str(j): int(row[j] > 0) for j in est.anchors_}


def answers_csv(path: Path, answers: dict, extra: str = "", prefix: str = "") -> Path:
    """An `item,correct` answers file; `prefix` before the header, `extra` after the rows."""
    body = "".join(f"{k},{v}\n" for k, v in answers.items())
    path.write_text(prefix + "item,correct\n" + body + extra, encoding="utf-8")
    return path


def cli(argv, capsys) -> tuple[int, str, str]:
    """`sparseeval ARGV` in this process: (exit code, stdout, stderr)."""
    from sparseeval.cli import main

    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


def quick_config(folder: Path) -> str:
    """A settings file for `fit --config` with a quick predictor (2 refinement steps, 60
    epochs, one net), for tests about what a fit says or writes rather than its error."""
    path = folder / "quick.toml"
    path.write_text("refine_steps = 2\nepochs = 60\npatience = 10\nensemble = 1\n")
    return str(path)


def wide_csv(path: Path, n_models: int, n_items: int, seed: int = 0):
    """A wide table (`model`, items `q0..`) of 0/1 answers, accuracy rising with the model
    from 0.2 to 0.9; returns (path, the answers as an array)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    p = np.linspace(0.2, 0.9, n_models)[:, None]
    values = (rng.random((n_models, n_items)) < p).astype(int)
    lines = ["model," + ",".join(f"q{j}" for j in range(n_items))]
    lines += [f"m{i:03d}," + ",".join(map(str, row)) for i, row in enumerate(values)]
    path.write_text("\n".join(lines) + "\n")
    return path, values


# -- flows on tiny synthetic releases ----------------------------------------------------

ITEMS = {"arc": 60, "gsm8k": 50}
TINY = {
    "n_anchors": 8,
    "refine_steps": 2,
    "epochs": 50,
    "patience": 10,
    "ensemble": 1,  # one net, as tiny_fit and quick_config: the flows, not the ensemble
    "n_test": 40,
    "n_valid": 30,
    "min_new_models": 5,
}


def release(folder: Path, lo: int, hi: int, benchmarks=None, n_models: int = 260) -> str:
    """Models [lo, hi) of one tiny synthetic leaderboard as a long Parquet file."""
    import polars as pl

    from sparseeval.pipeline import sources

    src = sources.SyntheticLeaderboard(n_models=n_models, items=ITEMS, seed=3)

    frames = [src.frame(b, lo, hi) for b in (benchmarks or ITEMS)]
    path = folder / f"release-{lo}-{hi}-{'-'.join(benchmarks or ITEMS)}.parquet"
    pl.concat(frames).select("model", "benchmark", "item", "correct").write_parquet(path)
    return str(path)


def wait_for(condition, seconds: float = 60):
    """`condition()` once it is truthy, polling every 0.5 s for up to `seconds`."""
    import time

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if value := condition():
            return value
        time.sleep(0.5)
    return condition()


class InADeployment:
    """What `prefect.runtime.deployment` says inside a run of a deployment."""

    @staticmethod
    def get_id() -> str:
        return "0c6a4f4e-0000-4000-8000-000000000001"


def run(home: Path, specs, **overrides):
    """The refresh flow on `specs` (None: the `sources` setting) with tiny settings."""
    from sparseeval.flows.refresh import refresh

    return refresh(sources=specs, home=str(home), settings_overrides=TINY | overrides)


# -- signing and the Hub mirror ----------------------------------------------------------


def signing_keys() -> tuple[bytes, bytes]:
    """A fresh Ed25519 key pair as PEM: (private PKCS8, public SubjectPublicKeyInfo)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    private = Ed25519PrivateKey.generate()
    pem = private.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    public = private.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return pem, public


class FakeMirrorHub:
    """Stands in for the HfApi calls of the anchor-set mirror: `create_commit` lands files in
    a folder (all or nothing), `snapshot_download` copies the matching ones; both recorded."""

    def __init__(self, root: Path) -> None:
        self.root, self.commits, self.downloads = root, [], []

    def create_commit(self, repo_id, operations, *, commit_message, repo_type=None, **kw):
        from huggingface_hub import CommitOperationAdd

        ops = list(operations)
        self.commits.append(
            {"repo_id": repo_id, "ops": ops, "message": commit_message, "repo_type": repo_type}
        )
        staged = {}
        for op in ops:  # stage everything first: all or nothing
            assert isinstance(op, CommitOperationAdd)
            src = op.path_or_fileobj
            if isinstance(src, bytes):
                data = src
            elif isinstance(src, io.IOBase):
                data = src.read()
            else:
                data = Path(src).read_bytes()
            staged[op.path_in_repo] = data
        for rel, data in staged.items():
            dest = self.root / repo_id / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(data)
        return {"commit": len(self.commits)}

    def snapshot_download(self, repo_id, *, repo_type=None, allow_patterns=None, **kw):
        self.downloads.append({"repo_id": repo_id, "patterns": allow_patterns, "type": repo_type})
        src = self.root / repo_id
        if not src.is_dir():
            raise FileNotFoundError(f"404 repository {repo_id} not found")
        dest = self.root.parent / "cache" / f"snap{len(self.downloads)}"
        for p in src.rglob("*"):
            rel = p.relative_to(src).as_posix()
            if p.is_file() and any(fnmatch.fnmatch(rel, pat) for pat in allow_patterns or ["*"]):
                (dest / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(p, dest / rel)
        dest.mkdir(parents=True, exist_ok=True)
        return str(dest)


def maintained(root, benchmark: str) -> tuple:
    """`(root, benchmark, K)` of the set readers load (`layout.live_budget`), for
    `layout.latest_version(*maintained(...))` and `list_versions`."""
    from sparseeval.consume.sets.layout import live_budget

    return root, benchmark, live_budget(root, benchmark)
