"""One record per benchmark: everything the library knows about it, in one place.

A `Benchmark` holds its lm-eval task names (regexes; a group `sub` is the item prefix, so
MMLU, BBH, GPQA, MATH and MuSR items are `subtask:index`), the metrics its samples are read
with, the lm-eval task whose doc ids its bare anchor ids are, the lm-eval tasks it can
generate (`lm_eval.specs.TaskSpec`, or why none), and how the Open LLM Leaderboard scored
it (`LeaderboardV1`: details configs and results-file entries; `LeaderboardV2`: results
entries and normalization). Every other module reads these records through `records()`
at call time, so adding a benchmark with full leaderboard and lm-eval support is adding
one record to `BENCHMARKS` (the order is the store's benchmark order). Pure Python.

Readers: `taskmap` (task names, metrics, item ids), `benchmarks.find_spec` and
`lm_eval.task` (generated tasks), `pipeline.store.scores` and `score_files`
(reported scores), `pipeline.store.db` (the benchmarks every store knows).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

from sparseeval.consume.lm_eval import specs as p
from sparseeval.consume.lm_eval.specs import TaskSpec

MMLU_SUBJECTS = frozenset(  # the 57 subjects (lm-eval mmlu/)
    """
    abstract_algebra anatomy astronomy business_ethics clinical_knowledge college_biology
    college_chemistry college_computer_science college_mathematics college_medicine
    college_physics computer_security conceptual_physics econometrics electrical_engineering
    elementary_mathematics formal_logic global_facts high_school_biology high_school_chemistry
    high_school_computer_science high_school_european_history high_school_geography
    high_school_government_and_politics high_school_macroeconomics high_school_mathematics
    high_school_microeconomics high_school_physics high_school_psychology
    high_school_statistics high_school_us_history high_school_world_history human_aging
    human_sexuality international_law jurisprudence logical_fallacies machine_learning
    management marketing medical_genetics miscellaneous moral_disputes moral_scenarios
    nutrition philosophy prehistory professional_accounting professional_law
    professional_medicine professional_psychology public_relations security_studies
    sociology us_foreign_policy virology world_religions
""".split()  # noqa: SIM905 (a word list, one name per word)
)
BBH_SUBTASKS = tuple(  # the leaderboard's 24 BBH subtasks (lm-eval leaderboard/bbh_mc/)
    """
    boolean_expressions causal_judgement date_understanding disambiguation_qa
    formal_fallacies geometric_shapes hyperbaton logical_deduction_five_objects
    logical_deduction_seven_objects logical_deduction_three_objects movie_recommendation
    navigate object_counting penguins_in_a_table reasoning_about_colored_objects ruin_names
    salient_translation_error_detection snarks sports_understanding temporal_sequences
    tracking_shuffled_objects_five_objects tracking_shuffled_objects_seven_objects
    tracking_shuffled_objects_three_objects web_of_lies
""".split()  # noqa: SIM905
)
MUSR_SUBTASKS = ("murder_mysteries", "object_placements", "team_allocation")

# Names the published layout gives a meaning of its own, which no benchmark may take: the
# suite's set and its average, the `latest` pointer, budget folders `kN`, versions `vN`.
RESERVED_NAMES = re.compile(r"(?i)suite|average|latest|[kv]\d+")


@dataclass(frozen=True)
class LeaderboardV1:
    """How the Open LLM Leaderboard v1 read and scored a benchmark."""

    config: str  # details config regex (`harness_{config}_{shots}`), group `sub` as tasks
    metrics: tuple[str, ...]  # read from its details samples, most preferred first
    # The results-file entry of the reported score; `{sub}`: the mean of `metric` over the
    # entries of every subtask (`Benchmark.subtasks`), stored only when all are there.
    results_key: str
    metric: str
    definition: str  # the reported score in words (DESIGN.md, "Reported score")
    items: int  # how many items the leaderboard asked (the synthetic leaderboard's shape)
    # A results key whose `versions` entry 0 marks an older benchmark (MMLU): skipped.
    stale_version: str | None = None


@dataclass(frozen=True)
class LeaderboardV2:
    """How the Open LLM Leaderboard v2 scored a benchmark (with the record's metric).

    group: the results entry scored, normalized from 1/choices (random) to 1 (raw when
    choices is None); no group: each subtask normalized by its own number of choices (read
    from its samples), then averaged."""

    name: str  # as the leaderboard shows it
    group: str | None = None
    choices: int | None = None


@dataclass(frozen=True)
class Benchmark:
    """Everything the library knows about one benchmark (see the module docstring)."""

    name: str
    description: str  # one line, stored with the benchmark
    tasks: tuple[str, ...]  # lm-eval task regexes (full match); group `sub`: item prefix
    metrics: tuple[str, ...]  # read from its lm-eval samples, most preferred first
    default_task: str | None = None  # the lm-eval task of bare doc-id anchor ids
    aliases: tuple[str, ...] = ()  # more names whose bare ids are `default_task`'s
    subtasks: frozenset[str] | None = None  # the only `sub` values its tasks take (None: any)
    # Item ids `{prefix}{subtask}:index` (prefix optional) are lm-eval task `subtask_task`.
    id_prefixes: tuple[str, ...] = ()
    subtask_task: str | None = None
    specs: dict[str, TaskSpec] = field(default_factory=dict)  # generated tasks, by lm-eval name
    not_generated: str = ""  # why it has no generated task (said when refused)
    v1: LeaderboardV1 | None = None
    v2: LeaderboardV2 | None = None

    def __post_init__(self) -> None:
        specs = {k: replace(s, metric=self.metric) for k, s in self.specs.items()}
        object.__setattr__(self, "specs", specs)  # each spec scores with the record's metric

    @property
    def metric(self) -> str:
        """The benchmark's metric: the first it is read with."""
        return self.metrics[0]


def _v1(config: str, metrics: tuple[str, ...], key: str, metric: str, what: str, items: int,
        **kw) -> LeaderboardV1:  # fmt: skip
    """A v1 record whose definition is `Open LLM Leaderboard v1 {what}`."""
    what = f"Open LLM Leaderboard v1 {what}"
    return LeaderboardV1(config, metrics, key, metric, what, items, **kw)


_ARC = ("allenai/ai2_arc", "test", "train", p.ARC_DOC)
BENCHMARKS: tuple[Benchmark, ...] = (
    Benchmark(
        "arc", "ARC-Challenge (25-shot), acc_norm", ("arc_challenge",), ("acc_norm",),
        "arc_challenge", ("arc_challenge",),
        specs={"arc_challenge": TaskSpec(_ARC[0], "ARC-Challenge", *_ARC[1:], num_fewshot=25),
               "arc_easy": TaskSpec(_ARC[0], "ARC-Easy", *_ARC[1:], num_fewshot=25)},
        v1=_v1("arc_challenge", ("acc_norm",), "harness|arc:challenge|25", "acc_norm",
               "ARC-Challenge (25-shot): acc_norm", 1172)),
    Benchmark(
        "gsm8k", "GSM8K (5-shot), acc / exact_match", ("gsm8k",), ("exact_match", "acc"),
        "gsm8k",
        specs={"gsm8k": TaskSpec("openai/gsm8k", "main", "test", "train", p.GSM8K_DOC,
                                 output_type="generate_until", num_fewshot=5,
                                 yaml=p.GSM8K_YAML)},
        v1=_v1("gsm8k", ("acc",), "harness|gsm8k|5", "acc",
               "GSM8K (5-shot): acc (exact match)", 1319)),
    Benchmark(
        "hellaswag", "HellaSwag (10-shot), acc_norm", ("hellaswag",), ("acc_norm",),
        "hellaswag",
        specs={"hellaswag": TaskSpec("Rowan/hellaswag", None, "validation", "train",
                                     p.HELLASWAG_DOC, num_fewshot=10, imports=("re",),
                                     processed=True)},
        v1=_v1("hellaswag", ("acc_norm",), "harness|hellaswag|10", "acc_norm",
               "HellaSwag (10-shot): acc_norm", 10042)),
    Benchmark(
        "mmlu", "MMLU, 57 subjects, items `subject:index`, acc",
        (r"mmlu_(?P<sub>\w+)", r"hendrycksTest-(?P<sub>\w+)"), ("acc",),
        subtasks=MMLU_SUBJECTS, subtask_task="mmlu_{sub}",
        id_prefixes=("mmlu_", "hendrycksTest-", "hendrycksTest_", "mmlu:"),
        specs={"mmlu": TaskSpec(
            "cais/mmlu", "{sub}", "test", "dev", p.MMLU_DOC, sampler="first_n", num_fewshot=5,
            subtask=rf"mmlu_(?P<sub>{'|'.join(sorted(MMLU_SUBJECTS))})",
            description="The following are multiple choice questions (with answers) about "
                        "{subject}.\n\n")},
        v1=_v1(r"hendrycksTest_(?P<sub>\w+)", ("acc",), "harness|hendrycksTest-{sub}|5", "acc",
               "MMLU (5-shot): mean of 57 subject accuracies", 14042,
               stale_version="harness|hendrycksTest-abstract_algebra|5")),
    Benchmark(
        "truthfulqa", "TruthfulQA MC (0-shot), mc1", ("truthfulqa_mc1",), ("acc",),
        "truthfulqa_mc1", ("truthfulqa_mc", "truthfulqa_mc1"),
        specs={"truthfulqa_mc1": TaskSpec("truthfulqa/truthful_qa", "multiple_choice",
                                          "validation", None, p.TRUTHFULQA_DOC)},
        v1=_v1("truthfulqa_mc", ("mc1",), "harness|truthfulqa:mc|0", "mc2",
               "TruthfulQA (0-shot): mc2", 817)),
    Benchmark(
        "winogrande", "Winogrande (5-shot), acc", ("winogrande",), ("acc",), "winogrande",
        specs={"winogrande": TaskSpec(
            "allenai/winogrande", "winogrande_xl", "validation", "train", p.WINOGRANDE_DOC,
            output_type="multiple_input", num_fewshot=5, eval_key="validation_split",
            fewshot_key="training_split")},
        v1=_v1("winogrande", ("acc",), "harness|winogrande|5", "acc",
               "Winogrande (5-shot): acc", 1267)),
    Benchmark(
        "bbh", "BBH (leaderboard v2), items `subtask:index`, acc_norm",
        (r"leaderboard_bbh_(?P<sub>\w+)",), ("acc_norm",), subtasks=frozenset(BBH_SUBTASKS),
        specs={"leaderboard_bbh": TaskSpec(
            "SaylorTwift/bbh", "{sub}", "test", None, p.BBH_DOC, sampler="first_n",
            num_fewshot=3, subtask=rf"(?:leaderboard_bbh_)?(?P<sub>{'|'.join(BBH_SUBTASKS)})",
            original="leaderboard/bbh_mc/{sub}.yaml")},
        v2=LeaderboardV2("BBH")),
    Benchmark(
        "gpqa", "GPQA (leaderboard v2), items `subtask:index`, acc_norm",
        (r"leaderboard_gpqa_(?P<sub>\w+)",), ("acc_norm",),
        not_generated="lm-eval shuffles GPQA's choices with the global RNG while loading, so"
                      " a generated task cannot ask the same questions",
        v2=LeaderboardV2("GPQA", "leaderboard_gpqa", 4)),
    Benchmark(
        "ifeval", "IFEval (leaderboard v2), prompt_level_strict_acc", ("leaderboard_ifeval",),
        ("prompt_level_strict_acc",), "leaderboard_ifeval",
        not_generated="scored by lm-eval's instruction checkers (langdetect, immutabledict,"
                      " nltk)"),
    Benchmark(
        "math_hard", "MATH level 5 (leaderboard v2), items `subtask:index`, exact_match",
        (r"leaderboard_math_(?P<sub>\w+)_hard",), ("exact_match",),
        not_generated="scored by lm-eval's math-equivalence checker (sympy, math_verify)",
        v2=LeaderboardV2("MATH Lvl 5", "leaderboard_math_hard")),
    Benchmark(
        "mmlu_pro", "MMLU-Pro (leaderboard v2), acc", ("leaderboard_mmlu_pro",), ("acc",),
        "leaderboard_mmlu_pro",
        specs={"leaderboard_mmlu_pro": TaskSpec(
            "TIGER-Lab/MMLU-Pro", None, "test", "validation", p.MMLU_PRO_DOC, sampler="first_n",
            num_fewshot=5, imports=("string",))},
        v2=LeaderboardV2("MMLU-Pro", "leaderboard_mmlu_pro", 10)),
    Benchmark(
        "musr", "MuSR (leaderboard v2), items `subtask:index`, acc_norm",
        (r"leaderboard_musr_(?P<sub>\w+)",), ("acc_norm",), subtasks=frozenset(MUSR_SUBTASKS),
        specs={"leaderboard_musr": TaskSpec(
            "TAUR-Lab/MuSR", None, "{sub}", None, p.MUSR_DOC, imports=("ast",),
            subtask=rf"(?:leaderboard_musr_)?(?P<sub>{'|'.join(MUSR_SUBTASKS)})")},
        v2=LeaderboardV2("MuSR")),
)  # fmt: skip


def records() -> tuple[Benchmark, ...]:
    """Every benchmark's record, in the store's order (read at each call)."""
    return BENCHMARKS


def record(name: str) -> Benchmark | None:
    """The record of a benchmark name, or None."""
    return next((b for b in records() if b.name == name), None)


def of_task(task: str) -> str | None:
    """The benchmark one of whose lm-eval tasks `task` is (`arc_challenge` -> `arc`), or None."""
    return next((b.name for b in records() if any(re.fullmatch(t, task) for t in b.tasks)), None)


def task_specs() -> dict[str, TaskSpec]:
    """{lm-eval task name: spec} of every task a benchmark can generate."""
    return {k: s for b in records() for k, s in b.specs.items()}


def find_spec(task: str) -> tuple[str, TaskSpec, str | None] | None:
    """(spec key, spec, subtask) of an lm-eval task name, or None when no spec covers it."""
    specs = task_specs()
    if task in specs and specs[task].subtask is None:
        return task, specs[task], None
    for key, spec in specs.items():
        m = re.fullmatch(spec.subtask, task) if spec.subtask else None
        if m:
            return key, spec, m.groupdict().get("sub")
    return None


def why_not(benchmark: str) -> str:
    """Why a benchmark has no generated task (a parenthesis), for the refusal message."""
    b = record(benchmark)
    return f" ({b.not_generated})" if b and b.not_generated else ""


__all__ = [
    "BBH_SUBTASKS",
    "BENCHMARKS",
    "MMLU_SUBJECTS",
    "MUSR_SUBTASKS",
    "RESERVED_NAMES",
    "Benchmark",
    "LeaderboardV1",
    "LeaderboardV2",
    "find_spec",
    "of_task",
    "record",
    "records",
    "task_specs",
    "why_not",
]
