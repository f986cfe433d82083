"""Exceptions and warnings of dpaudit (layer 1)."""

from __future__ import annotations

__all__ = [
    "BudgetExhaustedError",
    "ConvergenceWarning",
    "DPAuditError",
    "FallbackWarning",
    "MissingDatasetError",
    "MissingDependencyError",
    "require",
]


class DPAuditError(Exception):
    """Base class of dpaudit's own errors."""


class MissingDependencyError(DPAuditError, ImportError):
    """An optional dependency is not installed; the message names the extra to install."""


class MissingDatasetError(DPAuditError, FileNotFoundError):
    """An offline dataset is not on this machine; the message says exactly what to install."""


class ConvergenceWarning(UserWarning):
    """A numerical routine stopped before reaching its stated tolerance."""


class FallbackWarning(UserWarning):
    """An analysis fell back to a looser bound because a validity condition failed."""


def require(module: str, extra: str):
    """Import an optional dependency lazily, or raise a helpful error.

    Args:
        module: importable module name, e.g. ``"torch"``.
        extra: the dpaudit extra that provides it, e.g. ``"torch"``.

    Returns:
        The imported module.

    Raises:
        MissingDependencyError: the module is not installed.
    """
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:  # pragma: no cover - depends on the environment
        hint = (
            "pip install torch==2.13.0 && pip install 'dpaudit[torch]'"
            if extra == "torch"
            else f"pip install 'dpaudit[{extra}]'"
        )
        raise MissingDependencyError(
            f"{module!r} is required for this feature but is not installed. Install it with: {hint}"
        ) from exc


class BudgetExhaustedError(DPAuditError):
    """A privacy ledger refused a charge that would exceed its budget."""
