"""Adversaries of Chadha et al. 2024 §4.1: crafters, distinguishers as objects, the registry,
and the choice of the receiving party."""

from __future__ import annotations

import numpy as np
import pytest

from dpaudit.attacks.adversaries import (
    ADVERSARIES,
    ADVERSARY_NAMES,
    NaturalCrafter,
    PoisoningCrafter,
    adversarial_queries,
    choose_party,
    craft_natural,
    craft_poison,
    get_adversary,
    natural_queries,
    parse_adversaries,
    second_most_common_label,
)


def test_the_three_adversaries_of_the_paper():
    assert ADVERSARY_NAMES == ("nat-advq", "pois-advq", "pois-natq")
    table = {
        n: (get_adversary(n).crafter.name, get_adversary(n).distinguisher.name)
        for n in ADVERSARY_NAMES
    }
    assert table == {
        "nat-advq": ("natural", "adversarial"),
        "pois-advq": ("poisoning", "adversarial"),
        "pois-natq": ("poisoning", "natural"),
    }
    assert get_adversary("Pois-NatQ").composition == "queries"
    assert get_adversary("nat-advq").composition == "repetitions"
    assert get_adversary("pois-advq").label == "Pois-AdvQ"
    assert get_adversary("pois-advq").to_dict()["crafter"] == "poisoning"


def test_parse_adversaries():
    assert [a.name for a in parse_adversaries("nat-advq, pois-advq,nat-advq")] == [
        "nat-advq",
        "pois-advq",
    ]
    assert [a.name for a in parse_adversaries(["pois-natq"])] == ["pois-natq"]
    with pytest.raises(ValueError, match="adversar"):
        parse_adversaries("")
    with pytest.raises(ValueError, match="adversary"):
        parse_adversaries("nat-advq,knn")
    with pytest.raises(TypeError, match="adversary"):
        get_adversary(3)


@pytest.mark.parametrize(
    ("votes", "label"),
    [([3, 240, 7], 2), ([5, 5, 1], 1), ([0, 10, 0, 0], 0), ([1, 2, 2, 9], 1), ([4, 4], 1)],
)
def test_second_most_common_label(votes, label):
    assert second_most_common_label(votes) == label


def test_crafters():
    x = np.array([0.1, 0.2, 0.3])
    nat = craft_natural(x, 4, source_index=12, votes=[0, 1, 2, 3, 4])
    assert (nat.label, nat.true_label, nat.source_index, nat.crafter) == (4, 4, 12, "natural")
    assert not nat.mislabelled
    pois = craft_poison(x, [1, 200, 49], true_label=1, source_index=3)
    assert (pois.label, pois.true_label, pois.crafter) == (2, 1, "poisoning")
    assert pois.mislabelled and pois.votes.tolist() == [1, 200, 49]
    np.testing.assert_array_equal(pois.x, x)
    assert PoisoningCrafter().craft(x, 1, [1, 200, 49]).label == 2
    assert NaturalCrafter().craft(x, 1, [1, 200, 49]).label == 1
    assert ADVERSARIES.get("pois-advq").craft(x, 1, [1, 200, 49]).label == 2
    assert "label" in pois.to_json()


def test_choose_party_prefers_a_flippable_plurality_voter():
    nat = craft_natural([0.0], 1)
    # Teachers voting 1 cannot be flipped to 1; among the others prefer the plurality label 0.
    assert choose_party([1, 2, 0, 1, 0, 2, 0], nat) == 2
    pois = craft_poison([0.0], [5, 1, 0], true_label=0)  # poison label 1
    assert choose_party([0, 0, 1, 0, 0, 1], pois) == 0
    # Nobody can be flipped: party 0 (the audit then finds no leakage).
    assert choose_party([1, 1, 1], nat) == 0


def test_distinguishers():
    a = natural_queries(100, 10, rng=5, exclude=[0, 1, 2])
    b = natural_queries(100, 10, rng=5, exclude=[0, 1, 2])
    np.testing.assert_array_equal(a, b)
    assert len(set(a.tolist())) == 10 and not set(a.tolist()) & {0, 1, 2}
    assert np.all(np.diff(a) > 0)
    assert adversarial_queries(7, 3).tolist() == [7, 7, 7]


def test_validation():
    with pytest.raises(ValueError, match="num_queries"):
        natural_queries(5, 5, exclude=[0])
    with pytest.raises(ValueError, match="num_queries"):
        natural_queries(5, 0)
    with pytest.raises(ValueError, match="repetitions"):
        adversarial_queries(1, 0)
    with pytest.raises(ValueError, match="votes"):
        second_most_common_label([3])
    with pytest.raises(ValueError, match="votes"):
        craft_poison([0.0], [1.5, 2], true_label=0)
    with pytest.raises(ValueError, match="x"):
        craft_natural([[0.0, 1.0]], 1)
    with pytest.raises(ValueError, match="true_label"):
        craft_natural([0.0], -1)
    with pytest.raises(TypeError, match="source_index"):
        craft_natural([0.0], 1, source_index=1.5)
    with pytest.raises(ValueError, match="unknown adversary"):
        get_adversary("adversarial")
    with pytest.raises(ValueError, match="teacher_votes"):
        choose_party([], craft_natural([0.0], 1))


def test_distinguisher_targets_and_registry():
    adv = get_adversary("nat-advq")
    assert [(t.source, t.columns) for t in adv.targets(5, 3)] == [(0, (0,)), (1, (1,)), (2, (2,))]
    nat = get_adversary("pois-natq")
    assert [(t.source, t.columns) for t in nat.targets(3, 3)] == [(3, (0, 1, 2))]
    assert ADVERSARIES.names()[: len(ADVERSARY_NAMES)] == ADVERSARY_NAMES  # others add more
    with pytest.raises(ValueError, match="already registered"):
        ADVERSARIES.register("nat-advq", nat)
