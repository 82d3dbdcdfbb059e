"""Real Inspect AI logs for tests, written offline by inspect-ai itself.

`mockllm/model` counts tokens with tiktoken's `o200k_base`, which it downloads at run time,
so offline every sample errors; the model API registered here (`fixed/NAME`) answers from
a table and counts tokens by words, so `inspect_ai.eval` writes real logs in about a second.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

inspect_ai = pytest.importorskip("inspect_ai")

from inspect_ai import Task  # noqa: E402
from inspect_ai import eval as inspect_eval  # noqa: E402
from inspect_ai.dataset import Sample  # noqa: E402
from inspect_ai.model import GenerateConfig, ModelAPI, ModelOutput, modelapi  # noqa: E402
from inspect_ai.scorer import Score, Target, choice, mean, scorer  # noqa: E402
from inspect_ai.solver import TaskState, multiple_choice  # noqa: E402

QUESTIONS = {  # id -> (question, choices, target letter)
    "q1": ("2+2?", ["4", "5"], "A"),
    "q2": ("3+3?", ["5", "6"], "B"),
    3: ("1+1?", ["2", "3"], "A"),
    "q4": ("5+5?", ["11", "10"], "B"),
}


@modelapi(name="fixed")
def _fixed():
    class Fixed(ModelAPI):
        """Answers `ANSWER: X` with X from `model_args["answers"]` {question: letter} (A else)."""

        def __init__(self, model_name, base_url=None, api_key=None,
                     config=None, answers=None, **kw):  # fmt: skip
            super().__init__(model_name, base_url, api_key, [], config or GenerateConfig())
            self.answers = dict(answers or {})

        async def generate(self, input, tools, tool_choice, config):
            text = str(input[-1].content)
            if "boom" in text:
                raise RuntimeError("model crashed")
            letter = next((a for q, a in self.answers.items() if q in text), "A")
            return ModelOutput.from_content(model=self.model_name, content=f"ANSWER: {letter}")

        async def count_text_tokens(self, text: str) -> int:
            return len(text.split())

    return Fixed


@scorer(metrics=[mean()])
def _from_metadata():
    """A graded scorer: each sample's score is its metadata's `score`."""

    async def score(state: TaskState, target: Target) -> Score:
        return Score(value=state.metadata["score"])

    return score


def mc_task(ids=None, name: str = "toy_mc", questions=None) -> Task:
    """A multiple-choice task over `QUESTIONS` (or `questions`), scored by `choice()`."""
    table = questions or QUESTIONS
    samples = [
        Sample(id=i, input=q, choices=c, target=t)
        for i, (q, c, t) in table.items() if ids is None or i in ids
    ]  # fmt: skip
    return Task(dataset=samples, solver=multiple_choice(), scorer=choice(), name=name)


def chat_task(name: str = "toy_chat") -> Task:
    """Two samples given as chat messages (Inspect draws each message's id per run), with the
    same choices and target: only their inputs tell them apart."""
    from inspect_ai.model import ChatMessageSystem, ChatMessageUser

    samples = [
        Sample(id=i, input=[ChatMessageSystem(content="Be brief."), ChatMessageUser(content=q)],
               choices=["4", "5"], target="A")
        for i, q in (("c1", "2+2?"), ("c2", "1+3?"))
    ]  # fmt: skip
    return Task(dataset=samples, solver=multiple_choice(), scorer=choice(), name=name)


def graded_task(scores: dict, name: str = "toy_graded") -> Task:
    """A task whose samples score `scores[id]` (0.43, "P", 1, ...)."""
    samples = [Sample(id=i, input=f"say {i}", target="x", metadata={"score": v})
               for i, v in scores.items()]  # fmt: skip
    return Task(dataset=samples, scorer=_from_metadata(), name=name)


def write_log(
    log_dir: Path, task: Task, model: str = "fixed/m1", answers=None, epochs: int = 1,
    fmt: str = "eval", fail_on_error: bool = False, sample_id: list | None = None,
) -> Path:  # fmt: skip
    """Run `task` with Inspect into `log_dir`; the log file written (`fail_on_error`: a
    sample's error ends the run, status `error`; else the sample alone errors; `sample_id`:
    run only these samples, as `inspect eval --sample-id` does)."""
    (log,) = inspect_eval(
        task, model=model, model_args={"answers": answers or {}}, log_dir=str(log_dir),
        epochs=epochs, log_format=fmt, display="none", fail_on_error=fail_on_error,
        sample_id=sample_id,
    )  # fmt: skip
    return Path(log.location)


def still_running(log: Path, out: Path) -> Path:
    """A copy of a finished `.eval` log as it is while its run goes on: without `header.json`,
    `summaries.json` and `reductions.json` (a copy taken mid-run by inspect-ai 0.3.285 holds
    only `_journal/start.json`, the finished samples and `_journal/summaries/*`)."""
    ending = {"header.json", "summaries.json", "reductions.json"}
    with zipfile.ZipFile(log) as src, zipfile.ZipFile(out, "w") as dst:
        for info in src.infolist():
            if info.filename not in ending:
                dst.writestr(info, src.read(info), compress_type=info.compress_type)
    return out
