"""``dpaudit attack extract-histogram``: vote-histogram extraction (Wang et al. 2022).

The attack of Wang et al. 2022, "In Differential Privacy, There is Truth: On Vote Leakage in
Ensemble Private Learning" (arXiv:2209.10732). Three modes:

* ``--votes 4,7,6,8,4,2,0,214,4,1 --sigma 40 --queries 10000 --seed 0``: simulate M answers of
  a GNMax interface for that histogram, reconstruct it, print the estimate with per-class
  intervals, the normalised L1 error and the defender's privacy cost
  (:func:`dpaudit.experiments.vote_leakage.extraction.simulate_extraction`).
* ``--url http://127.0.0.1:8000 --api-key KEY --query 0,0.5,… [--queries M | --until-refused]``:
  the attack against a live :mod:`dpaudit.serve` service over HTTP
  (:func:`dpaudit.attacks.audit_remote_extraction`); prints the estimate and the ε the
  service's ledger charged the key (``--json``: the AuditResult). The key may come from the
  ``DPAUDIT_API_KEY`` environment variable instead (keeps it out of the process list).
* ``--config vote_leakage_mnist [--out DIR]`` (a shipped config by name, or a TOML file; an
  empty file is refused rather than run as every default): the
  whole reproduction (:func:`dpaudit.experiments.vote_leakage.pipeline.run_vote_leakage`), writing
  ``results.json`` (the :class:`~dpaudit._results.AuditResult`) and PNG plots
  (:func:`dpaudit.report.write_vote_leakage_report`); ``--json`` prints the AuditResult.
"""

from __future__ import annotations

from dpaudit.cli._app import attack_app, typer
from dpaudit.cli._common import emit, fail, parse_floats


def _render_simulated(console, r) -> None:
    from rich.table import Table

    rec = r.reconstruction
    t = Table(
        title=(
            f"Reconstructed histogram: σ = {r.sigma:g}, M = {r.num_queries}, "
            f"N = {rec.num_teachers}, objective = {rec.objective}"
        )
    )
    t.add_column("class", justify="right")
    t.add_column("true votes", justify="right")
    t.add_column("answers", justify="right")
    t.add_column("estimate", justify="right")
    if rec.integer_votes is not None:
        t.add_column("rounded", justify="right")
    if rec.intervals is not None:
        t.add_column(
            f"{rec.confidence_level:.0%} interval ({rec.interval_method})", justify="right"
        )
    for c in range(rec.num_classes):
        row = [str(c), f"{r.true_votes[c]:g}", str(int(r.counts[c])), f"{rec.votes[c]:.2f}"]
        if rec.integer_votes is not None:
            row.append(str(int(rec.integer_votes[c])))
        if rec.intervals is not None:
            iv = rec.intervals[c]
            row.append(f"[{iv.low:.2f}, {iv.high:.2f}]")
        t.add_row(*row)
    console.print(t)
    line = f"normalised L1 error: {r.error:.4f}"
    if r.integer_error is not None:
        line += f" (rounded: {r.integer_error:.4f})"
    console.print(line)
    c = r.cost
    console.print(
        f"defender's cost of the {c.num_queries} queries at δ = {c.delta:g} ({c.conversion}): "
        f"ε = {c.epsilon_data_dependent:.3f} data-dependent, "
        f"{c.epsilon_data_independent:.3f} data-independent"
    )
    if not rec.converged:
        console.print("[yellow]warning: the optimiser did not fully converge[/yellow]")


def _refuse_empty_config(config: str) -> None:
    """Refuse a config file that sets nothing.

    An empty TOML would silently mean every default, i.e. the whole MNIST reproduction (minutes
    of work); that is almost always a wrong or truncated file, so it is refused before any work.
    The defaults are one explicit name away: ``--config vote_leakage_mnist``, or
    ``dpaudit audit vote-leakage`` (its flags are generated from ``VoteLeakageConfig``).
    """
    from dpaudit._settings import _toml, find_config

    path = find_config(config)
    try:
        table = _toml.loads(path.read_text())
    except _toml.TOMLDecodeError:
        return  # the loader reports the syntax error with its location
    if not table:
        raise ValueError(
            f"config file {str(path)!r} sets no option; an empty config is refused rather than "
            "run as the full default reproduction (minutes). Give the settings to change, "
            "the shipped config by name (--config vote_leakage_mnist), or use "
            "`dpaudit audit vote-leakage` with its flags"
        )


def _reproduction(config: str, out: str | None, json_: bool) -> None:
    """Run the reproduction, write its report, print the tables or the AuditResult."""
    from dpaudit.cli._options import check_out
    from dpaudit.experiments.vote_leakage.pipeline import load_vote_leakage_config, run_vote_leakage
    from dpaudit.report.vote_leakage import render_vote_leakage, write_vote_leakage_report

    try:
        _refuse_empty_config(config)
        cfg = load_vote_leakage_config(config)
    except (OSError, ValueError, TypeError) as exc:
        fail(f"--config: {exc}")
    try:  # --out is checked before the reproduction runs, not when its report is written
        check_out(out if out is not None else str(cfg.out_dir))
    except ValueError as exc:
        fail(str(exc))
    result = run_vote_leakage(cfg, progress=not json_)
    paths = write_vote_leakage_report(result, out if out is not None else cfg.out_dir)
    emit(result, as_json=json_, render=render_vote_leakage)
    if not json_:
        for p in paths.values():
            typer.echo(f"wrote {p}")


def _render_remote(console, result) -> None:
    from rich.table import Table

    r = result.detail
    ext = result.entries[0].detail
    rec = ext.reconstruction
    info = result.settings["service"]
    t = Table(
        title=(
            f"Reconstructed histogram of {info['system']} at {result.settings['url']}: "
            f"σ = {info['sigma']:g}, N = {ext.num_teachers}, {ext.num_answered} answers"
        )
    )
    for col in ("class", "answers", "estimate"):
        t.add_column(col, justify="right")
    if rec is not None and rec.intervals is not None:
        t.add_column(f"{rec.confidence_level:.0%} interval", justify="right")
    for c in range(ext.num_classes):
        row = [str(c), str(int(ext.counts[c])), "–" if rec is None else f"{rec.votes[c]:.2f}"]
        if rec is not None and rec.intervals is not None:
            row.append(f"[{rec.intervals[c].low:.2f}, {rec.intervals[c].high:.2f}]")
        t.add_row(*row)
    console.print(t)
    console.print(
        f"stopped: {ext.stopped} after {ext.num_sent} queries ({ext.num_abstained} abstained, "
        f"{ext.num_refused} refused)"
    )
    b0, b1 = r["budget_before"], r["budget_after"]
    console.print(
        f"budget consumed: the key's ε went from {b0.epsilon_spent:.6g} to "
        f"{b1.epsilon_spent:.6g} of {b1.epsilon_budget:g} at δ = {b1.delta:g} ({b1.analysis}); "
        f"the service's ε is {b1.global_epsilon_spent:.6g} of {b1.global_epsilon_budget:g}"
    )


def _remote(url, api_key, query, queries, until_refused, batch_size, kw, json_) -> None:
    """The attack against a live service (``--url``)."""
    from dpaudit.attacks import RemoteInterfaceError, audit_remote_extraction, remote_interface

    if query is None:
        fail("--url needs --query (the features of the query to repeat, comma-separated)")
    try:
        row = parse_floats("--query", query)
        with remote_interface(url, api_key) as api:
            result = audit_remote_extraction(
                api,
                row,
                num_queries=None if until_refused else queries,
                batch_size=batch_size,
                **kw,
            )
    except (ValueError, TypeError, RemoteInterfaceError) as exc:
        fail(str(exc))
        return
    except OSError as exc:  # connection refused, DNS …
        fail(f"cannot reach {url}: {exc}")
        return
    emit(result, as_json=json_, render=_render_remote)


@attack_app.command("extract-histogram")
def extract_histogram_command(
    votes: str = typer.Option(None, help="True vote histogram to simulate, e.g. 4,7,6,8,4."),
    sigma: float = typer.Option(40.0, help="GNMax noise standard deviation σ."),
    queries: int = typer.Option(10_000, help="Number of repeated queries M."),
    teachers: int = typer.Option(None, help="Number of teachers N (default: sum of --votes)."),
    objective: str = typer.Option("mle", help="Objective: mle | l2."),
    intervals: str = typer.Option("profile", help="Intervals: profile | bootstrap | none."),
    confidence_level: float = typer.Option(0.95, help="Per-class confidence level."),
    delta: float = typer.Option(1e-5, help="δ of the privacy cost."),
    seed: int = typer.Option(0, help="Random seed of the simulated answers."),
    config: str = typer.Option(
        None, help="Config of the reproduction: a TOML file or a shipped name (vote_leakage_mnist)."
    ),
    out: str = typer.Option(None, help="Output directory of --config (default: its out_dir)."),
    url: str = typer.Option(None, help="Attack a live dpaudit serve service at this URL."),
    api_key: str = typer.Option(
        None, help="API key of --url (default: the DPAUDIT_API_KEY environment variable)."
    ),
    query: str = typer.Option(None, help="--url: the query's features, comma-separated."),
    until_refused: bool = typer.Option(
        False, help="--url: query until the service refuses (budget-limited mode)."
    ),
    batch_size: int = typer.Option(256, help="--url: queries per request."),
    json_: bool = typer.Option(False, "--json", help="Print the result as JSON."),
) -> None:
    """Reconstruct PATE's vote histogram from repeated answers (Wang et al. 2022)."""
    if sum(x is not None for x in (votes, config, url)) != 1:
        fail(
            "give exactly one of --votes (one histogram), --config (the reproduction) or --url "
            "(a live service)"
        )
    if url is not None:
        kw = dict(
            objective=objective,
            intervals=intervals,
            confidence_level=confidence_level,
            rng=seed,
        )
        _remote(url, api_key, query, queries, until_refused, batch_size, kw, json_)
        return
    if config is not None:
        _reproduction(config, out, json_)
        return
    from dpaudit.experiments.vote_leakage.extraction import simulate_extraction

    try:
        result = simulate_extraction(
            parse_floats("--votes", votes),
            sigma,
            queries,
            num_teachers=teachers,
            objective=objective,
            intervals=intervals,
            confidence_level=confidence_level,
            delta=delta,
            rng=seed,
        )
    except (ValueError, TypeError) as exc:
        fail(str(exc))
    emit(result, as_json=json_, render=_render_simulated)


def _render_distinguish(console, result) -> None:
    from rich.table import Table

    e = result.entries[0]
    lam = e.lower_bound.rdp.orders
    t = Table(
        title=(
            f"Black-box RDP audit of one answer of {e.system}: "
            f"{result.settings['repetitions']} answers from each deployment"
        )
    )
    for col in ("order α", "lower bound", "claim"):
        t.add_column(col, justify="right")
    for i in range(lam.size):
        t.add_row(
            f"{lam[i]:g}",
            f"{e.lower_bound.rdp.epsilons[i]:.4g}",
            f"{e.claim.rdp.epsilons[i]:.4g}",
        )
    console.print(t)
    verdict = "REFUTED" if e.gap.refutes_claim else "not refuted"
    console.print(
        f"claim ({e.claim.source}): {verdict} at {e.lower_bound.confidence_level:.0%} "
        f"(largest excess of the lower bound over the claim: {e.gap.rdp_excess:.4g})"
    )


@attack_app.command("distinguish")
def distinguish_command(
    url: str = typer.Option(..., help="The service trained on S."),
    neighbour_url: str = typer.Option(..., help="The service trained on S' (with [canary])."),
    query: str = typer.Option(..., help="The query's features, comma-separated."),
    repetitions: int = typer.Option(10_000, help="Answers asked of each service."),
    api_key: str = typer.Option(None, help="Key of --url (default: $DPAUDIT_API_KEY)."),
    neighbour_api_key: str = typer.Option(
        None, help="Key of --neighbour-url (default: --api-key)."
    ),
    batch_size: int = typer.Option(256, help="Queries per request."),
    confidence_level: float = typer.Option(0.95, help="Confidence of the lower bound."),
    seed: int = typer.Option(0, help="Seed of the held-out split."),
    json_: bool = typer.Option(False, "--json", help="Print the AuditResult as JSON."),
) -> None:
    """Audit two live deployments, S and S' (Chadha et al. 2024 adversarial distinguisher)."""
    from dpaudit.attacks import RemoteInterfaceError, distinguish_remote, remote_interface

    try:
        row = parse_floats("--query", query)
        with (
            remote_interface(url, api_key) as a,
            remote_interface(neighbour_url, neighbour_api_key or api_key) as b,
        ):
            result = distinguish_remote(
                a, b, row, repetitions=repetitions, batch_size=batch_size,
                confidence_level=confidence_level, rng=seed,
            )  # fmt: skip
    except (ValueError, TypeError, RemoteInterfaceError) as exc:
        fail(str(exc))
        return
    except OSError as exc:
        fail(f"cannot reach a service: {exc}")
        return
    emit(result, as_json=json_, render=_render_distinguish)


@attack_app.command("craft")
def craft_command(
    url: str = typer.Option(..., help="The service trained on S."),
    query: str = typer.Option(..., help="The source query's features, comma-separated."),
    label: int = typer.Option(..., help="The source query's true label."),
    crafter: str = typer.Option("poisoning", help="natural | poisoning."),
    queries: int = typer.Option(2000, help="Answers used to estimate the votes (poisoning)."),
    teacher: int = typer.Option(0, help="The teacher that receives the point in S'."),
    api_key: str = typer.Option(None, help="Key of --url (default: $DPAUDIT_API_KEY)."),
    seed: int = typer.Option(0, help="Seed of the estimate."),
) -> None:
    """Craft the point S' adds and print the [canary] table of its deployment (TOML)."""
    from dpaudit.attacks import RemoteInterfaceError, craft_remote, remote_interface

    try:
        row = parse_floats("--query", query)
        with remote_interface(url, api_key) as api:
            point = craft_remote(
                api, row, true_label=label, crafter=crafter, num_queries=queries, rng=seed
            )
    except (ValueError, TypeError, RemoteInterfaceError) as exc:
        fail(str(exc))
        return
    except OSError as exc:
        fail(f"cannot reach {url}: {exc}")
        return
    features = ", ".join(repr(float(v)) for v in point.x)
    typer.echo(
        f"# {point.crafter} point (true label {point.true_label}); deploy S' with:\n"
        f"[canary]\nfeatures = [{features}]\nlabel = {point.label}\nteacher = {teacher}"
    )
