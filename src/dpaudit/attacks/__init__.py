"""Attacks on private-prediction systems (layer 6).

Crafters, distinguishers and adversaries; parametric histogram models; histogram extraction;
attribute inference. Each block below belongs to one piece of work and lists its public names.
"""

__all__: list[str] = []

# --- vote extraction (issue 7) -------------------------------------------------------------
from dpaudit.attacks._attribute import (
    PAPER_CONSENSUS_THRESHOLD,
    AttributeInference,
    evaluate_attribute_inference,
    flag_low_consensus,
    vote_consensus,
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

__all__ += [
    "PAPER_CONSENSUS_THRESHOLD",
    "AttributeInference",
    "ExtractionCost",
    "HistogramReconstruction",
    "PaperReconstruction",
    "VoteExtraction",
    "evaluate_attribute_inference",
    "extract_histogram",
    "extraction_privacy_cost",
    "fixed_histogram_interface",
    "flag_low_consensus",
    "normalised_l1_error",
    "project_to_simplex",
    "reconstruct_histogram",
    "reconstruct_histogram_paper",
    "trapezoid_argmax_probabilities",
    "vote_consensus",
]
# --- end vote extraction (issue 7) ---------------------------------------------------------

# --- private-prediction adversaries (issue 6) ----------------------------------------------
from dpaudit.attacks.adversaries import (  # noqa: E402
    ADVERSARIES,
    ADVERSARY_NAMES,
    Adversary,
    CraftedPoint,
    adversarial_queries,
    choose_party,
    craft,
    craft_natural,
    craft_poison,
    get_adversary,
    natural_queries,
    parse_adversaries,
    second_most_common_label,
)
from dpaudit.attacks.parametric import (  # noqa: E402
    CaPCHistogramModel,
    CaPCHistogramSampler,
    FlipEstimate,
    HistogramSupport,
    ModelEstimation,
    PairedVotes,
    PATEHistogramModel,
    PATEHistogramSampler,
    TrainingInstantiations,
    estimate_capc_model,
    estimate_pate_model,
    flip_estimate,
    multinomial_output_probabilities,
    retrain_with_points,
    train_instantiations,
    transition_matrix,
)

__all__ += [
    "ADVERSARIES",
    "ADVERSARY_NAMES",
    "Adversary",
    "CaPCHistogramModel",
    "CaPCHistogramSampler",
    "CraftedPoint",
    "FlipEstimate",
    "HistogramSupport",
    "ModelEstimation",
    "PATEHistogramModel",
    "PATEHistogramSampler",
    "PairedVotes",
    "TrainingInstantiations",
    "adversarial_queries",
    "choose_party",
    "craft",
    "craft_natural",
    "craft_poison",
    "estimate_capc_model",
    "estimate_pate_model",
    "flip_estimate",
    "get_adversary",
    "multinomial_output_probabilities",
    "natural_queries",
    "parse_adversaries",
    "retrain_with_points",
    "second_most_common_label",
    "train_instantiations",
    "transition_matrix",
]
# --- end private-prediction adversaries (issue 6) ------------------------------------------
