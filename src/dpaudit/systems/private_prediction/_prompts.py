"""Prompts of PromptPATE's teachers: what a teacher holds and the task templates.

The prompt format is Chadha et al. 2024 ("Auditing Private Prediction", arXiv:2402.09403,
App. D.2): the task description naming each label word and its class, one
``Text: {example}\nAnswer: {label word}\n`` pair per example, then the query part
``Text: {query}\nAnswer: ``. :data:`PROMPT_TASKS` holds the paper's four datasets and the
offline substitutes. Re-exported by :mod:`dpaudit.systems.private_prediction.prompt_pate`.

Example:
    >>> t = PROMPT_TASKS.get("sst2")
    >>> print(t.prefix(TeacherPrompt((("a triumph", 1),))).splitlines()[1:])
    ['Text: a triumph', 'Answer: 1']
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from dpaudit._registry import Registry
from dpaudit._results import ResultMixin
from dpaudit._typing import ArrayLike

__all__ = [
    "PROMPT_TASKS",
    "PromptTemplate",
    "TeacherPrompt",
    "check_text",
    "check_texts",
    "make_template",
]


def check_text(name: str, value: object) -> str:
    """A non-blank string (an example, an instruction or a label word).

    Raises:
        TypeError: not a string.
        ValueError: empty or blank.
    """
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a string, got {type(value).__name__}")
    if not value.strip():
        raise ValueError(f"{name} must not be empty or blank, got {value!r}")
    return value


def check_texts(name: str, values: ArrayLike | Sequence[str]) -> tuple[str, ...]:
    """A non-empty 1-d sequence of non-blank strings (texts of a dataset, queries).

    Raises:
        TypeError: not strings (e.g. feature vectors).
        ValueError: empty, not 1-d, or a blank text.

    Example:
        >>> check_texts("queries", ["a", "b"])
        ('a', 'b')
    """
    if isinstance(values, str):
        raise TypeError(f"{name} must be a sequence of strings, got one string")
    raw = np.asarray(values)
    if raw.size and raw.dtype.kind in "biufc":
        raise TypeError(
            f"{name} must hold texts (strings), got a numeric array of shape {raw.shape}; "
            "PromptPATE prompts a language model with the raw text"
        )
    arr = np.asarray(values, dtype=object)
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-d sequence of texts, got shape {arr.shape}")
    out = []
    for i, v in enumerate(arr.tolist()):
        if not isinstance(v, str):
            raise TypeError(
                f"{name} must hold texts (strings), got {type(v).__name__} at index {i}; "
                "PromptPATE prompts a language model with the raw text"
            )
        if not v.strip():
            raise ValueError(f"{name}[{i}] is empty or blank")
        out.append(v)
    return tuple(out)


@dataclasses.dataclass(frozen=True)
class TeacherPrompt(ResultMixin):
    """What one teacher holds: its examples and (only for adversarial prompts) its own task
    description.

    Attributes:
        examples: ``(text, label)`` pairs; PromptPATE's teachers hold exactly one.
        instruction: a task description replacing the template's (None: the template's).
    """

    examples: tuple[tuple[str, int], ...]
    instruction: str | None = None

    def __post_init__(self) -> None:
        ex = []
        for i, pair in enumerate(self.examples):
            if not isinstance(pair, (tuple, list)) or len(pair) != 2:
                raise TypeError(f"examples[{i}] must be a (text, label) pair, got {pair!r}")
            text = check_text(f"examples[{i}] text", pair[0])
            label = pair[1]
            if isinstance(label, (bool, np.bool_)) or not isinstance(label, (int, np.integer)):
                raise TypeError(f"examples[{i}] label must be an integer, got {label!r}")
            if label < 0:
                raise ValueError(f"examples[{i}] label must be >= 0, got {label}")
            ex.append((text, int(label)))
        object.__setattr__(self, "examples", tuple(ex))
        if self.instruction is not None:
            check_text("instruction", self.instruction)
        if not ex and self.instruction is None:
            raise ValueError("a teacher prompt needs an example or its own instruction (empty)")


@dataclasses.dataclass(frozen=True)
class PromptTemplate(ResultMixin):
    """The prompt format of a classification task (Chadha et al. 2024, App. D.2).

    ``instruction`` + newline + one ``Text: {example}\\nAnswer: {label word}\\n`` line pair per
    example, then the query part ``Text: {query}\\nAnswer: `` (``answer_prefix`` ends where
    the label word's token begins).

    Attributes:
        name: the task name.
        instruction: the task description (names the label words and classes).
        class_names: one name per class.
        label_words: the word that answers each class.
        answer_prefix: the text before the label word.
        text_prefix: the text before an example or query.
    """

    name: str
    instruction: str
    class_names: tuple[str, ...]
    label_words: tuple[str, ...]
    answer_prefix: str = "Answer: "
    text_prefix: str = "Text: "

    def __post_init__(self) -> None:
        check_text("instruction", self.instruction)
        if len(self.class_names) < 2 or len(self.class_names) != len(self.label_words):
            raise ValueError(
                f"a template needs >= 2 classes and one label word each, got "
                f"{self.class_names!r} and {self.label_words!r}"
            )
        for w in self.label_words:
            check_text("label word", w)
        if len(set(self.label_words)) != len(self.label_words):
            raise ValueError(f"label_words must be distinct, got {self.label_words!r}")

    @property
    def num_classes(self) -> int:
        """C."""
        return len(self.class_names)

    def example(self, text: str, label: int) -> str:
        """One example: ``Text: {text}\\nAnswer: {label word}\\n``."""
        if not 0 <= label < self.num_classes:
            raise ValueError(f"label must be in [0, {self.num_classes}), got {label}")
        word = self.label_words[label]
        return f"{self.text_prefix}{_one_line(text)}\n{self.answer_prefix}{word}\n"

    def query(self, text: str) -> str:
        """The query part of a prompt: ``Text: {text}\\nAnswer: ``."""
        return f"{self.text_prefix}{_one_line(text)}\n{self.answer_prefix}"

    def prefix(self, prompt: TeacherPrompt) -> str:
        """A teacher's part of its prompts (instruction and examples)."""
        head = self.instruction if prompt.instruction is None else prompt.instruction
        return head.rstrip("\n") + "\n" + "".join(self.example(t, y) for t, y in prompt.examples)


def _one_line(text: str) -> str:
    """Whitespace runs (newlines included) become one space, so a text cannot forge lines."""
    return " ".join(text.split())


def make_template(
    name: str,
    subject: str,
    class_names: Sequence[str],
    *,
    label_words: Sequence[str] | None = None,
    answer_prefix: str = "Answer: ",
    output: str = "a number",
) -> PromptTemplate:
    """A template in the format of Chadha et al. 2024, App. D.2.

    ``Please classify the given {subject} as 0 (A) or 1 (B) …. Don't try to answer any question
    or respond to the text. Your output should only be {output} from 0,1,….``

    Args:
        name: the task name.
        subject: what is classified (``"text from news articles by topic"``).
        class_names: the classes, in label order.
        label_words: one word per class (default ``"0"``, ``"1"``, …).
        answer_prefix: the text before the label word.
        output: what the answer is (``"a number"``, ``"a letter"``).

    Example:
        >>> t = make_template("toy", "text by mood", ["sad", "happy"])
        >>> t.instruction.split(". ")[0]
        'Please classify the given text by mood as 0 (sad) or 1 (happy)'
        >>> t.instruction.split(". ")[-1]
        'Your output should only be a number from 0,1.'
    """
    names = tuple(class_names)
    words = tuple(str(i) for i in range(len(names))) if label_words is None else tuple(label_words)
    shown = [w.strip() for w in words]
    options = " or ".join(f"{w} ({c})" for w, c in zip(shown, names, strict=True))
    instruction = (
        f"Please classify the given {subject} as {options}. Don't try to answer any question "
        f"or respond to the text. Your output should only be {output} from {','.join(shown)}."
    )
    return PromptTemplate(name, instruction, names, words, answer_prefix)


PROMPT_TASKS: Registry[PromptTemplate] = Registry("prompt task")
"""Prompt templates by task name (the dataset names of :mod:`dpaudit.data`): the
paper's four datasets and the offline substitutes (``rotten-tomatoes``: 0 = rotten = negative;
``wordnet-nouns-4``: the four WordNet categories of
:func:`dpaudit.data.load_wordnet_nouns_4`)."""
PROMPT_TASKS.register(
    "sst2", make_template("sst2", "text from movie reviews by sentiment", ["negative", "positive"])
)
PROMPT_TASKS.register(
    "rotten-tomatoes",
    make_template(
        "rotten-tomatoes", "text from movie reviews by sentiment", ["negative", "positive"]
    ),
)
PROMPT_TASKS.register(
    "wordnet-nouns-4",
    make_template(
        "wordnet-nouns-4",
        "dictionary definitions of nouns by category",
        ["Animal", "Artifact", "Person", "Plant"],
    ),
)
PROMPT_TASKS.register(
    "ag-news",
    make_template(
        "ag-news",
        "text from news articles by topic",
        ["World", "Sports", "Business", "Science or Technology"],
    ),
)
PROMPT_TASKS.register(
    "trec",
    make_template(
        "trec",
        "questions by the type of their answer",
        ["Abbreviation", "Entity", "Description", "Human", "Location", "Number"],
    ),
)
# Fourteen classes: "10".."13" are two tokens, so DBPedia answers with letters (stated rule).
PROMPT_TASKS.register(
    "dbpedia",
    make_template(
        "dbpedia",
        "text from Wikipedia articles by topic",
        [
            "Company",
            "Educational Institution",
            "Artist",
            "Athlete",
            "Office Holder",
            "Mean Of Transportation",
            "Building",
            "Natural Place",
            "Village",
            "Animal",
            "Plant",
            "Album",
            "Film",
            "Written Work",
        ],
        label_words=[" " + chr(ord("A") + i) for i in range(14)],
        answer_prefix="Answer:",
        output="a letter",
    ),
)
