"""Mirror published versions to a Hugging Face Hub dataset repo (the pipeline's side).

One version goes up in ONE commit on top of the head it was prepared against, so a
concurrent push is refused rather than merged. Consumers fetch with `consume.sets.hub`.
"""

from __future__ import annotations

import json
from pathlib import Path

from sparseeval.consume.errors import SparseEvalError
from sparseeval.consume.sets.hub import hub_client, redact
from sparseeval.consume.sets.layout import (
    DEFAULT,
    LATEST,
    MANIFEST,
    SIGNATURE,
    budget_of,
    default_budget,
    pointer_serial,
    read_manifest,
    read_pointer,
    report_files,
    resolve_version_dir,
    set_dir,
    verify,
)


class MirrorError(SparseEvalError, RuntimeError):
    """A push to the Hub mirror failed (message redacted)."""


class MirrorConflictError(MirrorError):
    """The mirror repo moved past `parent_commit`: someone else committed first."""


def head_revision(repo_id: str, client=None) -> str:
    """The commit sha the Hub dataset repo's main branch points to now."""
    api = hub_client(client)
    try:
        return api.dataset_info(repo_id).sha
    except Exception as e:
        raise MirrorError(
            redact(f"could not read hub repo {repo_id}: {e}", getattr(api, "token", None))
        ) from None


def push_to_hub(
    root: str | Path,
    benchmark: str,
    version: int | str,
    repo_id: str,
    client=None,
    *,
    update_latest: bool = True,
    commit_message: str | None = None,
    parent_commit: str | None = None,
    budget: int | None = None,
    signing_key=None,
):
    """Mirror one version to a Hub dataset repo in ONE commit (all files or none).

    Files land at `{benchmark}/k{K}/v{N}/...` (the local layout: `consume.sets.layout`);
    with `update_latest` the commit also rewrites `{benchmark}/k{K}/latest`, and
    `{benchmark}/default` when the local one names this set. `client` is an
    `huggingface_hub.HfApi` (or any object with `create_commit`). With `parent_commit` (the
    head sha this push was prepared against, e.g. from `head_revision`) the Hub refuses the
    commit if the repo moved meanwhile: `MirrorConflictError`, nothing written. A
    `manifest.sig` goes along (consumers check it with `load_anchor_set(...,
    public_key=...)`); with `signing_key` the `latest` pushed is signed (`set_latest`'s).
    Returns the commit info; its `oid` is the new revision, to pin consumers to
    (`load_anchor_set(repo_id, benchmark, revision=oid)`).
    """
    from huggingface_hub import CommitOperationAdd

    folder = resolve_version_dir(root, benchmark, version, budget)
    manifest = read_manifest(folder)
    verify(folder, manifest)
    n = manifest["version"]
    budget = budget_of(folder) if budget is None else budget
    where = set_dir("", benchmark, budget).as_posix()  # `arc/k50` (the suite: `suite`)
    prefix = f"{where}/v{n}"
    ops = [
        CommitOperationAdd(path_in_repo=f"{prefix}/{rel}", path_or_fileobj=str(folder / rel))
        for rel in [*sorted(manifest["files"]), MANIFEST, *report_files(folder)]
        + ([SIGNATURE] if (folder / SIGNATURE).is_file() else [])
    ]
    if update_latest:
        pointer = {
            "version": n,
            "path": f"v{n}",
            "manifest_sha256": manifest["manifest_sha256"],
            "serial": pointer_serial(read_pointer(folder.parent)) + 1,  # the local count, + 1
        }
        if signing_key is not None:
            from sparseeval.consume.sets.signing import signed_pointer

            pointer = signed_pointer(pointer, signing_key)
        ops.append(
            CommitOperationAdd(
                path_in_repo=f"{where}/{LATEST}",
                path_or_fileobj=json.dumps(pointer, indent=2).encode(),
            )
        )
        if budget is not None and default_budget(folder.parents[2], benchmark) == (budget,):
            ops.append(
                CommitOperationAdd(
                    path_in_repo=f"{benchmark}/{DEFAULT}",
                    path_or_fileobj=json.dumps({"budget": budget}).encode(),
                )
            )
    api = hub_client(client)
    try:
        return api.create_commit(
            repo_id=repo_id,
            operations=ops,
            commit_message=commit_message or f"Publish {benchmark} anchor set v{n}",
            repo_type="dataset",
            parent_commit=parent_commit,
        )
    except Exception as e:
        status = getattr(getattr(e, "response", None), "status_code", None)
        if status in (409, 412):
            msg = f"hub repo {repo_id} moved past parent commit {parent_commit}; not pushed"
            raise MirrorConflictError(redact(f"{msg} ({e})", getattr(api, "token", None))) from None
        msg = f"could not push {benchmark} v{n} to hub repo {repo_id}: {e}"
        raise MirrorError(redact(msg, getattr(api, "token", None))) from None


def mirror_version(
    root: str | Path, benchmark: str, version: int, repo_id: str, budget: int | None = None,
    client=None, signing_key=None,
) -> str:  # fmt: skip
    """Push one version (and its `latest`) on top of the repo's current head; the new sha.

    A commit that lands on the repo in between is refused (`MirrorConflictError`).
    """
    head = head_revision(repo_id, client)
    info = push_to_hub(root, benchmark, version, repo_id, client, parent_commit=head,
                       budget=budget, signing_key=signing_key)  # fmt: skip
    return str(info.oid)


__all__ = [
    "MirrorConflictError",
    "MirrorError",
    "head_revision",
    "mirror_version",
    "push_to_hub",
]
