"""Start-up benchmark: whole-process wall time of short commands, against `import numpy`.

Times (subprocess, perf_counter around `subprocess.run`), each repeated N times, interleaved:
  import numpy      python -c "import numpy"
  sparseeval --help the console script next to this Python
  sparseeval predict  one prediction from a small published set made first in a temp dir

    python bench/startup.py                 # 7 runs each
    python bench/startup.py --repeats 3 --json
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET = 3.0  # ratio of a command's median to numpy's


def make_published(root: Path) -> Path:
    """A small fitted `arc` set at `root/published`, and answers.csv on its anchors."""
    from sparseeval.method.estimator import SparseEval
    from sparseeval.method.metrics import evaluate
    from sparseeval.method.splits import split_models
    from sparseeval.method.synthetic import make_synthetic
    from sparseeval.pipeline.versions import new_version, set_latest, write_version

    m = make_synthetic(600, 200)
    sp = split_models(m.model_ids, 100, 100)
    X, y = m.values.astype("float32"), m.y
    est = SparseEval(n_anchors=20, refine_steps=1, ensemble=1, epochs=50, predictor="mlp",
                     progress=lambda s: None)  # fmt: skip
    est.fit(X[sp.train], y[sp.train], X_valid=X[sp.valid], y_valid=y[sp.valid],
            item_ids=m.item_ids)  # fmt: skip
    pred = est.predict(X[sp.test])
    published = root / "published"
    decided = new_version("arc", est, data_fingerprint=m.fingerprint(), split_sizes=sp.sizes(),
                          metrics={"test": evaluate(pred, y[sp.test])},
                          settings={"interval_level": 0.9})  # fmt: skip
    write_version(published, decided)
    set_latest(published, "arc", 1)
    row = X[sp.test[0]]
    cols = {str(i): j for j, i in enumerate(m.item_ids)}
    lines = ["item,correct"] + [f"{a},{int(row[cols[str(a)]] > 0)}" for a in est.anchor_ids_]
    (root / "answers.csv").write_text("\n".join(lines) + "\n")
    return published


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--json", action="store_true", help="print JSON instead of the table")
    args = p.parse_args(argv)

    cli = str(Path(sys.executable).with_name("sparseeval"))
    with tempfile.TemporaryDirectory(prefix="sparseeval-startup-") as tmp:
        published = make_published(Path(tmp))
        answers = str(Path(tmp) / "answers.csv")
        commands = {
            "python -c 'import numpy'": [sys.executable, "-c", "import numpy"],
            "sparseeval --help": [cli, "--help"],
            "sparseeval predict": [cli, "predict", "--anchor-set", str(published),
                                   "--benchmark", "arc", "--responses", answers],
        }  # fmt: skip
        times: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(args.repeats):
            for name, cmd in commands.items():
                t = time.perf_counter()
                subprocess.run(cmd, check=True, capture_output=True)
                times[name].append(time.perf_counter() - t)

    base = statistics.median(times["python -c 'import numpy'"])
    rows = [
        {"command": name, "median_s": statistics.median(t), "min_s": min(t),
         "ratio": statistics.median(t) / base, "runs": len(t)}
        for name, t in times.items()
    ]  # fmt: skip
    if args.json:
        print(json.dumps({"target_ratio": TARGET, "rows": rows}, indent=2))
        return 0
    print(f"start-up, {args.repeats} runs each, interleaved; target: ratio at most {TARGET:g}x")
    head = f"{'command':<28}{'median s':>10}{'min s':>9}{'ratio':>8}"
    print(head)
    print("-" * len(head))
    for r in rows:
        print(f"{r['command']:<28}{r['median_s']:>10.3f}{r['min_s']:>9.3f}{r['ratio']:>7.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
