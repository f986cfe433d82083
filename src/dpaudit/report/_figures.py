"""The one figure helper of every plot: a matplotlib Figure on the Agg canvas.

No pyplot state and no GUI backend are touched, so plotting is safe in threads, servers and
tests. matplotlib is imported lazily (extra ``plot``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dpaudit.errors import require

__all__ = ["figure", "save"]


def figure(nrows: int, ncols: int, width: float, height: float) -> tuple[Any, Any]:
    """A constrained-layout Figure of ``nrows × ncols`` panels, each ``width × height`` inches.

    Args:
        nrows, ncols: panel grid.
        width, height: size of one panel in inches.

    Returns:
        ``(figure, axes)`` with ``axes`` a 2-d array (``axes[row][col]``).

    Raises:
        MissingDependencyError: matplotlib is not installed.

    Example:
        >>> fig, axes = figure(1, 2, 3.0, 2.0)  # doctest: +SKIP
        >>> tuple(fig.get_size_inches()), axes.shape  # doctest: +SKIP
        ((6.0, 2.0), (1, 2))
    """
    require("matplotlib", "plot")
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width * ncols, height * nrows), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(nrows, ncols, squeeze=False)
    return fig, axes


def save(fig: Any, path: str | Path, *, dpi: int = 120) -> Path:
    """Write ``fig`` as PNG to ``path`` (parent directories created) and return the path."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=dpi)
    return out
