"""PromptPATE as a system under audit: one-shot prompts to a language model as the teachers.

PromptPATE (Duan, Dziedzic, Papernot, Boenisch 2023, "Flocks of Stochastic Parrots",
arXiv:2305.15594) is PATE for in-context learning: each of m teachers is one prompt to a
language model holding the task description and **one private example**; a query is appended
to every teacher's prompt, each teacher answers, and the noisy argmax
(:class:`dpaudit.mechanisms.GNMax` or :class:`dpaudit.mechanisms.ConfidentGNMax`) of the
answers' histogram is released. Chadha et al. 2024 ("Auditing Private Prediction",
arXiv:2402.09403, §5.3, App. D.2) audit it with the prompt format of :data:`PROMPT_TASKS`
(AG News: ``Please classify the given text from news articles by topic as 0 (World) or 1
(Sports) …``).

**Training phase.** The m examples are drawn without replacement from the training set (one
seeded draw; the parties are fixed, as in CaPC); a teacher's answer is the label word with
the largest next-token logit (:mod:`dpaudit.systems.private_prediction._llm`: greedy,
temperature 0), so the training phase is deterministic and one instantiation gives the exact
votes (§5.3: no parametric assumption is needed). With ``instantiations > 1`` the same votes
are repeated.

**Neighbouring prompts.** A teacher's training set is one example, so the adversary's point
*replaces* the example of the teacher it chooses (``placement = "chosen"``; the paper's
Nat-AdvQ "swaps a train set example with a test query"). A crafted point is either a text
(S′ gives that teacher the example ``(text, label)``) or an object with a
``resolve(view) -> (teacher, TeacherPrompt)`` method that builds a whole poisoned prompt from
the adversary's view of S (:class:`PromptView`: the queries and every teacher's noiseless
vote on them), as the Pois-NatQ prompts of App. D.2 need (:mod:`dpaudit.attacks.prompt_pate`).
Either way exactly one teacher's vote can change, which is the neighbouring relation the
GNMax analysis covers (Papernot et al. 2018, arXiv:1802.08908, Prop. 8 and Thm 6: one
teacher's vote moves). ``retrain`` recomputes that teacher's votes (cached prompts cost
nothing) and repeats them R times. The histogram model is ``"deterministic"``
(:mod:`dpaudit.attacks.prompt_pate`): point-mass teachers, the affected teacher as reported by
``retrain``.

**Claim.** Data-dependent (primary) and data-independent RDP of the mechanism, as for PATE
(:func:`dpaudit.accounting.mechanism_rdp`, :func:`dpaudit.accounting.expected_data_dependent_rdp`).

Everything is validated (m ≥ 2, σ > 0, the task's label words tokenize to one token each or a
stated rule, non-empty prompts and texts) before the model is loaded.

Example:
    >>> from dpaudit.mechanisms import GNMax
    >>> pp = PromptPATE(10, GNMax(5.0), PromptPATEOptions(task="sst2"))
    >>> pp.template.instruction[:60]
    'Please classify the given text from movie reviews by sentime'
    >>> print(pp.template.query("a triumph"), end="|")
    Text: a triumph
    Answer: |
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from dpaudit._results import Claim, Curve
from dpaudit._rng import as_generator, seed_entropy
from dpaudit._settings import from_mapping, option
from dpaudit._typing import ArrayLike, FloatArray, IntArray, RngLike
from dpaudit._validate import check_choice, check_positive, check_positive_int
from dpaudit.mechanisms.values import ConfidentGNMax, GNMax
from dpaudit.systems._protocols import (
    SYSTEMS,
    SystemFactory,
    check_teacher_ensemble,
    noisy_argmax_query_rdp,
)
from dpaudit.systems.private_prediction._cell import PrivatePredictionCell
from dpaudit.systems.private_prediction._llm import LABEL_TOKEN_RULES, VOTE_DTYPES
from dpaudit.systems.private_prediction._prompts import (
    PROMPT_TASKS,
    PromptTemplate,
    TeacherPrompt,
    check_text,
    check_texts,
    make_template,
)
from dpaudit.systems.private_prediction._teachers import PairedVotes

__all__ = [
    "PROMPT_TASKS",
    "PromptPATE",
    "PromptPATEOptions",
    "PromptPairedVotes",
    "PromptTemplate",
    "PromptView",
    "PromptVotes",
    "TeacherPrompt",
    "check_texts",
    "make_template",
]


# =============================================================================================
# Options and training results
# =============================================================================================


@dataclasses.dataclass(frozen=True)
class PromptPATEOptions:
    """PromptPATE's own options (``[system.options.prompt-pate]``, parsed strictly)."""

    task: str = option(
        "sst2", help="prompt template (PROMPT_TASKS): sst2, ag-news, trec, dbpedia, …"
    )
    label_tokens: str = option(
        "single", help="label words: single (one token each) or first (first token stands)"
    )
    max_words: int | None = option(None, help="truncate every text to this many words")
    batch_size: int = option(32, help="queries per forward pass (KV-cached path)")
    vote_cache: bool = option(True, help="cache votes on disk (SQLite under cache_dir)")
    cache_dir: str | None = option(
        None, help="vote cache directory (default ~/.cache/dpaudit/votes)"
    )
    threads: int | None = option(None, help="torch threads while voting (torch default)")
    workers: int = option(1, help="processes voting in parallel (1 torch thread each)")
    dtype: str = option(
        "float32",
        help="precision of the KV-cached votes: float32 (the reference) or bfloat16 (opt-in, "
        "faster; answers can differ near ties)",
    )
    threshold: float | None = option(None, help="Confident GNMax threshold T (GNMax if unset)")
    sigma_threshold: float | None = option(None, help="Confident GNMax threshold noise sigma1")

    def __post_init__(self) -> None:
        check_choice("task", self.task, PROMPT_TASKS.names())
        check_choice("label_tokens", self.label_tokens, LABEL_TOKEN_RULES)
        if self.max_words is not None:
            check_positive_int("max_words", self.max_words)
        check_positive_int("batch_size", self.batch_size)
        if not isinstance(self.vote_cache, bool):
            raise TypeError(f"vote_cache must be a bool, got {self.vote_cache!r}")
        if self.cache_dir is not None and not (
            isinstance(self.cache_dir, str) and self.cache_dir.strip()
        ):
            raise ValueError(f"cache_dir must be a non-empty path, got {self.cache_dir!r}")
        if self.threads is not None:
            check_positive_int("threads", self.threads)
        check_positive_int("workers", self.workers)
        check_choice("dtype", self.dtype, VOTE_DTYPES)
        if (self.threshold is None) != (self.sigma_threshold is None):
            raise ValueError(
                "threshold and sigma_threshold go together (Confident GNMax), got "
                f"threshold={self.threshold!r}, sigma_threshold={self.sigma_threshold!r}"
            )
        if self.sigma_threshold is not None:
            check_positive("sigma_threshold", self.sigma_threshold)


@dataclasses.dataclass(frozen=True, eq=False)
class PromptVotes:
    """PromptPATE's training phase and its exact votes (the protocol's instantiations).

    Attributes:
        prompts: each teacher's :class:`TeacherPrompt`.
        example_rows: the training row of each teacher's example, ``(m,)``.
        queries: the query texts.
        predictions: int64 votes ``(N_g, n_q, m)`` (identical instantiations).
        logits: float32 label logits ``(n_q, m, C)``.
        num_classes: C.
        computed: votes run through the model (the rest came from the disk cache).
        seed: integer entropy of the seed, if any.
    """

    prompts: tuple[TeacherPrompt, ...]
    example_rows: IntArray
    queries: tuple[str, ...]
    predictions: IntArray
    logits: np.ndarray
    num_classes: int
    computed: int
    seed: int | None = None

    @property
    def num_teachers(self) -> int:
        """m."""
        return len(self.prompts)

    @property
    def histograms(self) -> IntArray:
        """The vote histogram of every query, ``(n_q, C)``."""
        v = self.predictions[0]
        return np.stack([np.bincount(r, minlength=self.num_classes) for r in v])


@dataclasses.dataclass(frozen=True)
class PromptPairedVotes(PairedVotes):
    """Paired votes of the re-prompted teacher, with the prompt S′ gave it.

    Attributes:
        prompt: the receiving teacher's prompt under S′.
    """

    prompt: TeacherPrompt | None = None


@dataclasses.dataclass(frozen=True)
class PromptView:
    """What an adversary knows of S when it builds a poisoned prompt (``resolve``).

    Attributes:
        template: the task's prompt template.
        queries: the query texts of the training phase.
        votes: every teacher's noiseless vote on them, ``(n_q, m)``.
        prompts: the teachers' prompts under S.
        num_classes: C.
    """

    template: PromptTemplate
    queries: tuple[str, ...]
    votes: IntArray
    prompts: tuple[TeacherPrompt, ...]
    num_classes: int

    @property
    def histograms(self) -> IntArray:
        """Vote histograms ``(n_q, C)``."""
        return np.stack([np.bincount(r, minlength=self.num_classes) for r in self.votes])


# =============================================================================================
# The system
# =============================================================================================


@dataclasses.dataclass(frozen=True)
class PromptPATE:
    """PromptPATE (Duan et al. 2023, arXiv:2305.15594; audited by Chadha et al. 2024 §5.3).

    Attributes:
        num_teachers: m ≥ 2 (one example each).
        mechanism: :class:`dpaudit.mechanisms.GNMax` or :class:`ConfidentGNMax`.
        options: :class:`PromptPATEOptions`.
        teachers_per_query: k ≤ m teachers voting per query (None: all).

    Raises:
        ValueError: m < 2, k ∉ [1, m], a task whose label words do not fit the model (checked
            when the model is loaded, before any vote).
        TypeError: a mechanism other than GNMax / Confident GNMax.
    """

    num_teachers: int
    mechanism: GNMax | ConfidentGNMax
    options: PromptPATEOptions = dataclasses.field(default_factory=PromptPATEOptions)
    teachers_per_query: int | None = None

    name: ClassVar[str] = "prompt-pate"
    placement: ClassVar[str] = "chosen"
    histogram_model: ClassVar[str] = "deterministic"
    stream_id: ClassVar[int | None] = 3
    claim_analysis: ClassVar[str] = "data-dependent"

    def __post_init__(self) -> None:
        m, _ = check_teacher_ensemble(self.num_teachers, self.mechanism, self.teachers_per_query)
        object.__setattr__(self, "num_teachers", m)
        if not isinstance(self.options, PromptPATEOptions):
            raise TypeError(f"options must be PromptPATEOptions, got {self.options!r}")

    @property
    def k(self) -> int:
        """Teachers voting per query."""
        return self.num_teachers if self.teachers_per_query is None else self.teachers_per_query

    @property
    def template(self) -> PromptTemplate:
        """The task's prompt template."""
        return PROMPT_TASKS.get(self.options.task)

    # ---------------------------------------------------------------- the language model

    def vote_cache_dir(self) -> Path:
        """Where votes are cached: ``options.cache_dir``, else ``votes/`` under
        :func:`dpaudit.systems.private_prediction._llm.default_cache_dir` (``~/.cache/dpaudit``).
        The model's dequantised copy always lives under the default cache root."""
        from dpaudit.systems.private_prediction._llm import default_cache_dir

        o = self.options
        if o.cache_dir is None:
            return default_cache_dir() / "votes"
        return Path(o.cache_dir).expanduser()

    def check_task(self) -> tuple[int, ...]:
        """The task's label words as tokens of the model's tokenizer (no weights loaded).

        Raises:
            ValueError: a label word is several tokens and ``label_tokens="single"``, or the
                words' tokens collide
                (:func:`dpaudit.systems.private_prediction._llm.label_token_ids`).
        """
        from dpaudit.systems.private_prediction._llm import label_token_ids, load_tokenizer

        t = self.template
        return label_token_ids(
            load_tokenizer(),
            t.label_words,
            answer_prefix=t.answer_prefix,
            rule=self.options.label_tokens,
        )

    def voter(self) -> Any:
        """The :class:`~dpaudit.systems.private_prediction._llm_voter.PromptVoter` of this system
        (loads the model)."""
        from dpaudit.systems.private_prediction._llm import VoteCache, load_language_model
        from dpaudit.systems.private_prediction._llm_voter import PromptVoter

        o = self.options
        lm = load_language_model()
        cache = None
        if o.vote_cache:
            cache = VoteCache(self.vote_cache_dir() / "prompt-votes.sqlite")
        t = self.template
        return PromptVoter(
            lm,
            t.label_words,
            t.answer_prefix,
            label_tokens=o.label_tokens,
            batch_size=o.batch_size,
            cache=cache,
            threads=o.threads,
            workers=o.workers,
            dtype=o.dtype,
        )

    def _text(self, text: str) -> str:
        if self.options.max_words is None:
            return text
        return " ".join(text.split()[: self.options.max_words])

    def prompt_votes(
        self,
        prompts: Sequence[TeacherPrompt],
        queries: Sequence[str],
        *,
        pairs: np.ndarray | None = None,
        voter: Any = None,
        progress: Any = None,
    ) -> Any:
        """Votes of the teachers holding ``prompts`` on ``queries`` (texts):
        :class:`~dpaudit.systems.private_prediction._llm_voter.VoteTable` with votes
        ``(n_q, len(prompts))`` (only the ``pairs`` ``(n_q, len(prompts))`` where given; −1
        elsewhere)."""
        t = self.template
        prefixes = [t.prefix(self._truncated(p)) for p in prompts]
        suffixes = [t.query(self._text(q)) for q in queries]
        v = self.voter() if voter is None else voter
        cb = None
        if progress is not None and progress is not False:
            from dpaudit._validate import check_progress

            report = check_progress(progress)

            def cb(done: int, total: int) -> None:
                report(done, total, "prompting teachers")

        return v.votes(prefixes, suffixes, pairs=pairs, progress=cb)

    def _truncated(self, prompt: TeacherPrompt) -> TeacherPrompt:
        if self.options.max_words is None:
            return prompt
        return TeacherPrompt(
            tuple((self._text(t), y) for t, y in prompt.examples), prompt.instruction
        )

    # ------------------------------------------------------------------ training phase

    def check_data(
        self, X: ArrayLike, y: ArrayLike, num_classes: int | None
    ) -> tuple[tuple[str, ...], IntArray, int]:
        """Texts, labels and C, validated against m and the task (before any model loads)."""
        texts = check_texts("X", X)
        labels = np.asarray(y)
        if labels.shape != (len(texts),) or labels.dtype.kind not in "iu":
            raise ValueError(f"y must hold one integer label per text ({len(texts)})")
        c = int(labels.max()) + 1 if num_classes is None else int(num_classes)
        if c != self.template.num_classes:
            raise ValueError(
                f"task {self.options.task!r} has {self.template.num_classes} classes, the data "
                f"{c}; choose the matching task"
            )
        if labels.min() < 0 or labels.max() >= c:
            raise ValueError(f"y must hold labels in 0..{c - 1}")
        if self.num_teachers > len(texts):
            raise ValueError(
                f"num_teachers must be at most the number of training texts {len(texts)}, "
                f"got {self.num_teachers}"
            )
        return texts, labels.astype(np.int64), c

    def train(
        self,
        X: ArrayLike,
        y: ArrayLike,
        queries: ArrayLike,
        *,
        instantiations: int = 1,
        num_classes: int | None = None,
        rng: RngLike = None,
        progress: Any = None,
    ) -> PromptVotes:
        """Draw one example per teacher and record every teacher's vote on ``queries``.

        Args:
            X: training texts ``(n,)``.
            y: their labels.
            queries: query texts ``(n_q,)``.
            instantiations: N_g ≥ 1 (deterministic: the votes are repeated).
            num_classes: C (must equal the task's).
            rng: seed of the examples' draw.
            progress: a progress callback or True.

        Returns:
            :class:`PromptVotes`.

        Raises:
            ValueError / TypeError: texts, labels, sizes or the task do not fit.
        """
        texts, labels, c = self.check_data(X, y, num_classes)
        qs = check_texts("queries", queries)
        ng = check_positive_int("instantiations", instantiations)
        self.check_task()
        gen = as_generator(rng)
        rows = gen.choice(len(texts), size=self.num_teachers, replace=False).astype(np.int64)
        prompts = tuple(TeacherPrompt(((texts[r], int(labels[r])),)) for r in rows)
        table = self.prompt_votes(prompts, qs, progress=progress)
        preds = np.repeat(table.votes[None], ng, axis=0)
        return PromptVotes(
            prompts, rows, qs, preds, table.logits, c, table.computed, seed_entropy(rng)
        )

    def view(self, trained: PromptVotes) -> PromptView:
        """The adversary's view of S (:class:`PromptView`)."""
        return PromptView(
            self.template,
            trained.queries,
            trained.predictions[0],
            trained.prompts,
            trained.num_classes,
        )

    def retrain(
        self,
        trained: PromptVotes,
        points: ArrayLike,
        labels: ArrayLike,
        *,
        retrainings: int = 1,
        eval_rows: Sequence[ArrayLike] | None = None,
        teachers: ArrayLike | None = None,
        rng: RngLike = None,
        progress: Any = None,
    ) -> list[PromptPairedVotes]:
        """Re-prompt the receiving teacher of each crafted point; its votes before and after.

        A text point replaces the example of ``teachers[p]`` with ``(text, label)``; a point
        with ``resolve(view)`` chooses its teacher and whole prompt itself (module notes).
        The votes are deterministic, so the R retrainings repeat one computation.

        Args:
            trained: from :meth:`train`.
            points: crafted texts or prompt builders ``(P,)``.
            labels: their labels ``(P,)``.
            retrainings: R ≥ 1.
            eval_rows: per point, the query texts to read the votes on (default: the point).
            teachers: per point, the receiving teacher (required for text points).
            rng: unused (deterministic); accepted for the protocol.
            progress: a progress callback or True.

        Returns:
            One :class:`PromptPairedVotes` per point.
        """
        del rng
        r_count = check_positive_int("retrainings", retrainings)
        pts = list(np.asarray(points, dtype=object).ravel())
        labs = np.atleast_1d(np.asarray(labels)).ravel()
        if labs.shape != (len(pts),):
            raise ValueError(f"labels must have shape ({len(pts)},), got {labs.shape}")
        if eval_rows is not None and len(eval_rows) != len(pts):
            raise ValueError(f"eval_rows must have one entry per point ({len(pts)})")
        view = self.view(trained)
        jobs = [
            self._neighbour_prompt(view, pts[p], int(labs[p]), p, teachers) for p in range(len(pts))
        ]
        evals = [
            check_texts("eval_rows", [pts[p]] if eval_rows is None else list(eval_rows[p]))
            for p in range(len(pts))
        ]
        before, after = self._paired_votes(trained, jobs, evals, progress)
        return [
            PromptPairedVotes(
                instantiation=np.zeros(r_count, dtype=np.int64),
                teacher=np.full(r_count, j, dtype=np.int64),
                before=np.repeat(b[None], r_count, axis=0),
                after=np.repeat(a[None], r_count, axis=0),
                prompt=prompt,
            )
            for (j, prompt), b, a in zip(jobs, before, after, strict=True)
        ]

    def _paired_votes(
        self,
        trained: PromptVotes,
        jobs: list[tuple[int, TeacherPrompt]],
        evals: list[tuple[str, ...]],
        progress: Any,
    ) -> tuple[list[IntArray], list[IntArray]]:
        """Votes of each receiving teacher before and after on its evaluation texts.

        "Before" votes on texts of the training phase are read from it (so they agree with
        the histograms by construction); every other vote is computed in one call of the
        voter (distinct prompts and texts once, the needed pairs only)."""
        known = {t: i for i, t in enumerate(trained.queries)}
        prompts: dict[TeacherPrompt, int] = {}
        texts: dict[str, int] = {}
        wanted: list[tuple[int, int]] = []
        for (j, prompt), ev in zip(jobs, evals, strict=True):
            for t in ev:
                if t not in known:
                    wanted.append(
                        (
                            texts.setdefault(t, len(texts)),
                            prompts.setdefault(trained.prompts[j], len(prompts)),
                        )
                    )
                wanted.append(
                    (texts.setdefault(t, len(texts)), prompts.setdefault(prompt, len(prompts)))
                )
        pairs = np.zeros((len(texts), len(prompts)), dtype=bool)
        rows, cols = zip(*wanted, strict=True) if wanted else ((), ())
        pairs[list(rows), list(cols)] = True
        table = self.prompt_votes(list(prompts), list(texts), pairs=pairs, progress=progress)
        base = trained.predictions[0]
        before, after = [], []
        for (j, prompt), ev in zip(jobs, evals, strict=True):
            before.append(
                np.array(
                    [
                        base[known[t], j]
                        if t in known
                        else table.votes[texts[t], prompts[trained.prompts[j]]]
                        for t in ev
                    ],
                    dtype=np.int64,
                )
            )
            after.append(table.votes[[texts[t] for t in ev], prompts[prompt]])
        return before, after

    def _neighbour_prompt(
        self, view: PromptView, point: Any, label: int, p: int, teachers: ArrayLike | None
    ) -> tuple[int, TeacherPrompt]:
        m = self.num_teachers
        if hasattr(point, "resolve"):
            j, prompt = point.resolve(view)
        else:
            if teachers is None:
                raise ValueError("teachers must name the receiving teacher of each text point")
            t = np.asarray(teachers, dtype=np.int64).ravel()
            j = int(t[p])
            if not 0 <= label < view.num_classes:
                raise ValueError(f"labels must be in [0, {view.num_classes}), got {label}")
            prompt = TeacherPrompt(((check_text("points", point), label),))
        if not isinstance(prompt, TeacherPrompt):
            raise TypeError(f"a crafted prompt must be a TeacherPrompt, got {prompt!r}")
        if not 0 <= int(j) < m:
            raise ValueError(f"the receiving teacher must be in [0, {m}), got {j}")
        return int(j), prompt

    # ------------------------------------------------------------------------ the claim

    def query_rdp(
        self,
        orders: ArrayLike,
        *,
        analysis: str = "data-independent",
        votes: np.ndarray | None = None,
        probabilities: np.ndarray | None = None,
        dropped_mass: float = 0.0,
        q: str = "union",
    ) -> FloatArray:
        """Claimed RDP of one answered query: :func:`dpaudit.accounting.mechanism_rdp`
        (Papernot et al. 2018, arXiv:1802.08908, Prop. 8) or its data-dependent Thm 6 in
        expectation over ``votes`` with ``probabilities``
        (:func:`dpaudit.accounting.expected_data_dependent_rdp`)."""
        return noisy_argmax_query_rdp(
            self.mechanism, orders, analysis=analysis, votes=votes,
            probabilities=probabilities, dropped_mass=dropped_mass, q=q,
        )  # fmt: skip

    def claim(self, orders: ArrayLike | None = None, *, delta: float | None = None) -> Claim:
        """The data-independent claim of one answered query (RDP curve, ε at ``delta``)."""
        from dpaudit.accounting import DEFAULT_ORDERS, RDPCurve

        lam = np.asarray(DEFAULT_ORDERS if orders is None else orders, dtype=np.float64)
        rdp = self.query_rdp(lam)
        eps = None if delta is None else float(RDPCurve(lam, rdp).to_dp(delta).epsilon)
        return Claim(
            analysis="data-independent",
            source="Papernot et al. 2018, arXiv:1802.08908, Prop. 8",
            epsilon=eps,
            delta=delta,
            rdp=Curve(lam, rdp),
            conversion=None if delta is None else "balle2020",
        )

    # ------------------------------------------------------------------- deployment

    def predict(self, trained: PromptVotes, *, rng: RngLike = None) -> IntArray:
        """Noisy answers to the trained queries (the private interface on its votes)."""
        return self.mechanism.answer(trained.histograms, rng=rng)


def _from_cell(cell: PrivatePredictionCell) -> PromptPATE:
    """PromptPATE from its :class:`PrivatePredictionCell` (m, k, σ, ``options["prompt-pate"]``)."""
    opts = from_mapping(PromptPATEOptions, dict(cell.options.get("prompt-pate", {})))
    mech: GNMax | ConfidentGNMax = GNMax(cell.sigma)
    if opts.threshold is not None:
        mech = ConfidentGNMax(opts.threshold, opts.sigma_threshold, cell.sigma)
    return PromptPATE(cell.teachers, mech, opts, cell.teachers_per_query)


SYSTEMS.register(
    "prompt-pate",
    SystemFactory(PrivatePredictionCell, _from_cell),
    tags=("private-prediction",),
)
