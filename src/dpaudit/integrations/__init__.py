"""Audit your own training loop (layer between the workflows and the attacks).

* :mod:`dpaudit.integrations.opacus` — :class:`~dpaudit.integrations.opacus.CanaryAuditor`:
  white-box canary gradients in an unmodified Opacus training loop (two added lines), and
  after training an :class:`~dpaudit.AuditResult` with the accountant's claim beside the
  one-run bounds.

torch and opacus are imported only when an auditor is attached (extra ``opacus``).
"""

__all__: list[str] = []
