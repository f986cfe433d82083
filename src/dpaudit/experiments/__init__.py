"""dpaudit.experiments."""
