"""Mirror published versions to a Hugging Face Hub dataset repo, and fetch them back."""

from __future__ import annotations

import json
from pathlib import Path

from .layout import (
    LATEST,
    MANIFEST,
    AnchorSetError,
    parse_version,
    read_manifest,
    resolve_version_dir,
    verify,
)


def _client(client):
    if client is not None:
        return client
    from huggingface_hub import HfApi

    return HfApi()


def push_to_hub(
    root: str | Path,
    benchmark: str,
    version: int | str,
    repo_id: str,
    client=None,
    *,
    update_latest: bool = True,
    commit_message: str | None = None,
):
    """Mirror one version to a Hub dataset repo in ONE commit (all files or none).

    Files land at `{benchmark}/v{N}/...`; with `update_latest` the commit also
    rewrites `{benchmark}/latest`. `client` is an `huggingface_hub.HfApi` (or any
    object with `create_commit`). Returns the commit info.
    """
    from huggingface_hub import CommitOperationAdd

    folder = resolve_version_dir(root, benchmark, version)
    manifest = read_manifest(folder)
    verify(folder, manifest)
    n = manifest["version"]
    prefix = f"{benchmark}/v{n}"
    ops = [
        CommitOperationAdd(path_in_repo=f"{prefix}/{rel}", path_or_fileobj=str(folder / rel))
        for rel in [*sorted(manifest["files"]), MANIFEST]
    ]
    if update_latest:
        pointer = {"version": n, "path": f"v{n}", "manifest_sha256": manifest["manifest_sha256"]}
        ops.append(
            CommitOperationAdd(
                path_in_repo=f"{benchmark}/{LATEST}",
                path_or_fileobj=json.dumps(pointer, indent=2).encode(),
            )
        )
    return _client(client).create_commit(
        repo_id=repo_id,
        operations=ops,
        commit_message=commit_message or f"Publish {benchmark} anchor set v{n}",
        repo_type="dataset",
    )


def download_version(repo_id: str, benchmark: str, version, client=None, revision=None) -> Path:
    """Fetch one version folder from a Hub dataset repo; returns the local version folder."""
    client = _client(client)
    kw = {"repo_type": "dataset", "revision": revision}
    try:
        if version in (None, LATEST):
            pattern = [f"{benchmark}/{LATEST}"]
            pointer = Path(client.snapshot_download(repo_id, allow_patterns=pattern, **kw))
            pointer = pointer / benchmark / LATEST
            if not pointer.is_file():
                raise AnchorSetError(
                    f"hub repo {repo_id} has no published {benchmark!r} anchor set"
                )
            version = json.loads(pointer.read_text())["version"]
        n = parse_version(version)
        pattern = [f"{benchmark}/v{n}/*"]
        local = Path(client.snapshot_download(repo_id, allow_patterns=pattern, **kw))
    except AnchorSetError:
        raise
    except Exception as e:  # network, auth, missing repo: one clear message
        raise AnchorSetError(
            f"could not download {benchmark!r} from hub repo {repo_id}: {e}"
        ) from e
    folder = local / benchmark / f"v{n}"
    if not (folder / MANIFEST).is_file():
        raise AnchorSetError(f"hub repo {repo_id} has no {benchmark} v{n}")
    return folder
