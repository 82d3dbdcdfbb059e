"""The real lm-eval CLI with its dummy model, on a tiny local ARC-like dataset (tests share it)."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import sparseeval
from sparseeval.consume.lm_eval.harness import samples_task

LM_EVAL = importlib.util.find_spec("lm_eval")
needs_lm_eval = pytest.mark.skipif(
    LM_EVAL is None, reason="lm-eval is not installed (pip install 'sparseeval[test]')"
)


def arc_doc(j: int) -> dict:
    """Doc j of a tiny dataset in ARC's schema (question, choices.text/label, answerKey)."""
    return {
        "id": f"q{j}",
        "question": f"What is {j} plus one?",
        "choices": {
            "text": [str(j + k) for k in range(4 - j % 2)],
            "label": list("ABCD")[: 4 - j % 2],
        },
        "answerKey": "B",
    }


# lm-eval's CLI with its index of built-in tasks left out (`TaskManager(include_defaults=False)`):
# indexing its ~15,000 YAML files takes most of a run, and these runs only need --include_path.
OWN_TASKS_ONLY = (
    "import functools, lm_eval.tasks.manager as m, lm_eval.__main__ as cli; "
    "m.TaskManager.__init__ = functools.partialmethod(m.TaskManager.__init__, "
    "include_defaults=False); cli.cli_evaluate()"
)


def lm_eval(tmp: Path, *args, own_tasks_only: bool = False) -> tuple[dict, dict[str, Path], str]:
    """Run the lm-eval CLI offline with the dummy model: (results, {task: samples file}, stdout).
    `own_tasks_only`: the same CLI, knowing only the tasks under --include_path."""
    out = tmp / "out"
    env = os.environ | {
        "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp / "hf"),
        "PYTHONPATH": os.pathsep.join([str(Path(sparseeval.__file__).parents[1]),
                                       os.environ.get("PYTHONPATH", "")]),
    }  # fmt: skip
    entry = ["-c", OWN_TASKS_ONLY] if own_tasks_only else ["-m", "lm_eval"]
    cmd = [sys.executable, *entry, "--model", "dummy", "--log_samples",
           "--output_path", str(out), *map(str, args)]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=tmp, timeout=240)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (results,) = out.rglob("results_*.json")
    samples = {samples_task(f)[0]: f for f in out.rglob("samples_*.jsonl")}
    return json.loads(results.read_text())["results"], samples, proc.stdout


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def load_module(path: Path):
    """A generated task's utils.py as a module."""
    spec = importlib.util.spec_from_file_location("sparseeval_task_utils", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def original_task(folder: Path, name: str, yamls: list[str], files: dict, copy=()) -> None:
    """lm-eval's own task (its installed YAML files, in `include` order, and the Python files
    they name), pointed at local data files {split: path}: task `name` under `folder`."""
    tasks = Path(LM_EVAL.submodule_search_locations[0]) / "tasks"
    drop = re.compile(r'^"?(task|tag|dataset_path|dataset_name|include)"?:')
    kept, dropping = [], False
    for line in (line for y in yamls for line in (tasks / y).read_text().splitlines()):
        dropping = bool(drop.match(line)) or (dropping and line.startswith("  - "))
        kept += [] if dropping else [line]
    data = json.dumps({"data_files": {k: str(v) for k, v in files.items()}})
    head = [f"task: {name}", "dataset_path: json", f"dataset_kwargs: {data}"]
    folder.mkdir(parents=True)
    (folder / f"{name}.yaml").write_text("\n".join(head + kept) + "\n")
    for f in copy:
        (folder / Path(f).name).write_text((tasks / f).read_text())


def original_arc_task(folder: Path, data: Path, train: Path) -> None:
    """lm-eval's own ARC task YAML (as installed), pointed at the local splits: `arc_local`."""
    import yaml

    yaml_file = Path(LM_EVAL.submodule_search_locations[0]) / "tasks/arc/arc_easy.yaml"
    original = yaml.safe_load(yaml_file.read_text())
    for key in ("tag", "dataset_name", "validation_split"):
        original.pop(key, None)
    files = {"test": str(data), "train": str(train)}
    original |= {
        "task": "arc_local",
        "dataset_path": "json",
        "dataset_kwargs": {"data_files": files},
    }
    folder.mkdir()
    (folder / "arc_local.yaml").write_text(yaml.safe_dump(original))
