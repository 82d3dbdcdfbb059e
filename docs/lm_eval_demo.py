"""A history of lm-eval runs to try the suite inside lm-eval offline (docs/howto-lm-eval.md,
"End to end, offline").

`python docs/lm_eval_demo.py DIR --models 200` writes, under DIR:
- `data/`: tiny local datasets in ARC's and Winogrande's schemas (JSONL);
- `tasks/`: lm-eval's own `arc_challenge` and `winogrande` tasks (their installed YAML,
  included) pointed at those files, 0-shot (the exported tasks pin the leaderboard's 25 and
  5 shots; a history at those shots takes 5x longer here, and the dummy model ignores them);
- `runs/`: one `--log_samples` output per "model": lm-eval's dummy model (random
  log-likelihoods) at seed 1..N, saved as the lm-eval CLI saves it (lm_eval/_cli/run.py:
  `EvaluationTracker.save_results_aggregated`, then `save_results_samples` per task).
A real history is your models' `--log_samples` output, or the leaderboard's details.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def arc(j: int) -> dict:
    n = 4 - j % 2
    choices = {"text": [str(j + k) for k in range(n)], "label": list("ABCD")[:n]}
    return {"id": f"q{j}", "question": f"What is {j} plus one?", "choices": choices,
            "answerKey": "B"}  # fmt: skip


def winogrande(j: int) -> dict:
    return {"sentence": f"Ann lent Beth {j} pens because _ had {j % 3 + 2} spare.",
            "option1": "Ann", "option2": "Beth", "answer": "12"[j % 2]}  # fmt: skip


# task -> (installed YAML, {split: docs}); the shot split holds more than the leaderboard's
# shots (lm-eval draws shots + 1 and drops the doc itself)
TASKS = {
    "arc_challenge": ("arc/arc_challenge.yaml",
                      {"test": [arc(j) for j in range(80)],
                       "train": [arc(100 + j) for j in range(30)]}),
    "winogrande": ("winogrande/default.yaml",
                   {"validation": [winogrande(j) for j in range(80)],
                    "train": [winogrande(100 + j) for j in range(10)]}),
}  # fmt: skip


def write_tasks(folder: Path) -> None:
    """`data/{task}.{split}.jsonl` and `tasks/{task}.yaml` (lm-eval's, on the local files)."""
    import lm_eval

    installed = Path(lm_eval.__file__).parent / "tasks"
    (folder / "data").mkdir(parents=True, exist_ok=True)
    (folder / "tasks").mkdir(exist_ok=True)
    for task, (yaml, splits) in TASKS.items():
        files = {}
        for split, docs in splits.items():
            path = folder / "data" / f"{task}.{split}.jsonl"
            path.write_text("".join(json.dumps(d) + "\n" for d in docs))
            files[split] = str(path.resolve())
        kwargs = json.dumps({"data_files": files})
        lines = [f"include: {installed / yaml}", f"task: {task}", "dataset_path: json",
                 "dataset_name: null", f"dataset_kwargs: {kwargs}"]  # fmt: skip
        lines += ["validation_split: null"] if "validation" not in splits else []
        (folder / "tasks" / f"{task}.yaml").write_text("\n".join(lines) + "\n")


def write_runs(folder: Path, n_models: int) -> None:
    """`runs/model-NNN/`: the dummy model at seeds 1..n_models, as `lm_eval --log_samples`."""
    import lm_eval.evaluator
    from lm_eval.loggers import EvaluationTracker
    from lm_eval.tasks import TaskManager

    lm_eval.evaluator.add_env_info = lambda results: None  # its `pip list` etc.: 5 s a run
    tasks = TaskManager(include_path=str(folder / "tasks"), include_defaults=False)
    for seed in range(1, n_models + 1):
        tracker = EvaluationTracker(output_path=str(folder / "runs"))
        res = lm_eval.evaluator.simple_evaluate(
            model="dummy", model_args=f"pretrained=model-{seed:03d}", tasks=list(TASKS),
            task_manager=tasks, log_samples=True, evaluation_tracker=tracker,
            random_seed=seed, numpy_random_seed=seed, torch_random_seed=seed, verbosity="ERROR",
        )  # fmt: skip
        samples = res.pop("samples")
        tracker.save_results_aggregated(results=res, samples=samples)
        for task in res["configs"]:
            tracker.save_results_samples(task_name=task, samples=samples[task])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("folder", type=Path)
    p.add_argument("--models", type=int, default=200)
    args = p.parse_args()
    write_tasks(args.folder)
    write_runs(args.folder, args.models)


if __name__ == "__main__":
    main()
