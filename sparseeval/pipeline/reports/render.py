"""Render a report's blocks (h1, h2, p, ul, code, table, img) as Markdown or HTML."""

from __future__ import annotations

import base64
import html
import math
import re
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from sparseeval.pipeline.reports.plots import PLOTS


def to_markdown(blocks) -> str:
    lines: list[str] = []
    for b in blocks:
        kind = b[0]
        if kind == "h1":
            lines += [f"# {b[1]}", ""]
        elif kind == "h2":
            lines += [f"## {b[1]}", ""]
        elif kind == "p":
            lines += [b[1], ""]
        elif kind == "ul":
            lines += [f"- {t}" for t in b[1]] + [""]
        elif kind == "code":
            lines += ["```", b[1], "```", ""]
        elif kind == "table":
            head, rows = b[1], b[2]
            lines.append("| " + " | ".join(map(str, head)) + " |")
            lines.append("|" + "---|" * len(head))
            lines += ["| " + " | ".join(map(str, r)) + " |" for r in rows]
            lines.append("")
        elif kind == "img":
            lines += [f"![{b[1].stem}]({PLOTS}/{b[1].name})", ""]
    return "\n".join(lines)


def _inline(text: str) -> str:
    """Escape, then render `code` and _italic_ spans as Markdown would."""

    t = html.escape(str(text))
    t = re.sub(r"`([^`]+)`", r"<code>\1</code>", t)
    return re.sub(r"(?<!\w)_\(([^)]*)\)_(?!\w)", r"<em>(\1)</em>", t)


def to_html(blocks, out: Path, title: str) -> str:
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'>",
        f"<title>{html.escape(title)}</title><style>",
        "body{font-family:system-ui,sans-serif;max-width:960px;margin:2em auto;padding:0 1em;"
        "line-height:1.45;color:#222}table{border-collapse:collapse;margin:.5em 0}"
        "td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}th{background:#f3f3f3}"
        "td:first-child{text-align:left}pre{background:#f6f6f6;padding:.8em;overflow:auto}"
        "img{max-width:100%;border:1px solid #eee}code{background:#f3f3f3;padding:0 3px}",
        "</style></head><body>",
    ]
    for b in blocks:
        kind = b[0]
        if kind in ("h1", "h2"):
            parts.append(f"<{kind}>{html.escape(b[1])}</{kind}>")
        elif kind == "p":
            parts.append(f"<p>{_inline(b[1])}</p>")
        elif kind == "ul":
            parts.append("<ul>" + "".join(f"<li>{_inline(t)}</li>" for t in b[1]) + "</ul>")
        elif kind == "code":
            parts.append(f"<pre><code>{html.escape(b[1])}</code></pre>")
        elif kind == "table":
            head = "".join(f"<th>{html.escape(str(h))}</th>" for h in b[1])
            body = "".join(
                "<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in r) + "</tr>"
                for r in b[2]
            )
            parts.append(f"<table><tr>{head}</tr>{body}</table>")
        elif kind == "img":
            data = base64.b64encode(Path(b[1]).read_bytes()).decode()
            parts.append(f"<p><img alt='{b[1].stem}' src='data:image/png;base64,{data}'></p>")
    parts.append("</body></html>")
    return "\n".join(parts)


def json_ready(obj):
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, np.floating | np.integer):
        return json_ready(obj.item())
    if isinstance(obj, Mapping):
        return {str(k): json_ready(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple | np.ndarray):
        return [json_ready(v) for v in obj]
    return obj


__all__ = [
    "json_ready",
    "to_html",
    "to_markdown",
]
