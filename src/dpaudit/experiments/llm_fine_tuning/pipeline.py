"""The LLM fine-tuning audit (``dpaudit audit llm-fine-tuning``): one run for every kind.

1. **data** — the fine-tuning texts (:func:`load_texts`): the corpus' training split, a
   seeded random ``examples`` of them, one training sequence each; its held-out split
   pre-trains the tiny GPT;
2. **model** — the pre-trained model (:func:`load_model`): the tiny GPT trained from scratch,
   or SmolLM2-135M-Instruct;
3. **canaries** — per kind (:data:`dpaudit.attacks.LLM_CANARY_KINDS`) k canaries
   (:func:`dpaudit.attacks.draw_llm_canaries`), each inserted with probability ``inclusion``;
   an inserted canary is ``repetitions`` r training examples (r copies, each Poisson-sampled
   on its own). With ``joint`` (the default) every kind's canaries go into **one**
   fine-tuning run, each kind with prefixes and inclusions of its own, and each kind is
   analysed on its own: for one kind's one-run game the other kinds' canaries are ordinary
   training data, independent of its inclusions, so its bound is as valid as in a run of its
   own (the game of Steinke, Nasr & Jagielski 2023, arXiv:2305.08846, needs only independent
   inclusions and DP for any fixed rest of the data; Panda et al. 2025, arXiv:2503.06808,
   audit with many canaries in one run). Without it, one run per kind (the prefixes and
   inclusions shared); a single kind draws the same canaries and run either way;
4. per run and kind —

   * the fine-tuning run of the system (its cell from the settings; inputs checked before
     training: canaries longer than the context, a tokenizer without room for new tokens, a
     model without a causal LM head are refused);
   * the secrets' losses under the fine-tuned and the pre-trained model, and the three scores
     (:data:`dpaudit.attacks.LLM_SCORES`);
   * per score: the valid one-run lower bound — Steinke, Nasr & Jagielski 2023
     (arXiv:2305.08846) and Mahloujifar, Melis & Chaudhuri 2024 (arXiv:2410.22235), the
     number of guesses paid for by ``selection`` and the choice of procedure by Bonferroni
     (:func:`dpaudit.bounds.one_run_bounds`) — and beside it the membership metrics (TPR at
     1 % and 0.1 % FPR, AUC: descriptive, not bounds). The game's unit is the canary, so with
     r > 1 the bound is tested against the claim for a group of r examples
     (:meth:`dpaudit.systems.DPFineTuning.group_claim`, the primary claim of the entry; the
     example-level claim beside it): a bound above the example-level ε but below the group's
     does not refute anything;
   * greedy extraction of every secret (members and non-members counted apart);

5. per run and **threat model** (``[audit] threat_models``,
   :data:`dpaudit.attacks.LLM_THREAT_MODELS`) the model the scores above are read from:
   ``model`` — the fine-tuned model (the default); ``synthetic-text`` — only N sequences
   sampled from the fine-tuned model are released, and the scores are read from an
   auxiliary model, the pre-trained model fine-tuned non-privately on them (Mitchell,
   Andrew, Ganesh, McMahan & Kairouz 2026, arXiv:2606.10481). By post-processing its
   one-run bound is a valid lower bound for the release of the synthetic text, tested against
   the DP model's claim; beside it how many canaries appear verbatim in the synthetic text.

Each entry's bound is valid on its own at its confidence; the largest over the entries (kinds
× scores) is not, unless paid for (Bonferroni over the entries: confidence 1 − β·entries).
"""

from __future__ import annotations

import dataclasses
import itertools
import time
from typing import Any

import numpy as np

from dpaudit._results import AuditEntry, AuditResult, LowerBound, ResultMixin, package_versions
from dpaudit._rng import as_generator, child_seed
from dpaudit.attacks import (
    LLM_SCORES,
    LLM_THREAT_MODELS,
    AuditedLM,
    MembershipMetrics,
    canary_scores,
    draw_llm_canaries,
    greedy_extraction,
    membership_metrics,
    secret_losses,
)
from dpaudit.attacks._llm_synthetic import SyntheticTextRun
from dpaudit.bounds import OneRunBounds, one_run_bounds
from dpaudit.experiments.llm_fine_tuning.settings import (
    LLMDataSettings,
    LLMFineTuningSettings,
    LLMModelSettings,
)
from dpaudit.systems import SYSTEMS, CausalLM

__all__ = ["WORKFLOW", "LLMDetail", "LLMReleaseDetail", "LLMRunSummary",
           "audit_llm_fine_tuning", "load_model", "load_texts"]  # fmt: skip

WORKFLOW = "llm-fine-tuning"


@dataclasses.dataclass(frozen=True)
class LLMRunSummary(ResultMixin):
    """One fine-tuning run (one canary kind).

    Attributes:
        kind: the canary kind.
        model: the pre-trained model's name.
        examples: fine-tuning texts n; ``canaries`` k of which ``inserted`` were.
        canaries: k.
        inserted: canaries inserted.
        new_tokens: new vocabulary entries of the run.
        trainable_parameters: parameters trained.
        noise_multiplier: σ of the claim (None: non-private); ``noise_multiplier_used``: the
            optimizer's.
        noise_multiplier_used: σ the optimizer used.
        mean_sampled: mean steps an inserted canary was sampled in (its copies' together).
        repetitions: copies of each inserted canary r.
        kinds_trained: the kinds whose canaries the run held (every kind when joint: the
            other kinds' canaries are ordinary training data for this kind's game).
        extracted_members, extracted_non_members: secrets extracted by greedy decoding
            (None: not tried).
        mean_loss_members, mean_loss_non_members: mean secret loss (nats per token).
        seconds: training wall seconds; ``seconds_per_step`` their mean per step.
        seconds_per_step: training seconds per step.
        variant: the implementation; ``bug``: what it gets wrong (None: correct).
        bug: the planted bug.
    """

    kind: str
    model: str
    examples: int
    canaries: int
    inserted: int
    new_tokens: int
    trainable_parameters: int
    noise_multiplier: float | None
    noise_multiplier_used: float | None
    mean_sampled: float
    extracted_members: int | None
    extracted_non_members: int | None
    mean_loss_members: float
    mean_loss_non_members: float
    seconds: float
    seconds_per_step: float
    variant: str
    bug: str | None
    repetitions: int = 1
    kinds_trained: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class LLMReleaseDetail(ResultMixin):
    """One kind's canaries under the ``synthetic-text`` release (Mitchell et al. 2026,
    arXiv:2606.10481): read from the auxiliary model (descriptive).

    Attributes:
        release: what the release did (samples, temperature, the auxiliary training).
        verbatim_members, verbatim_non_members: canaries whose prefix and secret appear
            verbatim (contiguous) in the synthetic text.
        extracted_members, extracted_non_members: secrets the auxiliary model's greedy
            decoding reproduces (None: not tried).
        mean_loss_members, mean_loss_non_members: mean secret loss under the auxiliary
            model (nats per token).
    """

    release: SyntheticTextRun
    verbatim_members: int
    verbatim_non_members: int
    extracted_members: int | None
    extracted_non_members: int | None
    mean_loss_members: float
    mean_loss_non_members: float


@dataclasses.dataclass(frozen=True)
class LLMDetail(ResultMixin):
    """One (kind, score, threat model) entry's statistics.

    Attributes:
        kind: the canary kind; ``score``: the membership score.
        score: the score.
        bounds: the one-run bounds (Steinke et al., f-DP, their paid-for maximum).
        metrics: TPR at 1 % / 0.1 % FPR and AUC (descriptive).
        run: the DP fine-tuning run behind it.
        threat_model: what was released (:data:`dpaudit.attacks.LLM_THREAT_MODELS`).
        release: under ``synthetic-text``, the release and the auxiliary model's reading.
    """

    kind: str
    score: str
    bounds: OneRunBounds
    metrics: MembershipMetrics
    run: LLMRunSummary
    threat_model: str = "model"
    release: LLMReleaseDetail | None = None


def load_texts(settings: LLMDataSettings, *, rng: Any = None) -> tuple[list[str], list[str]]:
    """``(fine-tuning texts, held-out texts)``: a seeded random ``examples`` of the corpus'
    training split and its whole test split.

    Raises:
        ValueError: fewer texts than ``examples``.
        MissingDatasetError: the corpus is not installed.
    """
    from dpaudit.data import load_dataset

    s = settings
    ds = load_dataset(s.dataset, **({} if s.path is None else {"path": s.path}), seed=0)
    train = [str(t) for t in ds.X_train]
    if s.examples > len(train):
        raise ValueError(f"examples={s.examples} exceeds the {len(train)} texts of {s.dataset}")
    rows = as_generator(rng).permutation(len(train))[: s.examples]
    return [train[i] for i in rows], [str(t) for t in ds.X_test]


def load_model(settings: LLMModelSettings, held_out: list[str], *, rng: Any = None) -> CausalLM:
    """The pre-trained model: the tiny GPT trained on ``held_out`` texts, or SmolLM2."""
    from dpaudit.systems.llm import load_smollm2, tiny_gpt

    m = settings
    if m.name == "smollm2":
        return load_smollm2()
    texts = held_out[: m.pretrain_texts]
    return tiny_gpt(texts, vocab_size=m.vocab_size, layers=m.layers, hidden=m.hidden,
                    context=m.context, pretrain_steps=m.pretrain_steps, rng=rng)  # fmt: skip


def _draw(s: LLMFineTuningSettings, lm, corpus) -> list:
    """Each kind's canaries. Joint (one run): each kind from its own seed (its own prefixes
    and inclusions, independent of the other kinds': the first kind's stream, then keys of
    their own), the new entries of every kind appended to one vocabulary, every kind's
    canaries then on that model. Per kind: one seed for all (the same prefixes and
    inclusions). A single kind draws the same canaries either way."""
    c = s.canaries
    cans = []
    for i, kind in enumerate(c.kinds):
        seed = child_seed(s.seed, 5, i) if (c.joint and i) else child_seed(s.seed, 2)
        can = draw_llm_canaries(
            kind, cans[-1].lm if (c.joint and cans) else lm, c.count,
            prefix_length=c.prefix_length, secret_length=c.secret_length,
            inclusion=c.inclusion, corpus=corpus, rare_pool=c.rare_pool,
            temperature=c.temperature, rng=seed,
        )  # fmt: skip
        cans.append(can)
    if c.joint:  # every kind on the model with all the new entries
        cans = [dataclasses.replace(can, lm=cans[-1].lm) for can in cans]
    return cans


def _train(system, s: LLMFineTuningSettings, texts, cans, rng):
    """One fine-tuning run with the canaries of ``cans`` (r copies of each inserted one):
    ``(run, [(k,) steps each canary's copies were sampled in, per kind])``."""
    from dpaudit.systems.llm import encode_texts

    r = s.canaries.repetitions
    lm = cans[0].lm
    examples = encode_texts(lm, texts, s.data.length)
    seqs = [can.sequences() for can in cans]
    width = max(ids.shape[1] for ids, _ in seqs)
    ids = np.concatenate([np.pad(i, ((0, 0), (0, width - i.shape[1]))) for i, _ in seqs])
    lengths = np.concatenate([n for _, n in seqs])
    copies = (np.repeat(ids, r, axis=0), np.repeat(lengths, r))
    included = np.repeat(np.concatenate([can.included for can in cans]), r)
    system.check_inputs(lm, examples, copies, included)
    run = system.train(lm, examples, copies, included, rng=rng)
    sampled = run.sampled.reshape(-1, r).sum(1)
    bounds = np.cumsum([0] + [can.count for can in cans])
    return run, [sampled[a:b] for a, b in itertools.pairwise(bounds)]


def _summary(system, s, lm, texts, can, run, sampled, kinds, loss) -> LLMRunSummary:
    """The run's summary for one kind; ``loss``: its canaries' secret losses under the run's
    model (computed once, shared with the ``model`` threat model's entries)."""
    inc, r = can.included, s.canaries.repetitions
    extracted = greedy_extraction(run.model, can) if s.audit.extraction else None
    return LLMRunSummary(
        can.kind, lm.name, len(texts), can.count, int(inc.sum()), can.lm.new_tokens,
        run.trainable_parameters, run.noise_multiplier, run.noise_multiplier_used,
        float(sampled[inc].mean()) if inc.any() else 0.0,
        None if extracted is None else int(extracted[inc].sum()),
        None if extracted is None else int(extracted[~inc].sum()),
        float(loss[inc].mean()) if inc.any() else float("nan"),
        float(loss[~inc].mean()) if (~inc).any() else float("nan"),
        run.seconds["training"], run.seconds["per_step"], system.variant.name,
        system.variant.bug, r, tuple(kinds),
    )  # fmt: skip


def _verbatim(ids: np.ndarray, can) -> np.ndarray:
    """``(k,)`` whether each canary's prefix and secret appear contiguously in ``ids``."""
    w = can.prefix.shape[1] + can.secret.shape[1]
    seen = {tuple(row[j : j + w]) for row in ids.tolist() for j in range(len(row) - w + 1)}
    seqs = np.concatenate([can.prefix, can.secret], axis=1).tolist()
    return np.array([tuple(q) in seen for q in seqs], dtype=bool)


def _release_detail(s, can, obs: AuditedLM, loss) -> LLMReleaseDetail | None:
    if obs.run is None or obs.synthetic is None:
        return None
    inc = can.included
    verb = _verbatim(obs.synthetic[0], can)
    ext = greedy_extraction(obs.model, can) if s.audit.extraction else None
    return LLMReleaseDetail(
        obs.run, int(verb[inc].sum()), int(verb[~inc].sum()),
        None if ext is None else int(ext[inc].sum()),
        None if ext is None else int(ext[~inc].sum()),
        float(loss[inc].mean()) if inc.any() else float("nan"),
        float(loss[~inc].mean()) if (~inc).any() else float("nan"),
    )  # fmt: skip


def _kind_entries(system, s: LLMFineTuningSettings, can, i, obs: AuditedLM, t, summary, run,
                  run_loss):  # fmt: skip
    """One kind's entries (one per score) read from ``obs``, the model of the ``t``-th
    threat model, after a run that held its canaries (and, when joint, the other kinds':
    ordinary training data for this kind's game); ``run_loss``: the secret losses under the
    run's own model, reused when ``obs`` reads that model."""
    c, a = s.canaries, s.audit
    r, kind, inc = c.repetitions, can.kind, can.included
    tm = LLM_THREAT_MODELS.get(obs.threat_model)
    loss = run_loss if obs.model is run.model else secret_losses(obs.model, can)
    ref = secret_losses(obs.reference, can)
    scores = canary_scores(loss, ref, can.texts(), c.secret_length)
    release = _release_detail(s, can, obs, loss)
    claims = (system.claim(delta=a.delta),)
    if r > 1:  # the game's unit is the canary: r examples
        claims = (system.group_claim(r, delta=a.delta), *claims)
    entries = []
    for j, score in enumerate(LLM_SCORES):
        key = (4, i, j) if t == 0 else (4, i, j, t)  # the first threat model: seeds as before
        b = one_run_bounds(scores[score], inc, delta=a.delta, confidence_level=a.confidence_level,
                           selection=a.selection, rng=child_seed(s.seed, *key))  # fmt: skip
        metrics = membership_metrics(scores[score], inc)
        lower = LowerBound(
            "one-run games with canary sequences: max of Steinke et al. 2023 and f-DP "
            "(Mahloujifar et al. 2024), Bonferroni over the two", a.confidence_level,
            b.max_valid, a.delta,
            note=f"TPR {metrics.tpr_at_1pct_fpr:.3f} at 1% FPR, AUC {metrics.auc:.3f} "
            "(descriptive, not bounds)",
        )  # fmt: skip
        times = f" x{r}" if r > 1 else ""
        entries.append(AuditEntry(
            f"{system.name} ({system.variant.name})",
            f"{can.count} {kind} canaries{times}, {score}{tm.label}",
            lower, claims, selections=(b.steinke.selection, b.max_selection),
            detail=LLMDetail(kind, score, b, metrics, summary, tm.name, release),
        ))  # fmt: skip
    return entries


def _audit_runs(system, s: LLMFineTuningSettings, lm, texts, corpus):
    """Every kind's entries, run summaries and releases' timings: one joint run (seeded as
    the first kind's run would be alone), or one run per kind; per run every threat model's
    release (seeds of its own, independent of the inclusions)."""
    cans = _draw(s, lm, corpus)
    groups = [list(range(len(cans)))] if s.canaries.joint else [[i] for i in range(len(cans))]
    entries, runs, timings = [], [], {}
    for group in groups:
        rng = child_seed(s.seed, 3, group[0])
        run, sampled = _train(system, s, texts, [cans[i] for i in group], rng)
        kinds = [cans[i].kind for i in group]
        observed = [
            LLM_THREAT_MODELS.get(name).observe(run, system.cell, s.synthetic.options(),
                                                child_seed(s.seed, 6, group[0], t))
            for t, name in enumerate(s.audit.threat_models)
        ]  # fmt: skip
        for obs in observed:
            if obs.run is not None:
                seconds = obs.run.sampling_seconds + obs.run.auxiliary_seconds
                timings[f"{obs.threat_model}[{'+'.join(kinds)}]"] = seconds
        for i, smp in zip(group, sampled, strict=True):
            loss = secret_losses(run.model, cans[i])
            summary = _summary(system, s, lm, texts, cans[i], run, smp, kinds, loss)
            for t, obs in enumerate(observed):
                entries.extend(_kind_entries(system, s, cans[i], i, obs, t, summary, run, loss))
            runs.append(summary)
    return entries, runs, timings


def audit_llm_fine_tuning(
    settings: LLMFineTuningSettings | None = None,
    *,
    data: tuple[CausalLM, list[str]] | None = None,
    progress: Any = None,
    checkpoint: Any = None,
) -> AuditResult:
    """Audit DP fine-tuning of a language model with canaries, every kind in one run (or one
    run per kind; module docstring).

    Args:
        settings: :class:`LLMFineTuningSettings` (default: the tiny GPT, 500 texts,
            random-token and new-token canaries, 500 each, ε = 4).
        data: a preloaded ``(pre-trained CausalLM, fine-tuning texts)`` instead of loading
            the model and the corpus.
        progress: unused.
        checkpoint: unused (nothing to resume).

    Returns:
        :class:`~dpaudit.AuditResult` (workflow ``"llm-fine-tuning"``): one entry per
        (canary kind, threat model, score).
    """
    s = settings if settings is not None else LLMFineTuningSettings()
    if not isinstance(s, LLMFineTuningSettings):
        raise TypeError(f"settings must be LLMFineTuningSettings, got {type(s).__name__}")
    t0 = time.perf_counter()
    from dpaudit.systems.llm import encode_texts, resolve_fine_tuning_device

    resolve_fine_tuning_device(s.training.device)  # CUDA asked for and absent: before loading
    if data is None:
        texts, held_out = load_texts(s.data, rng=child_seed(s.seed, 0))
        lm = load_model(s.model, held_out, rng=child_seed(s.seed, 1))
    else:
        lm, texts = data
        if not isinstance(lm, CausalLM):
            raise TypeError(f"data must be (CausalLM, texts), got {type(lm).__name__}")
        texts = [str(t) for t in texts]
    system = SYSTEMS.get(s.system)(s.cell())
    if lm.context < 1 + s.canaries.prefix_length + s.canaries.secret_length:
        raise ValueError(
            f"canaries of {1 + s.canaries.prefix_length + s.canaries.secret_length} tokens are "
            f"longer than the model's context of {lm.context} tokens"
        )
    corpus = encode_texts(lm, texts, min(s.data.length, lm.context))[0]
    t1 = time.perf_counter()
    entries, runs, released = _audit_runs(system, s, lm, texts, corpus)
    timings = {"setup": t1 - t0, "runs": time.perf_counter() - t1}
    timings |= {f"training[{'+'.join(r.kinds_trained)}]": r.seconds for r in runs} | released
    return AuditResult(
        WORKFLOW, tuple(entries), s, s.seed, timings,
        package_versions("torch", "transformers", "peft", "opacus", "dp-accounting"),
        detail=tuple(runs), note=_note(s),
    )  # fmt: skip


def _note(s: LLMFineTuningSettings) -> str:
    runs = ("One fine-tuning run for every canary kind (each kind's own game). " if
            s.canaries.joint else "One fine-tuning run per canary kind. ")  # fmt: skip
    released = "; ".join(f"{t}: {LLM_THREAT_MODELS.get(t).title}" for t in s.audit.threat_models)
    return (
        runs + f"What is released, per entry: {released}. Each lower bound is valid "
        "at its confidence on its own (the canaries' inclusion is randomised); the largest over "
        "the entries is not (Bonferroni over the entries would pay for it). TPR at low FPR and "
        "AUC are descriptive."
    )
