"""dpaudit.attacks."""
