"""Source text helpers: decoding test files and exact 1-based positions from ast nodes."""

from __future__ import annotations

import ast

from checks.model import Span


def decode_source(data: bytes) -> tuple[str | None, str | None]:
    """(text, None), or (None, why) for bytes Python itself would refuse to read as UTF-8 source."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return None, f"not UTF-8 (byte {exc.start}: {exc.reason})"
    # Python reads \r\n and a lone \r as line ends too; normalising keeps ast's line numbers and
    # the engine's `split("\n")` in step (columns are unchanged: only line ends are rewritten).
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text.removeprefix("\ufeff"), None


def char_column(line: str, byte_offset: int) -> int:
    """ast gives UTF-8 byte offsets; annotations and editors count characters."""
    if line.isascii():
        return byte_offset
    return len(line.encode("utf-8")[:byte_offset].decode("utf-8", errors="ignore"))


def node_span(node: ast.AST, lines: list[str]) -> Span:
    line = node.lineno
    end_line = getattr(node, "end_lineno", None) or line
    col = char_column(lines[line - 1], node.col_offset) if line - 1 < len(lines) else node.col_offset
    end_off = getattr(node, "end_col_offset", None)
    if end_off is None:
        end_col = col + 1
    else:
        end_col = char_column(lines[end_line - 1], end_off) if end_line - 1 < len(lines) else end_off
    return Span(line, col + 1, end_line, end_col + 1)


def source_segment(lines: list[str], span: Span) -> str:
    if span.line == span.end_line:
        return lines[span.line - 1][span.column - 1 : span.end_column - 1]
    parts = [lines[span.line - 1][span.column - 1 :]]
    parts.extend(lines[span.line : span.end_line - 1])
    parts.append(lines[span.end_line - 1][: span.end_column - 1])
    return "\n".join(parts)
