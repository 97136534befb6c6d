"""The runner's per-file timeout for an est_time, read from the runner's revision or configured.

miles (tests/ci/ci_utils.py, 2026-08): `effective_timeout = max(timeout_per_file, int(estimated_time * 1.25))`.
sglang at HEAD (python/sglang/test/ci/ci_utils.py): `derive_timeout_per_file(est) = max(est *
DERIVED_TIMEOUT_FACTOR, est + DERIVED_TIMEOUT_SLACK)` with 1.5 and 1800.0 (under
`--timeout-from-est-time`). One shape covers both:

    timeout(est) = max(floor, int(factor x est), est + slack)

with floor the `--timeout-per-file` (miles) and no slack, or factor and slack and no floor
(sglang). `calibration.timeout_factor` / `timeout_slack_s` set it; both null: read here, from
the ci_utils module beside the register module (the default branch's copy, never a PR's). What
this reader does not recognise falls back to miles' model, and says so in `source`.
"""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class TimeoutModel:
    factor: float = 1.25
    slack: float | None = None  # est + slack: sglang's absolute headroom
    use_floor: bool = True  # max(timeout_per_file_s, ...): miles' floor
    source: str = "miles' runner (default)"

    def timeout(self, est_time: float, floor: float) -> int:
        terms = [int(self.factor * est_time)]
        if self.slack is not None:
            terms.append(int(est_time + self.slack))
        if self.use_floor:
            terms.append(int(floor))
        return max(terms)

    def set_by_est(self, est_time: float, floor: float) -> bool:
        """est_time sets the limit (not the flat floor): a run killed there needed more than est_time allowed."""
        return not self.use_floor or self.factor * est_time >= floor

    def describe(self) -> str:
        parts = (["timeout_per_file_s"] if self.use_floor else []) + [f"{self.factor:g} x est_time"]
        if self.slack is not None:
            parts.append(f"est_time + {self.slack:g} s")
        return f"max({', '.join(parts)})"


MILES = TimeoutModel()
SGLANG = TimeoutModel(1.5, 1800.0, False, "sglang's runner (derive_timeout_per_file)")


def with_runner_timeout(params: Any, read=None, register_module: str | None = None, cache=None):
    """`params` with timeout_factor / timeout_slack_s filled from the runner's revision when unset.
    `cache`: a scan cache (checks/scanning/scan_facts.py's hook) that keeps the model read from a
    module's content, as it keeps a test file's facts."""
    import msgspec

    if configured(params) is not None:
        return params
    model = timeout_model(params, read, register_module, cache)
    return msgspec.structs.replace(params, timeout_factor=model.factor, timeout_slack_s=model.slack)


def of_params(params: Any) -> TimeoutModel:
    """The model a `calibration:` section (or a mapping of its keys) states; miles' when it states none."""
    if isinstance(params, dict):
        from types import SimpleNamespace

        params = SimpleNamespace(**params)
    return configured(params) or MILES


def configured(params: Any) -> TimeoutModel | None:
    factor, slack = getattr(params, "timeout_factor", None), getattr(params, "timeout_slack_s", None)
    if factor is None and slack is None:
        return None
    return TimeoutModel(float(factor if factor is not None else 1.0), None if slack is None else float(slack),
                        slack is None, "calibration.timeout_factor / timeout_slack_s")


def _constants(tree: ast.Module) -> dict[str, float]:
    out = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name) \
                and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, (int, float)):
            out[stmt.targets[0].id] = float(stmt.value.value)
    return out


def _number(node: ast.AST, constants: dict[str, float]) -> float | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return float(node.value)
    if isinstance(node, ast.Name):
        return constants.get(node.id)
    return None


@functools.lru_cache(maxsize=4)  # a check and `calibrate` ask twice of one revision's module (the model is frozen)
def read_timeout_model(source: bytes | str | None, where: str = "ci_utils.py") -> TimeoutModel | None:
    """The model a runner's ci_utils module implements, or None when it says nothing recognisable."""
    if not source:
        return None
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    constants = _constants(tree)
    for node in ast.walk(tree):
        # sglang: def derive_timeout_per_file(est): return max(est * F, est + S)
        if isinstance(node, ast.FunctionDef) and node.name == "derive_timeout_per_file":
            for ret in (n for n in ast.walk(node) if isinstance(n, ast.Return)):
                call = ret.value
                if isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "max":
                    factor = slack = None
                    for arg in call.args:
                        if isinstance(arg, ast.BinOp) and isinstance(arg.op, ast.Mult):
                            factor = _number(arg.right, constants) or _number(arg.left, constants)
                        elif isinstance(arg, ast.BinOp) and isinstance(arg.op, ast.Add):
                            slack = _number(arg.right, constants) or _number(arg.left, constants)
                    if factor is not None:
                        return TimeoutModel(factor, slack, False, f"{where}: derive_timeout_per_file")
        # miles: max(timeout_per_file, int(estimated_time * 1.25))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "max" and len(node.args) == 2:
            first, second = node.args
            if isinstance(first, ast.Name) and "timeout" in first.id and isinstance(second, ast.Call) \
                    and isinstance(second.func, ast.Name) and second.func.id == "int" and second.args \
                    and isinstance(second.args[0], ast.BinOp) and isinstance(second.args[0].op, ast.Mult):
                product = second.args[0]
                factor = _number(product.right, constants) or _number(product.left, constants)
                if factor is not None:
                    return TimeoutModel(factor, None, True, f"{where}: max({first.id}, int(est x {factor:g}))")
    return None


def ci_utils_path(register_module: str) -> str:
    """The runner's helpers beside the register module (tests/ci/ci_utils.py, python/sglang/test/ci/ci_utils.py)."""
    head, _, _name = register_module.rpartition("/")
    return f"{head}/ci_utils.py" if head else "ci_utils.py"


def timeout_model(params: Any, read=None, register_module: str | None = None, cache=None) -> TimeoutModel:
    """Configured, else read from the runner's revision through `read(path) -> bytes | None`, else miles'."""
    model = configured(params)
    if model is not None:
        return model
    if read is not None and register_module:
        path = ci_utils_path(register_module)
        try:
            found = _cached_model(read(path), path, cache)
        except Exception:  # noqa: BLE001 - an unreadable helper module: the default model, said in `source`
            found = None
        if found is not None:
            return found
    return MILES


@functools.lru_cache(maxsize=1)
def _reader_version() -> str:
    """A digest of this reader's own source: an edited reader never takes an older answer from a cache."""
    import hashlib

    with open(__file__, "rb") as handle:
        return hashlib.sha256(handle.read()).hexdigest()[:16]


def _cached_model(source: bytes | str | None, where: str, cache) -> TimeoutModel | None:
    """read_timeout_model, kept in `cache` by the module's content: the runner's helpers are a
    25 KB module whose parse was a fifth of what `calibrate` adds to a warm check."""
    if cache is None or not source:
        return read_timeout_model(source, where)
    import hashlib

    data = source.encode("utf-8") if isinstance(source, str) else source
    key = f"timeout-model:{_reader_version()}:{hashlib.sha256(data).hexdigest()[:32]}:{where}"
    try:
        kept = cache.get_many([key]).get(key)
    except Exception:  # noqa: BLE001 - a cache: read the module instead
        kept = None
    if isinstance(kept, dict) and "model" in kept:
        model = kept["model"]
        try:
            return None if model is None else TimeoutModel(float(model[0]), None if model[1] is None else float(model[1]),
                                                         bool(model[2]), str(model[3]))
        except (TypeError, ValueError, IndexError):
            pass  # not an entry this reader wrote: read the module
    found = read_timeout_model(source, where)
    try:
        cache.put_many({key: {"model": None if found is None else [found.factor, found.slack, found.use_floor, found.source]}})
    except Exception:  # noqa: BLE001 - a cache that cannot keep it: the answer stands
        pass
    return found
