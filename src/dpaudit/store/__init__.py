"""The run store (layer 8): every audit recorded in SQLite, listed, compared, resumed.

* :class:`RunStore` — ``start`` / ``finish`` / ``fail`` / ``resume`` a run, ``record`` as a
  context manager, ``list``, ``get`` (by id, prefix or suffix), ``remove``. A run keeps its
  :class:`~dpaudit.AuditResult`, settings, seed, package versions, timings and the files it
  wrote (:class:`Artefact`: path, size, SHA-256).
* :func:`compare_runs` — two runs side by side (settings that differ, every entry's numbers).
* :func:`default_store_path` — ``$DPAUDIT_STORE`` or ``~/.local/share/dpaudit/runs.sqlite``.

The command line: ``dpaudit runs list | show ID | compare ID ID | rm ID`` (``--json``);
audit commands record their runs (``--store PATH``, ``--no-store``, ``--resume ID``).
Standard library only (``sqlite3``).
"""

from dpaudit.store.compare import (
    EntryComparison,
    RunComparison,
    SettingDifference,
    compare_runs,
    flatten,
)
from dpaudit.store.runs import (
    STATUSES,
    STORE_ENV,
    Artefact,
    RunHandle,
    RunNotFoundError,
    RunRecord,
    RunStore,
    default_store_path,
)

__all__ = [
    "STATUSES",
    "STORE_ENV",
    "Artefact",
    "EntryComparison",
    "RunComparison",
    "RunHandle",
    "RunNotFoundError",
    "RunRecord",
    "RunStore",
    "SettingDifference",
    "compare_runs",
    "default_store_path",
    "flatten",
]
