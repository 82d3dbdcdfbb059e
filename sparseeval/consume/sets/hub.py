"""Fetch published versions back from a Hugging Face Hub dataset repo (the consumer's side).

The pipeline pushes them with `sparseeval.pipeline.mirror`. Also home of `redact`, the
one place that scrubs Hub tokens from text (dependency-free,
so the light install can use it too).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from sparseeval.consume.sets.layout import (
    DEFAULT,
    LATEST,
    MANIFEST,
    AnchorSetError,
    live_budget,
    parse_version,
    set_dir,
)

_BEARER = re.compile(r"(?i)\b(bearer\s+|token\s*[:=]\s*)[^\s'\",;)}\]]+")
_HF_TOKEN = re.compile(r"\bhf_[A-Za-z0-9]{16,}\b")
REDACTED = "***"


def redact(text: object, *secrets: object) -> str:
    """`text` with Hub tokens replaced by `***`.

    Scrubs the given `secrets`, the values of HF_TOKEN / HUGGING_FACE_HUB_TOKEN, anything
    after `Bearer` (or `token:`/`token=`), and `hf_...` token-shaped words. Use it on every
    message built from a Hub client error before it is logged, stored or re-raised.
    """
    out = str(text)
    env = (os.environ.get("HF_TOKEN"), os.environ.get("HUGGING_FACE_HUB_TOKEN"))
    for secret in (*secrets, *env):
        if isinstance(secret, str) and len(secret) >= 4:
            out = out.replace(secret, REDACTED)
    out = _BEARER.sub(lambda m: m.group(1) + REDACTED, out)
    return _HF_TOKEN.sub(f"hf_{REDACTED}", out)


def hub_client(client=None):
    """`client`, or a new `huggingface_hub.HfApi` (imported only when needed)."""
    if client is not None:
        return client
    from huggingface_hub import HfApi

    return HfApi()


def _download(client, repo_id: str, pattern: list[str], kw: dict) -> Path:
    """`client.snapshot_download` with the Hub's progress bars off: a consumer's stderr shows
    the one-line result (or error), not bars drawn before it."""
    try:
        from huggingface_hub.utils import (
            are_progress_bars_disabled,
            disable_progress_bars,
            enable_progress_bars,
        )
    except ImportError:  # a fake client in tests, without huggingface_hub
        return Path(client.snapshot_download(repo_id, allow_patterns=pattern, **kw))
    was_off = are_progress_bars_disabled()
    disable_progress_bars()
    try:
        return Path(client.snapshot_download(repo_id, allow_patterns=pattern, **kw))
    finally:
        if not was_off:
            enable_progress_bars()


def download_version(
    repo_id: str,
    benchmark: str,
    version,
    client=None,
    revision=None,
    budget: int | None = None,
    public_key=None,
) -> Path:
    """Fetch one version folder from a Hub dataset repo; returns the local version folder.

    `revision` pins a commit sha (or branch); by default the repo's main branch. `budget`
    picks a budget's set (`{benchmark}/k{budget}/` in the repo); by default the one its
    pointers name (`layout.live_budget`: `default`, else the largest live budget, else an
    old single set's `{benchmark}/latest`). `public_key`: `latest` is followed only when it
    is signed by it (`signing.verify_pointer`) and, unless `revision` pins one, no older than
    one this machine followed there before.
    """
    client = hub_client(client)
    kw = {"repo_type": "dataset", "revision": revision}
    where = set_dir("", benchmark, budget).as_posix()
    try:
        if budget is None or version in (None, LATEST):
            pattern = [f"{where}/{LATEST}"]
            if budget is None:
                pattern += [f"{benchmark}/{DEFAULT}", f"{benchmark}/k*/{LATEST}"]
            pointers = _download(client, repo_id, pattern, kw)
            if budget is None:
                where = set_dir("", benchmark, live_budget(pointers, benchmark)).as_posix()
        if version in (None, LATEST):
            pointer = pointers / where / LATEST
            if not pointer.is_file():
                raise AnchorSetError(
                    f"hub repo {repo_id} has no published {benchmark!r} anchor set"
                )
            endpoint = getattr(client, "endpoint", None) or "hub"
            place = None if revision else f"{endpoint} datasets/{repo_id}/{where}"  # pinned: as is
            version = _followed(pointer, public_key, place)
        n = parse_version(version)
        pattern = [f"{where}/v{n}/*"]
        local = _download(client, repo_id, pattern, kw)
    except AnchorSetError:
        raise
    except Exception as e:  # network, auth, missing repo: one clear message
        msg = f"could not download {benchmark!r} from hub repo {repo_id}: {e}"
        raise AnchorSetError(redact(msg, getattr(client, "token", None))) from None
    folder = local / where / f"v{n}"
    if not (folder / MANIFEST).is_file():
        raise AnchorSetError(f"hub repo {repo_id} has no {benchmark} v{n}")
    return folder


def _followed(pointer: Path, public_key, place: str | None) -> object:
    """The version a downloaded `latest` names, once its signature verifies (with a key;
    at `place`, no older than the one followed there before: `signing.verify_pointer`)."""
    data = json.loads(pointer.read_text())
    if public_key is not None:
        from sparseeval.consume.sets.signing import verify_pointer

        verify_pointer(pointer, data, public_key, place)
    return data["version"]


__all__ = [
    "REDACTED",
    "download_version",
    "hub_client",
    "redact",
]
