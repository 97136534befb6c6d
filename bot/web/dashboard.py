"""The durations dashboard: per repository and suite, each test's stored durations against its est_time.

Server-rendered HTML with inline SVG plots: no scripts, no external assets, nothing fetched.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime, timedelta, timezone
from urllib.parse import quote, urlencode

from flask import Blueprint, abort, current_app, request
from markupsafe import Markup, escape

from bot.web.pages import render
from bot.web.signin import signed_in
from checks.calibration.estimates import CalibrationParams, calibrate, runner_timeout

blueprint = Blueprint("durations_dashboard", __name__)

OUTCOME_COLOURS = {"PASS": "#1a7f37", "FAIL": "#cf222e", "TIMEOUT": "#bc4c00"}


def _store_url() -> str:
    settings = current_app.config.get("SETTINGS")
    if settings is None:
        from bot.infra.settings import load_settings

        settings = load_settings()
    return settings.database_url


def _params() -> CalibrationParams:
    return current_app.config.get("CALIBRATION") or CalibrationParams()


def _s(value) -> str:
    if value is None:
        return "–"
    return f"{value:.0f}"


def _test_url(repository: str, file: str, backend: str, hardware: str) -> str:
    return f"/durations/{quote(repository)}/{quote(file)}?" + urlencode({"backend": backend, "hardware": hardware})


@blueprint.route("/durations")
@signed_in
def index(viewer):
    from bot.durations.query import latest_est_times, query_stats, repositories

    url = _store_url()
    params = _params()
    wanted_repo = request.args.get("repo") or None
    wanted_hw = request.args.get("hardware") or None
    # Only the repositories the signed-in person can see on GitHub.
    repos = [r for r in ([wanted_repo] if wanted_repo else repositories(url)) if viewer.sees(r)]
    sections = []
    for repo in repos:
        rows = query_stats(url, repository=repo, hardware=wanted_hw, params=params)
        # The latest est_time the runner logged for the file, even from a run outside the window.
        est_times = latest_est_times(url, repo) if rows else {}
        by_suite: dict[str, list] = defaultdict(list)
        for row in rows:
            row.est_time = est_times.get((row.file, row.backend), row.est_time)
            by_suite[row.suite or "(no suite)"].append(row)
        suites = []
        for suite in sorted(by_suite):
            suites.append({"name": suite, "rows": [
                {"file": row.file, "url": _test_url(repo, row.file, row.backend, row.hardware), "backend": row.backend,
                 "hardware": row.hardware, "est_time": _s(row.est_time), "n": row.n, "median": _s(row.median),
                 "p90": _s(row.p90), "max": _s(row.max), "verdict": _verdict(row, params)}
                for row in sorted(by_suite[suite], key=lambda r: (r.file, r.backend, r.hardware))]})
        sections.append({"repository": repo, "suites": suites})
    return render("durations.html", title="Stored durations", params=params, sections=sections, nav=True,
                  here="durations", viewer=viewer.login)


def _verdict(row, params) -> dict:
    """{level, label, why} of a row's est_time against its durations (REG020/REG021's judgement)."""
    if row.est_time is None:
        return {"level": "notice", "label": "est_time unknown", "why": "no est_time logged with these measurements"}
    if row.hardware != params.hardware:
        return {"level": "notice", "label": f"not {params.hardware}: not judged", "why": ""}
    result = calibrate(row.est_time, row.stats, params, since=row.since, hardware=row.hardware)
    label = {"ok": "ok"}.get(result.kind, result.kind)
    if result.suggested is not None and result.kind != "ok":
        label += f" (suggest {result.suggested})"
    return {"level": result.severity or "ok", "label": label, "why": result.message}


@blueprint.route("/durations/<owner>/<name>/<path:file>")
@signed_in
def test_page(owner: str, name: str, file: str, viewer):
    from bot.durations.query import history

    repository = f"{owner}/{name}"
    if not viewer.sees(repository):
        abort(404)
    backend = request.args.get("backend") or None
    hardware = request.args.get("hardware") or None
    records = history(_store_url(), repository, file, backend=backend, hardware=hardware)
    if not records:
        abort(404)
    params = _params()
    est_times = [r["est_time"] for r in records if r["est_time"] is not None]
    return render("durations_test.html", title=f"{file} · {repository}", file=file, repository=repository,
                  backend=backend, hardware=hardware, attempts=len(records),
                  latest_est=_s(est_times[-1]) if est_times else "unknown",
                  plot=render_plot(records, timeout_per_file_s=params.timeout_per_file_s),
                  history=[dict(r, elapsed=_s(r["elapsed_s"]), est=_s(r["est_time"])) for r in reversed(records)],
                  nav=True, here="durations", viewer=viewer.login)


def _parse(ts: str) -> datetime:
    return datetime.fromisoformat(ts.replace("Z", "+00:00"))


def render_plot(records: list[dict], *, timeout_per_file_s: int = 1800, width: int = 760, height: int = 320) -> Markup:
    """An SVG of elapsed seconds over time: one circle per attempt, est_time and runner-timeout steps."""
    left, right, top, bottom = 56, 44, 14, 36
    pw, ph = width - left - right, height - top - bottom
    times = [_parse(r["measured_at"]) for r in records]
    t0, t1 = min(times), max(times)
    if t1 - t0 < timedelta(hours=1):
        t0, t1 = t0 - timedelta(hours=12), t1 + timedelta(hours=12)
    span = (t1 - t0).total_seconds()
    timeouts = [
        r["timeout_after_s"] or (runner_timeout(r["est_time"], timeout_per_file_s) if r["est_time"] is not None else None)
        for r in records
    ]
    top_value = max([r["elapsed_s"] for r in records] + [r["est_time"] or 0 for r in records] + [t or 0 for t in timeouts])
    y_max = _nice(top_value * 1.08 or 1)

    def x(t: datetime) -> float:
        return left + pw * (t - t0).total_seconds() / span

    def y(v: float) -> float:
        return top + ph * (1 - v / y_max)

    out = [f"<svg xmlns=\"http://www.w3.org/2000/svg\" id=durations-plot class=plot width={width} height={height} "
           f"viewBox=\"0 0 {width} {height}\" role=img aria-label=\"measured durations over time\">"]
    for i in range(6):  # y grid
        v = y_max * i / 5
        out.append(f"<line x1={left} x2={left + pw} y1={y(v):.1f} y2={y(v):.1f} stroke=#eaeef2 />"
                   f"<text x={left - 6} y={y(v) + 4:.1f} font-size=11 text-anchor=end fill=#57606a>{v:.0f}</text>")
    for i in range(5):  # x ticks
        t = t0 + (t1 - t0) * i / 4
        label = t.strftime("%Y-%m-%d" if span > 4 * 86400 else "%m-%d %H:%M")
        out.append(f"<text x={x(t):.1f} y={top + ph + 18} font-size=11 text-anchor=middle fill=#57606a>"
                   f"{label}</text>")
    out.append(f"<text x=12 y={top + ph / 2:.0f} font-size=11 fill=#57606a transform=\"rotate(-90 12 {top + ph / 2:.0f})\" "
               "text-anchor=middle>seconds</text>")
    out.append(f"<rect x={left} y={top} width={pw} height={ph} fill=none stroke=#d0d7de />")
    out.append(_step_line(times, [r["est_time"] for r in records], x, y, left + pw, "est-time", "#0969da", ""))
    out.append(_step_line(times, timeouts, x, y, left + pw, "timeout", "#cf222e", " stroke-dasharray=\"6 4\""))
    for t, r in zip(times, records):
        colour = OUTCOME_COLOURS.get(r["outcome"], "#57606a")
        tip = f"{r['measured_at']} {r['outcome']} {r['elapsed_s']:.0f} s (attempt {r['attempt']})"
        out.append(f"<circle class=point data-outcome={r['outcome']} cx={x(t):.1f} cy={y(r['elapsed_s']):.1f} r=4 "
                   f"fill={colour}><title>{escape(tip)}</title></circle>")
    out.append("</svg>")
    return Markup("".join(out))


def _step_line(times, values, x, y, x_end, cls, colour, extra) -> str:
    """A step polyline: each value holds from its measurement until the next one changes it."""
    points = []
    last = None
    for t, v in zip(times, values):
        if v is None:
            continue
        if last is not None:
            points.append((x(t), y(last)))
        points.append((x(t), y(v)))
        last = v
    if not points:
        return ""
    points.insert(0, (min(points[0][0], x(times[0])), points[0][1]))
    points.append((x_end, y(last)))
    coords = " ".join(f"{px:.1f},{py:.1f}" for px, py in points)
    return f"<polyline class={cls} points=\"{coords}\" fill=none stroke={colour} stroke-width=2{extra} />"


def _nice(value: float) -> float:
    """A round axis maximum at or above value."""
    import math

    exp = 10 ** math.floor(math.log10(value))
    for step in (1, 2, 2.5, 5, 10):
        if step * exp >= value:
            return step * exp
    return 10 * exp


__all__ = ["blueprint", "render_plot"]
