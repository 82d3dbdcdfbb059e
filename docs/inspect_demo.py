"""Inspect AI logs to try sparseeval with Inspect offline (docs/howto-inspect.md).

`python docs/inspect_demo.py DIR --models 100` writes `DIR/logs/`: one real `.eval` log per
"model", written by `inspect_ai.eval` on a toy multiple-choice task (`inspect_demo`, 40
questions). The models are a model API registered here (`demo/NAME`): no network, no
tokenizer download; model k answers question j right when its ability beats the question's
difficulty, so the history has the structure real results have.

`python docs/inspect_demo.py DIR --new-model NAME --sample-id ID,ID,...` runs one more model
on those samples only (what `inspect eval --sample-id` does) into `DIR/new/`.
"""

from __future__ import annotations

import argparse
import math
import random
from pathlib import Path

from inspect_ai import Task
from inspect_ai import eval as inspect_eval
from inspect_ai.dataset import Sample
from inspect_ai.model import GenerateConfig, ModelAPI, ModelOutput, get_model, modelapi
from inspect_ai.scorer import choice
from inspect_ai.solver import multiple_choice

N_QUESTIONS = 40
TASK = "inspect_demo"


@modelapi(name="demo")
def _demo():
    class Demo(ModelAPI):
        """Answers the right letter where `model_args["right"]` says so, else the wrong one."""

        def __init__(self, model_name, base_url=None, api_key=None, config=None, right=(), **kw):
            super().__init__(model_name, base_url, api_key, [], config or GenerateConfig())
            self.right = set(right)

        async def generate(self, input, tools, tool_choice, config):
            text = str(input[-1].content)
            j = next(int(w.strip("?")) for w in text.split() if w.strip("?").isdigit())
            letter = "A" if j in self.right else "B"
            return ModelOutput.from_content(model=self.model_name, content=f"ANSWER: {letter}")

        async def count_text_tokens(self, text: str) -> int:
            return len(text.split())

    return Demo


def task() -> Task:
    """40 two-choice questions `q0..q39`; the answer is always A (the models know it or not)."""
    samples = [
        Sample(id=f"q{j}", input=f"Question number {j}?", choices=["right", "wrong"], target="A")
        for j in range(N_QUESTIONS)
    ]
    return Task(dataset=samples, solver=multiple_choice(), scorer=choice(), name=TASK)


def model(name: str, seed: int) -> object:
    """A demo model whose ability is drawn from `seed`."""
    rng = random.Random(seed)
    ability = rng.gauss(0.0, 1.5)
    right = [j for j in range(N_QUESTIONS)
             if rng.random() < 1 / (1 + math.exp(-(ability - (j - 20) / 8)))]  # fmt: skip
    return get_model(f"demo/{name}", right=right)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("dir", type=Path)
    p.add_argument("--models", type=int, default=0, help="write this many models' logs")
    p.add_argument("--new-model", help="run one more model (its name) into DIR/new/")
    p.add_argument("--sample-id", help="with --new-model: only these samples (ID,ID,...)")
    args = p.parse_args()
    if args.models:
        models = [model(f"m{k:03d}", k) for k in range(args.models)]
        inspect_eval(task(), model=models, log_dir=str(args.dir / "logs"), display="none",
                     max_tasks=16)  # fmt: skip
        print(f"wrote {args.models} logs to {args.dir / 'logs'}")
    if args.new_model:
        ids = args.sample_id.split(",") if args.sample_id else None
        (log,) = inspect_eval(task(), model=model(args.new_model, 10_000), sample_id=ids,
                              log_dir=str(args.dir / "new"), display="none")  # fmt: skip
        print(f"wrote {log.location} ({len(log.samples or [])} samples)")


if __name__ == "__main__":
    main()
