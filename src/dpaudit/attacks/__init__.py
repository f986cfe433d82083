"""Attacks on DP systems (layer 6).

* **Adversaries against private prediction** (Chadha et al. 2024, arXiv:2402.09403, §4.1):
  crafters and distinguishers as objects, combined into an :class:`Adversary` and found by
  name in :data:`ADVERSARIES` (Nat-AdvQ, Pois-AdvQ, Pois-NatQ).
* **Parametric histogram models** (§5.1–5.2): maximum-likelihood models of a query's vote
  histogram under S and S′, their exact output distributions and samplers, found by the name
  a system declares in :data:`HISTOGRAM_MODELS`.
* **Vote-histogram extraction** (Wang et al. 2022, arXiv:2209.10732): repeated queries,
  maximum-likelihood / L2 / the paper's reconstruction, its privacy cost.
* **Group adversaries** (Chadha et al. 2024, App. C): m poisoned points in one PATE teacher,
  a whole CaPC party replaced, m points added to Private-kNN, found by name in
  :data:`GROUP_ADVERSARIES`.
* **Attribute inference** from vote consensus (Wang et al. 2022 §2, App. E).
* **One-run audits of DP-SGD**: canaries and their inclusion (Steinke et al. 2023,
  arXiv:2305.08846), black-box membership scores, and quantile-regression membership
  inference (Bertran et al. 2023, arXiv:2307.03694).
* **Black-box DP mechanisms** (Bichsel et al. 2021, DP-Sniper, IEEE S&P; Ding et al. 2018,
  StatDP, CCS): input patterns, the classifier-threshold and exact-count attacks, the event
  counts of :func:`dpaudit.engine.run_blocks`.
* **Label memorization** (Malek et al. 2021, arXiv:2106.03408, App. B): flipped-label
  canaries (Game 3), the confidence attacker with an abstention threshold chosen on held-out
  canaries or paid for by Bonferroni, CGR and averaged-CGR bounds.
* **DP-SGD implementation bugs**: crafted add/remove pairs and white-box statistics that
  catch shuffled batches, a dataset-size-dependent normaliser, weighted samplers, batch
  clipping and mis-scaled noise (:data:`BUG_PAIRS`, :data:`BUG_STATISTICS`).
* **Canary clients in federated learning** (Andrew et al. 2024, arXiv:2302.03098): unit
  directions as clients' updates, their cosines with the model deltas, and the one-shot
  ε *estimate* (two Gaussians' hockey-stick divergence).
* **Fine-tuned language models** (Panda et al. 2025, arXiv:2503.06808): random-token,
  rare-token, new-token and model-generated canaries, loss / loss-ratio / zlib scores, TPR at
  low FPR and greedy extraction of a secret; the release of synthetic text sampled from the
  fine-tuned model, audited through an auxiliary model fine-tuned on it (Mitchell et al.
  2026, arXiv:2606.10481; :data:`LLM_THREAT_MODELS`).
* **DP synthetic data** (Annamalai, Ganev & De Cristofaro 2024, arXiv:2405.10994): worst-case
  datasets (D, D ∪ {t}), the white-box log-likelihood ratio of a generator's noisy marginals
  and exponential-mechanism choices (:func:`measurement_llr`, :func:`selection_llr`),
  black-box and domain statistics (:func:`target_count`, :func:`measured_cells`, the DOMIAS
  density ratio :func:`density_ratio_score` of :func:`kernel_log_density`)
  (:data:`SYNTHETIC_THREAT_MODELS`, :data:`WORST_CASE_DATASETS`).
* **Remote targets**: :func:`remote_interface` — a deployed :mod:`dpaudit.serve` service over
  HTTP, with the same callable shape as an in-process interface.
"""

from dpaudit.attacks import (
    _synthetic_adult,  # noqa: F401  (UCI Adult pair, DCR register)
    _synthetic_density,  # noqa: F401  (DOMIAS density ratio registers)
    _synthetic_gan,  # noqa: F401  (DPCTGAN's white-box DP-SGD view registers)
    _synthetic_mwem,  # noqa: F401  (MWEM's white-box statistics register)
    _synthetic_privbayes,  # noqa: F401  (PrivBayes's statistics register)
)
from dpaudit.attacks._attribute import (
    PAPER_CONSENSUS_THRESHOLD,
    AttributeInference,
    evaluate_attribute_inference,
    flag_low_consensus,
    vote_consensus,
)
from dpaudit.attacks._canaries import (
    CANARY_KINDS,
    SYNTHETIC_KINDS,
    Canaries,
    CanaryGame,
    draw_canaries,
    draw_inclusions,
    one_run_game,
    split_pool,
)
from dpaudit.attacks._dpsgd_bugs import BUG_PAIRS, BUG_STATISTICS, BugStatistic, bug_pair
from dpaudit.attacks._federated import (
    FL_STATISTICS,
    AndrewEstimate,
    CanaryClients,
    CanaryCosines,
    andrew_estimate,
    canary_cosines,
    draw_canary_clients,
    two_gaussian_delta,
    two_gaussian_epsilon,
)
from dpaudit.attacks._group import (
    GROUP_ADVERSARIES,
    EnsembleTarget,
    GroupAdversary,
    GroupPoisoning,
    GroupTarget,
    KNNTarget,
    PlaceNeighbours,
    PoisonOneTeacher,
    ReplaceTeacher,
    make_target,
)
from dpaudit.attacks._histograms import (
    DEFAULT_MAX_SUPPORT,
    CaPCHistogramSampler,
    HistogramSupport,
    PATEHistogramSampler,
)
from dpaudit.attacks._label_memorization import (
    DEFAULT_ATTACK_THRESHOLDS,
    CanaryConfidences,
    LabelCanaries,
    LabelMemorizationAttack,
    MemorizationBound,
    canary_confidences,
    label_memorization_attack,
    plant_label_canaries,
)
from dpaudit.attacks._llm import (
    LLM_CANARY_KINDS,
    LLM_SCORES,
    LLMCanaries,
    LLMCanaryKind,
    MembershipMetrics,
    canary_scores,
    draw_llm_canaries,
    greedy_extraction,
    membership_metrics,
    secret_losses,
)
from dpaudit.attacks._llm_synthetic import (
    LLM_THREAT_MODELS,
    AuditedLM,
    LLMThreatModel,
    SyntheticTextOptions,
    SyntheticTextRun,
    sample_synthetic_text,
    synthetic_text_release,
    train_auxiliary_model,
)
from dpaudit.attacks._mechanism import (
    ATTACK_KINDS,
    EventCounts,
    MechanismAttack,
    batch_sampler,
    choose_event,
    choose_threshold,
    fit_mechanism_attack,
    input_patterns,
    output_features,
)
from dpaudit.attacks._mia_scores import (
    MEMBERSHIP_SCORES,
    binary_logit_score,
    logit_margin,
    logit_minus_others,
    membership_score,
    negative_loss,
)
from dpaudit.attacks._multinomial import multinomial_output_probabilities
from dpaudit.attacks._qmia import (
    QMIA_HEADS,
    QMIA_REGRESSORS,
    FittedQMIA,
    MembershipScores,
    QMIASettings,
    default_quantile_levels,
    fit_qmia,
    gaussian_member_score,
    gaussian_nll,
    gaussian_quantile,
    pinball_loss,
    pinball_membership,
)
from dpaudit.attacks._synthetic import (
    SYNTHETIC_THREAT_MODELS,
    WORST_CASE_DATASETS,
    SyntheticThreatModel,
    WorstCaseDataset,
    marginal_counts,
    measured_cells,
    measurement_llr,
    selection_llr,
    synthetic_rows,
    target_count,
)
from dpaudit.attacks._synthetic_density import density_ratio_score, kernel_log_density
from dpaudit.attacks._synthetic_one_run import CanaryTable, canary_table
from dpaudit.attacks._whitebox import (
    GRADIENT_STATISTICS,
    INVERTIBLE_OPTIMIZERS,
    canary_gradient_scores,
    gradients_from_iterates,
    per_step_llr,
    simulate_canary_gradients,
)
from dpaudit.attacks._whitebox_sequential import (
    CLAIM_TEST_GRID,
    StepClaimTest,
    StepClaimTestResult,
)
from dpaudit.attacks._worstcase_init import (
    InitialParameters,
    blank_target,
    craft_blank_target,
    per_example_gradient_norms,
    pretrain_initial_state,
    target_loss_score,
)
from dpaudit.attacks.adversaries import (
    ADVERSARIES,
    ADVERSARY_NAMES,
    AdversarialQueries,
    Adversary,
    CraftedPoint,
    Crafter,
    Distinguisher,
    NaturalCrafter,
    NaturalQueries,
    PoisoningCrafter,
    Target,
    adversarial_queries,
    choose_party,
    craft_natural,
    craft_poison,
    get_adversary,
    natural_queries,
    parse_adversaries,
    second_most_common_label,
)
from dpaudit.attacks.extraction import (
    ExtractionCost,
    HistogramReconstruction,
    PaperReconstruction,
    VoteExtraction,
    extract_histogram,
    extraction_privacy_cost,
    fixed_histogram_interface,
    normalised_l1_error,
    project_to_simplex,
    reconstruct_histogram,
    reconstruct_histogram_paper,
    trapezoid_argmax_probabilities,
)
from dpaudit.attacks.knn import KNNHistogramModel, KNNPoisonSearch, KNNSubsampleModel
from dpaudit.attacks.parametric import (
    HISTOGRAM_MODELS,
    NEIGHBOUR_ESTIMATORS,
    CaPCHistogramModel,
    FlipEstimate,
    HistogramModel,
    ModelEstimation,
    ModelInputs,
    PATEHistogramModel,
    estimate_capc_model,
    estimate_pate_model,
    flip_estimate,
    model_independent,
    model_multinomial,
    transition_matrix,
)
from dpaudit.attacks.prompt_pate import BestOf, best_of  # registers the PromptPATE adversaries
from dpaudit.attacks.remote import (
    RemoteInterface,
    RemoteInterfaceError,
    audit_remote_extraction,
    craft_remote,
    distinguish_remote,
    remote_interface,
)

__all__ = [  # noqa: RUF022 - grouped by concept
    "LLM_CANARY_KINDS",
    "LLM_SCORES",
    "LLMCanaries",
    "LLMCanaryKind",
    "MembershipMetrics",
    "canary_scores",
    "draw_llm_canaries",
    "greedy_extraction",
    "membership_metrics",
    "secret_losses",
    # the synthetic-text release audited through an auxiliary model (Mitchell et al. 2026)
    "LLM_THREAT_MODELS",
    "AuditedLM",
    "LLMThreatModel",
    "SyntheticTextOptions",
    "SyntheticTextRun",
    "sample_synthetic_text",
    "synthetic_text_release",
    "train_auxiliary_model",
    # canary clients in federated learning (Andrew et al. 2024)
    "FL_STATISTICS",
    "AndrewEstimate",
    "CanaryClients",
    "CanaryCosines",
    "andrew_estimate",
    "canary_cosines",
    "draw_canary_clients",
    "two_gaussian_delta",
    "two_gaussian_epsilon",
    # black-box DP mechanisms (DP-Sniper, StatDP)
    "ATTACK_KINDS",
    "EventCounts",
    "MechanismAttack",
    "batch_sampler",
    "choose_event",
    "choose_threshold",
    "fit_mechanism_attack",
    "input_patterns",
    "output_features",
    # White-box canary gradients (DP-SGD)
    "GRADIENT_STATISTICS",
    "INVERTIBLE_OPTIMIZERS",
    "canary_gradient_scores",
    "gradients_from_iterates",
    "per_step_llr",
    "simulate_canary_gradients",
    "CLAIM_TEST_GRID",
    "StepClaimTest",
    "StepClaimTestResult",
    # label memorization (label DP)
    "DEFAULT_ATTACK_THRESHOLDS",
    "CanaryConfidences",
    "LabelCanaries",
    "LabelMemorizationAttack",
    "MemorizationBound",
    "canary_confidences",
    "label_memorization_attack",
    "plant_label_canaries",
    # adversaries against private prediction
    "ADVERSARIES",
    "ADVERSARY_NAMES",
    "AdversarialQueries",
    "Adversary",
    "CraftedPoint",
    "Crafter",
    "Distinguisher",
    "NaturalCrafter",
    "NaturalQueries",
    "PoisoningCrafter",
    "Target",
    "adversarial_queries",
    "choose_party",
    "craft_natural",
    "craft_poison",
    "get_adversary",
    "natural_queries",
    "parse_adversaries",
    "second_most_common_label",
    # group adversaries (many poisoned points; Chadha et al. 2024 App. C)
    "GROUP_ADVERSARIES",
    "EnsembleTarget",
    "GroupAdversary",
    "GroupPoisoning",
    "GroupTarget",
    "KNNTarget",
    "PlaceNeighbours",
    "PoisonOneTeacher",
    "ReplaceTeacher",
    "make_target",
    # parametric histogram models
    "DEFAULT_MAX_SUPPORT",
    "HISTOGRAM_MODELS",
    "NEIGHBOUR_ESTIMATORS",
    "CaPCHistogramModel",
    "CaPCHistogramSampler",
    "FlipEstimate",
    "HistogramModel",
    "HistogramSupport",
    "ModelEstimation",
    "ModelInputs",
    "PATEHistogramModel",
    "PATEHistogramSampler",
    "estimate_capc_model",
    "estimate_pate_model",
    "flip_estimate",
    "model_independent",
    "model_multinomial",
    "multinomial_output_probabilities",
    "transition_matrix",
    # Private-kNN models and poison crafters (registered)
    "KNNHistogramModel",
    "KNNPoisonSearch",
    "KNNSubsampleModel",
    # PromptPATE (its adversaries are registered in ADVERSARIES)
    "BestOf",
    "best_of",
    # vote-histogram extraction
    "ExtractionCost",
    "HistogramReconstruction",
    "PaperReconstruction",
    "VoteExtraction",
    "extract_histogram",
    "extraction_privacy_cost",
    "fixed_histogram_interface",
    "normalised_l1_error",
    "project_to_simplex",
    "reconstruct_histogram",
    "reconstruct_histogram_paper",
    "trapezoid_argmax_probabilities",
    # a deployed service over HTTP (dpaudit serve)
    "RemoteInterface",
    "RemoteInterfaceError",
    "audit_remote_extraction",
    "craft_remote",
    "distinguish_remote",
    "remote_interface",
    # canaries, membership scores and quantile-regression MIA (one-run audits of DP-SGD)
    "CANARY_KINDS",
    "SYNTHETIC_KINDS",
    "Canaries",
    "CanaryGame",
    "draw_canaries",
    "draw_inclusions",
    "one_run_game",
    "split_pool",
    "MEMBERSHIP_SCORES",
    "binary_logit_score",
    "logit_margin",
    "logit_minus_others",
    "membership_score",
    "negative_loss",
    "QMIA_HEADS",
    "QMIA_REGRESSORS",
    "FittedQMIA",
    "MembershipScores",
    "QMIASettings",
    "default_quantile_levels",
    "fit_qmia",
    "gaussian_member_score",
    "gaussian_nll",
    "gaussian_quantile",
    "pinball_loss",
    "pinball_membership",
    # attribute inference
    "PAPER_CONSENSUS_THRESHOLD",
    "AttributeInference",
    "evaluate_attribute_inference",
    "flag_low_consensus",
    "vote_consensus",
    # worst-case initial parameters (Annamalai & De Cristofaro 2024)
    "InitialParameters",
    "blank_target",
    "craft_blank_target",
    "per_example_gradient_norms",
    "pretrain_initial_state",
    "target_loss_score",
    # DP-SGD implementation bugs: crafted pairs and white-box statistics
    "BUG_PAIRS",
    "BUG_STATISTICS",
    "BugStatistic",
    "bug_pair",
    # DP synthetic data: worst-case pairs, threat models and their statistics
    "SYNTHETIC_THREAT_MODELS",
    "WORST_CASE_DATASETS",
    "SyntheticThreatModel",
    "WorstCaseDataset",
    "marginal_counts",
    "measured_cells",
    "measurement_llr",
    "selection_llr",
    "synthetic_rows",
    "target_count",
    "density_ratio_score",
    "CanaryTable",
    "canary_table",
    "kernel_log_density",
]
