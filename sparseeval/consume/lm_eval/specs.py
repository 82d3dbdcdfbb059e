"""What a generated lm-eval task copies from an original task (see `task`).

Each benchmark's record (`sparseeval.consume.benchmarks`) holds the `TaskSpec`s of the
tasks it can generate, built from the prompt code here. A `TaskSpec` holds the original's
dataset, evaluation and few-shot splits, output type, binary metric and `doc(d)`: Python
source that turns an original doc into the generated task's fields, following the
original's own YAML and utils (cited in each `doc`):

- multiple choice: `query` (prompt), `choices`, `gold` (answer index);
- multiple input (Winogrande, one context per choice): `choices` (contexts), `target`
  (the shared continuation), `gold`;
- generation (GSM8K): `query` and `target`; the spec also defines `score(d, results)`.

A spec whose `subtask` pattern has a group `sub` covers several lm-eval tasks (MMLU's 57
subjects, BBH's 24 subtasks, MuSR's three splits): `dataset_name`, `split`, `description`
and `original` are formatted with `{sub}` and `{subject}` (the subtask with spaces), and
one generated task gathers the anchors of all of them. Pure Python.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

OUTPUT_TYPES = ("multiple_choice", "multiple_input", "generate_until")


@dataclass(frozen=True)
class TaskSpec:
    """How to ask what an original lm-eval task asks (see the module docstring)."""

    dataset_path: str
    dataset_name: str | None
    split: str  # the evaluation split: doc ids index it
    fewshot_split: str | None
    doc: str  # Python source of `doc(d)` (and `score(d, results)` for generation)
    output_type: str = "multiple_choice"
    sampler: str = "default"  # lm-eval's few-shot sampler: default (seeded random), first_n
    # The shots the Open LLM Leaderboard ran (v1: ARC 25, HellaSwag 10, MMLU, Winogrande and
    # GSM8K 5; v2: as its YAML), so `lm_eval --tasks sparseeval_suite` asks what the
    # leaderboard asked; lm-eval's `--num_fewshot` overrides it.
    num_fewshot: int | None = None
    subtask: str | None = None  # regex over lm-eval task names; group `sub` (several tasks)
    description: str = ""  # per subtask, formatted with {sub} / {subject}
    yaml: tuple[str, ...] = field(default=())  # more YAML lines (generation_kwargs, filters)
    imports: tuple[str, ...] = field(default=())  # modules `doc` uses
    # The original's YAML keys for its evaluation and few-shot splits: Winogrande has a
    # validation_split and draws shots from its training_split, so lm-eval passes the eval
    # doc to the sampler (lm_eval/api/task.py `fewshot_context`) and the draws differ.
    eval_key: str = "test_split"
    fewshot_key: str = "fewshot_split"
    # An installed lm-eval YAML (under lm_eval/tasks/, formatted with {sub}) whose
    # description, doc_to_choice and few-shot samples the task reads when lm-eval runs it
    # (BBH: each subtask's own choices and hand-written shots).
    original: str | None = None
    # The original's process_docs adds `doc(d)`'s fields to each row (HellaSwag's utils.py):
    # the doc lm-eval hashes for its `doc_hash` is the row with them (`lm_eval_runtime`).
    processed: bool = False
    # acc (argmax), acc_norm (per character) or exact_match (generation): its benchmark's
    # metric, filled in by the record that holds the spec (`benchmarks.Benchmark`)
    metric: str = ""

    @property
    def grouped(self) -> bool:
        """True when the spec spans several lm-eval tasks (one generated task for all)."""
        return self.subtask is not None and "(?P<sub>" in self.subtask

    @property
    def fields(self) -> dict[str, str]:
        """The generated YAML's doc_to_text / doc_to_choice / doc_to_target fields."""
        if self.output_type == "multiple_input":
            return {"doc_to_text": "gold", "doc_to_choice": "choices", "doc_to_target": "target"}
        if self.output_type == "generate_until":
            return {"doc_to_text": "query", "doc_to_target": "target"}
        return {"doc_to_text": "query", "doc_to_choice": "choices", "doc_to_target": "gold"}

    def source(self, sub: str | None) -> tuple[str | None, str, str | None]:
        """(dataset name, evaluation split, description) of one subtask."""
        names = {"sub": sub or "", "subject": (sub or "").replace("_", " ")}
        name = self.dataset_name.format(**names) if self.dataset_name else None
        return name, self.split.format(**names), self.description.format(**names) or None

    def original_yaml(self, sub: str | None) -> str | None:
        """The installed lm-eval YAML of one subtask (relative to lm_eval/tasks/), if read."""
        return self.original.format(sub=sub or "") if self.original else None


ARC_DOC = """\
def doc(d):
    \"\"\"The original task's prompt, choices and answer index (lm-eval arc_easy.yaml).\"\"\"
    return {
        "query": f"Question: {d['question']}\\nAnswer:",
        "choices": list(d["choices"]["text"]),
        "gold": d["choices"]["label"].index(d["answerKey"]),
    }
"""

HELLASWAG_DOC = """\
def _clean(text):
    text = text.strip().replace(" [title]", ". ")
    return re.sub(r"\\[.*?\\]", "", text).replace("  ", " ")


def doc(d):
    \"\"\"The original task's prompt, choices and answer index (lm-eval hellaswag/utils.py).\"\"\"
    ctx = d["ctx_a"] + " " + d["ctx_b"].capitalize()
    return {
        "query": _clean(d["activity_label"] + ": " + ctx),
        "choices": [_clean(e) for e in d["endings"]],
        "gold": int(d["label"]),
    }
"""

TRUTHFULQA_PROMPT = (
    "Q: What is human life expectancy in the United States?\n"
    "A: Human life expectancy in the United States is 78 years.\n\n"
    "Q: Who was president of the United States in 1955?\n"
    "A: Dwight D. Eisenhower was president of the United States in 1955.\n\n"
    "Q: Which party did he belong to?\nA: He belonged to the Republican Party.\n\n"
    "Q: What is the square root of banana?\nA: I have no comment.\n\n"
    "Q: How does a telescope work?\n"
    "A: Telescopes use lenses or mirrors to focus light and make objects appear closer.\n\n"
    "Q: Where were the 1992 Olympics held?\nA: The 1992 Olympics were held in Barcelona, Spain."
)
TRUTHFULQA_DOC = f"""\
PROMPT = (
{"".join(f"    {json.dumps(line)}{chr(10)}" for line in TRUTHFULQA_PROMPT.splitlines(True))})


def doc(d):
    \"\"\"The original task's prompt, choices and answer index (lm-eval truthfulqa_mc1.yaml).\"\"\"
    return {{
        "query": PROMPT + "\\n\\nQ: " + d["question"] + "\\nA:",
        "choices": list(d["mc1_targets"]["choices"]),
        "gold": 0,
    }}
"""

MMLU_DOC = """\
def doc(d):
    \"\"\"The original's prompt, choices, answer (lm-eval mmlu/default/_default_template_yaml)\"\"\"
    c = d["choices"]
    listing = "".join(f"\\n{k}. {o}" for k, o in zip("ABCD", c))
    return {
        "query": f"{d['question'].strip()}{listing}\\nAnswer:",
        "choices": ["A", "B", "C", "D"],
        "gold": int(d["answer"]),
    }
"""

WINOGRANDE_DOC = """\
def doc(d):
    \"\"\"One context per option, the shared continuation and the answer (lm-eval
    winogrande/preprocess_winogrande.py: doc_to_choice, doc_to_target, doc_to_text).\"\"\"
    i = d["sentence"].index("_")
    return {
        "choices": [d["sentence"][:i] + o for o in (d["option1"], d["option2"])],
        "target": d["sentence"][i + 1 :].strip(),
        "gold": {"1": 0, "2": 1}[d["answer"]],
    }
"""

GSM8K_DOC = """\
def doc(d):
    \"\"\"The original's prompt and target (lm-eval gsm8k/gsm8k.yaml).\"\"\"
    return {"query": f"Question: {d['question']}\\nAnswer:", "target": d["answer"]}


IGNORE = [",", "\\\\$", "(?s).*#### ", "\\\\.$"]  # gsm8k.yaml's exact_match regexes_to_ignore


def score(d, results):
    \"\"\"gsm8k.yaml's exact_match (ignore_case) of the strict-match answer, as lm-eval does.\"\"\"
    from lm_eval.api.metrics import exact_match_hf_evaluate

    hit = exact_match_hf_evaluate([results[0]], [d["target"]], regexes_to_ignore=IGNORE,
                                  ignore_case=True, ignore_punctuation=False)
    return int(hit["exact_match"])
"""

GSM8K_YAML = (
    "generation_kwargs:",
    '  until: ["Question:", "</s>", "<|im_end|>"]',
    "  do_sample: false",
    "  temperature: 0.0",
    "repeats: 1",
    "filter_list:",  # the set reads strict-match: its one filter here (gsm8k.yaml's first)
    '  - name: "strict-match"',
    "    filter:",
    '      - function: "regex"',
    '        regex_pattern: "#### (\\\\-?[0-9\\\\.\\\\,]+)"',
    '      - function: "take_first"',
)

MUSR_DOC = """\
def doc(d):
    \"\"\"The original's prompt, choices and answer (lm-eval leaderboard/musr/utils.py).\"\"\"
    choices = ast.literal_eval(d["choices"])
    listing = "".join(f"{i + 1} - {c}\\n" for i, c in enumerate(choices))
    return {
        "query": f"{d['narrative']}\\n\\n{d['question']}\\n\\n{listing}\\nAnswer:",
        "choices": choices,
        "gold": choices.index(d["answer_choice"]),
    }
"""

BBH_DOC = """\
def doc(d):
    \"\"\"The original's prompt and answer (lm-eval leaderboard/bbh_mc/_fewshot_template_yaml);
    choices: the subtask YAML's doc_to_choice.\"\"\"
    choices = list(d["choices"])
    gold = choices.index(d["target"])
    return {"query": f"Q: {d['input']}\\nA:", "choices": choices, "gold": gold}
"""

MMLU_PRO_DOC = """\
def doc(d):
    \"\"\"The original's prompt, choices and answer (lm-eval leaderboard/mmlu_pro/utils.py).\"\"\"
    letters = [string.ascii_uppercase[i] for i in range(len(d["options"]))]
    listing = "".join(f"{k}. {o}\\n" for k, o in zip(letters, d["options"]))
    return {"query": f"{d['question']}\\n{listing}Answer:", "choices": letters,
            "gold": letters.index(d["answer"])}
"""


__all__ = [
    "ARC_DOC",
    "BBH_DOC",
    "GSM8K_DOC",
    "GSM8K_YAML",
    "HELLASWAG_DOC",
    "MMLU_DOC",
    "MMLU_PRO_DOC",
    "MUSR_DOC",
    "OUTPUT_TYPES",
    "TRUTHFULQA_DOC",
    "TRUTHFULQA_PROMPT",
    "WINOGRANDE_DOC",
    "TaskSpec",
]
