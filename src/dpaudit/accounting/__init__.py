"""Upper bounds: privacy accounting (layer 3).

Owned by the accounting work (issue 4). Never imports ``dpaudit.bounds``.
"""

__all__: list[str] = []
