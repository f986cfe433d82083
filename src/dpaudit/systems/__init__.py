"""dpaudit.systems."""
