"""Vote leakage in PATE (Wang, Schuster, Shumailov, Lie & Papernot 2022, "In Differential
Privacy, There is Truth: On Vote Leakage in Ensemble Private Learning", arXiv:2209.10732).

* :mod:`.settings` — :class:`VoteLeakageConfig` (one section per part).
* :mod:`.extraction` — query-limited extraction (§4.1–4.2, Fig. 6).
* :mod:`.budget_limited` — budget-limited extraction (§4.1, Fig. 4a).
* :mod:`.noise_sweep` — more noise helps the attacker (§4.2, Fig. 5).
* :mod:`.attribute_inference` — PhD holders in UCI Adult (§2, App. E).
* :mod:`.pipeline` — :func:`run_vote_leakage`, the parts in order.
"""

from dpaudit.experiments._workflow import WORKFLOWS, Workflow
from dpaudit.experiments.vote_leakage.attribute_inference import (
    AttributeInferenceExperiment,
    run_attribute_inference,
)
from dpaudit.experiments.vote_leakage.budget_limited import (
    BudgetLimitedRecord,
    BudgetLimitedResult,
    run_budget_limited,
)
from dpaudit.experiments.vote_leakage.entries import (
    SYSTEM,
    attribute_inference_entry,
    budget_limited_entry,
    noise_sweep_entry,
    query_limited_entry,
)
from dpaudit.experiments.vote_leakage.extraction import (
    ESTIMATORS,
    NATIVE_CONVERSION,
    PAPER_CONVERSION,
    CostRecord,
    ExtractionRecord,
    QueryLimitedResult,
    SimulatedExtraction,
    run_query_limited,
    simulate_extraction,
)
from dpaudit.experiments.vote_leakage.noise_sweep import (
    NoiseSweepResult,
    run_noise_sweep,
)
from dpaudit.experiments.vote_leakage.pipeline import (
    VoteLeakageResult,
    run_vote_leakage,
)
from dpaudit.experiments.vote_leakage.settings import (
    SHIPPED_CONFIGS,
    AttributeConfig,
    BudgetLimitedConfig,
    NoiseSweepConfig,
    QueryLimitedConfig,
    VoteLeakageConfig,
    load_vote_leakage_config,
)

__all__ = [
    "ESTIMATORS",
    "NATIVE_CONVERSION",
    "PAPER_CONVERSION",
    "SHIPPED_CONFIGS",
    "SYSTEM",
    "AttributeConfig",
    "AttributeInferenceExperiment",
    "BudgetLimitedConfig",
    "BudgetLimitedRecord",
    "BudgetLimitedResult",
    "CostRecord",
    "ExtractionRecord",
    "NoiseSweepConfig",
    "NoiseSweepResult",
    "QueryLimitedConfig",
    "QueryLimitedResult",
    "SimulatedExtraction",
    "VoteLeakageConfig",
    "VoteLeakageResult",
    "attribute_inference_entry",
    "budget_limited_entry",
    "load_vote_leakage_config",
    "noise_sweep_entry",
    "query_limited_entry",
    "run_attribute_inference",
    "run_budget_limited",
    "run_noise_sweep",
    "run_query_limited",
    "run_vote_leakage",
    "simulate_extraction",
]

WORKFLOWS.register(
    "vote-leakage",
    Workflow(
        name="vote-leakage",
        settings=VoteLeakageConfig,
        run=run_vote_leakage,
        summary="Vote leakage in PATE: query- and budget-limited histogram extraction, the "
        "noise sweep and attribute inference, next to the ε the accountant charged.",
        report="dpaudit.report.vote_leakage:REPORT",
        config="vote_leakage_mnist",
        source="Wang et al. 2022, arXiv:2209.10732",
    ),
)
