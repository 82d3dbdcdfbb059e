"""A stand-in Hugging Face Hub on 127.0.0.1: the real `huggingface_hub.HfApi` talks HTTP to it.

It serves dataset repos the tests write (each revision: commit sha -> {path: bytes}) on
just the endpoints the client uses for:

- listing     GET  /api/datasets?author=&search=&expand=&full=   (Link: rel="next" pages)
- repo info   GET  /api/datasets/{repo}  and  /api/datasets/{repo}/revision/{rev}
- file list   GET  /api/datasets/{repo}/tree/{rev}[/{path}]?recursive=   (paginated)
- download    HEAD|GET /datasets/{repo}/resolve/{rev}/{path}
              (X-Repo-Commit, ETag = git blob sha1, Content-Length)
- mirroring   POST /api/datasets/{repo}/preupload/{rev}   (every file "regular")
              POST /api/datasets/{repo}/commit/{rev}      (ndjson; base64 files, deletions;
              a `parentCommit` that is not the head is answered 412, like the Hub)

Like the Hub, the listing carries `sha` only when asked (`expand=sha` or `full=true`).
Faults: `hub.fail(pattern, status, times=..., headers=...)` answers matching requests
(glob over the decoded path, optionally one method) with that status `times` times (None:
always). Every request is logged with its headers (`hub.requests`). `serve_hub(monkeypatch,
tmp_path)` starts one and points `huggingface_hub` at it (env and the module constants it
read at import), online, with its home and cache under `tmp_path`.
"""

from __future__ import annotations

import base64
import contextlib
import fnmatch
import hashlib
import io
import itertools
import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlencode

import polars as pl

DATE = "2024-01-01T00:00:00.000Z"


def git_blob_sha1(data: bytes) -> str:
    """The git object id of a blob: what the Hub uses as a regular file's oid and ETag."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


@dataclass
class Request:
    """One request the stand-in answered."""

    method: str
    path: str  # decoded, without the query
    query: dict[str, list[str]]
    headers: dict[str, str]  # lower-case names
    at: float
    status: int = 0


@dataclass
class Fault:
    pattern: str
    status: int
    method: str | None = None
    times: int | None = 1  # None: every time
    headers: dict[str, str] = field(default_factory=dict)
    echo_auth: bool = False  # put the request's Authorization header in the error message


@dataclass
class Repo:
    head: str
    revisions: dict[str, dict[str, bytes]]
    uid: str


class StandInHub:
    """The server's state, what tests write into it, and its request log."""

    def __init__(self, page_size: int = 2, tree_page_size: int = 50) -> None:
        self.page_size, self.tree_page_size = page_size, tree_page_size
        self.repos: dict[str, Repo] = {}
        self.faults: list[Fault] = []
        self._requests: list[Request] = []
        self._lock = threading.RLock()
        self._counter = itertools.count(1)
        self._server: ThreadingHTTPServer | None = None
        self.url = ""

    # -- the layout tests write -----------------------------------------------------------

    def create_repo(self, repo_id: str) -> str:
        """An empty dataset repo whose first commit adds `.gitattributes` (as the Hub does)."""
        return self.commit(repo_id, {".gitattributes": "*.parquet filter=lfs\n"})

    def commit(
        self, repo_id: str, files: dict[str, bytes | str], delete: tuple[str, ...] = ()
    ) -> str:
        """A new revision of `repo_id` (created if needed): the head's files, then `files`
        added or replaced and `delete` removed. Returns its commit sha."""
        with self._lock:
            repo = self.repos.get(repo_id)
            tree = dict(repo.revisions[repo.head]) if repo else {}
            for path in delete:
                tree.pop(path, None)
            for path, data in files.items():
                tree[path] = data.encode() if isinstance(data, str) else bytes(data)
            sha = self._new_sha(repo_id, repo.head if repo else "", tree)
            if repo is None:
                uid = hashlib.sha1(repo_id.encode()).hexdigest()[:24]
                self.repos[repo_id] = repo = Repo(sha, {}, uid)
            repo.revisions[sha] = tree
            repo.head = sha
            return sha

    def head(self, repo_id: str) -> str:
        return self.repos[repo_id].head

    def files(self, repo_id: str, revision: str | None = None) -> dict[str, bytes]:
        repo = self.repos[repo_id]
        return dict(repo.revisions[revision or repo.head])

    def fail(
        self,
        pattern: str,
        status: int = 500,
        *,
        times: int | None = 1,
        method: str | None = None,
        headers: dict[str, str] | None = None,
        echo_auth: bool = False,
    ) -> None:
        """Answer requests whose decoded path matches the glob `pattern` with `status`."""
        with self._lock:
            self.faults.append(Fault(pattern, status, method, times, headers or {}, echo_auth))

    # -- the request log ------------------------------------------------------------------

    @property
    def requests(self) -> list[Request]:
        with self._lock:
            return list(self._requests)

    def clear(self) -> None:
        with self._lock:
            self._requests.clear()

    def matching(self, pattern: str, method: str | None = None) -> list[Request]:
        return [
            r
            for r in self.requests
            if fnmatch.fnmatchcase(r.path, pattern) and method in (None, r.method)
        ]

    def downloads(self, repo_id: str | None = None) -> list[str]:
        """Paths of files served by GET .../resolve/... (successful ones), in order."""
        out = []
        for r in self.requests:
            parts = r.path.split("/")
            if (
                r.method == "GET"
                and r.status == 200
                and len(parts) > 6
                and parts[1] == "datasets"
                and parts[4] == "resolve"
                and repo_id in (None, f"{parts[2]}/{parts[3]}")
            ):
                out.append("/".join(parts[6:]))
        return out

    # -- server ---------------------------------------------------------------------------

    def start(self) -> StandInHub:
        hub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                hub._handle(self, "GET")

            def do_HEAD(self) -> None:
                hub._handle(self, "HEAD")

            def do_POST(self) -> None:
                hub._handle(self, "POST")

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    # -- request handling -----------------------------------------------------------------

    def _new_sha(self, repo_id: str, parent: str, tree: dict[str, bytes]) -> str:
        blobs = sorted((p, git_blob_sha1(d)) for p, d in tree.items())
        text = json.dumps([repo_id, parent, blobs, next(self._counter)])
        return hashlib.sha1(text.encode()).hexdigest()

    def _handle(self, h: BaseHTTPRequestHandler, method: str) -> None:
        raw_path, _, raw_query = h.path.partition("?")
        segs = [unquote(s) for s in raw_path.split("/")[1:]]
        query = parse_qs(raw_query, keep_blank_values=True)
        length = int(h.headers.get("Content-Length") or 0)
        body = h.rfile.read(length) if length else b""
        req = Request(
            method,
            "/" + "/".join(segs),
            query,
            {k.lower(): v for k, v in h.headers.items()},
            time.time(),
        )
        with self._lock:
            self._requests.append(req)
        fault = self._fault(req)
        if fault is not None:
            message = f"stand-in fault {fault.status}"
            if fault.echo_auth:
                message += f" (request had Authorization: {req.headers.get('authorization')})"
            status, headers, payload = fault.status, dict(fault.headers), {"error": message}
        else:
            try:
                status, headers, payload = self._route(method, segs, query, body)
            except Exception as exc:  # a bug in the stand-in: say so, do not hang the client
                status, headers, payload = 500, {}, {"error": f"stand-in error: {exc!r}"}
        req.status = status
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        h.send_response(status)
        if not isinstance(payload, bytes):
            headers.setdefault("Content-Type", "application/json")
        headers.setdefault("Content-Length", str(len(data)))
        for k, v in headers.items():
            h.send_header(k, v)
        h.end_headers()
        if method != "HEAD":
            h.wfile.write(data)

    def _fault(self, req: Request) -> Fault | None:
        with self._lock:
            for f in self.faults:
                if f.times == 0 or f.method not in (None, req.method):
                    continue
                if fnmatch.fnmatchcase(req.path, f.pattern):
                    if f.times is not None:
                        f.times -= 1
                    return f
        return None

    def _route(self, method: str, segs: list[str], query: dict, body: bytes):
        if segs[:2] == ["api", "datasets"]:
            if len(segs) == 2 and method == "GET":
                return self._list(query)
            repo_id, rest = "/".join(segs[2:4]), segs[4:]
            repo = self.repos.get(repo_id)
            if repo is None or len(segs) < 4:
                return _error(404, "RepoNotFound", f"Repository {repo_id} not found")
            if not rest and method == "GET":
                return self._info(repo_id, repo, "main")
            if rest[:1] == ["revision"] and len(rest) == 2 and method == "GET":
                return self._info(repo_id, repo, rest[1])
            if rest[:1] == ["tree"] and len(rest) >= 2 and method == "GET":
                return self._tree(repo_id, repo, rest[1], "/".join(rest[2:]), query)
            if rest[:1] == ["preupload"] and len(rest) == 2 and method == "POST":
                return self._preupload(repo, rest[1], body)
            if rest[:1] == ["commit"] and len(rest) == 2 and method == "POST":
                return self._commit(repo_id, repo, rest[1], body)
        if segs[:1] == ["datasets"] and len(segs) >= 6 and segs[3] == "resolve":
            repo = self.repos.get("/".join(segs[1:3]))
            if repo is None:
                return _error(404, "RepoNotFound", "Repository not found")
            return self._resolve(repo, segs[4], "/".join(segs[5:]), method)
        return 404, {}, {"error": f"not served by the stand-in Hub: {method} /{'/'.join(segs)}"}

    def _revision(self, repo: Repo, rev: str) -> str | None:
        if rev == "main":
            return repo.head
        return rev if rev in repo.revisions else None

    def _list(self, query: dict):
        author = (query.get("author") or [None])[0]
        searches = [s.lower() for s in query.get("search", [])]
        expand = set(query.get("expand", []))
        full = (query.get("full") or ["false"])[0].lower() in {"1", "true"}
        with self._lock:
            ids = [
                r
                for r in self.repos
                if (author is None or r.split("/")[0].lower() == author.lower())
                and all(s in r.lower() for s in searches)
            ]
            items = []
            for repo_id in ids:
                repo = self.repos[repo_id]
                everything = {
                    "_id": repo.uid,
                    "id": repo_id,
                    "author": repo_id.split("/")[0],
                    "sha": repo.head,
                    "lastModified": DATE,
                    "createdAt": DATE,
                    "private": False,
                    "gated": False,
                    "disabled": False,
                    "downloads": 0,
                    "likes": 0,
                    "tags": [],
                }
                if full:
                    files = repo.revisions[repo.head]
                    items.append(everything | {"siblings": [{"rfilename": p} for p in files]})
                elif expand:
                    items.append(
                        {k: v for k, v in everything.items() if k in {"_id", "id"} | expand}
                    )
                else:  # the Hub's default fields: no sha
                    items.append({k: v for k, v in everything.items() if k != "sha"})
        limit = int((query.get("limit") or [0])[0]) or None
        items = items[:limit] if limit else items
        return self._page(items, query, "/api/datasets", self.page_size)

    def _page(self, items: list, query: dict, path: str, size: int):
        start = int((query.get("cursor") or ["0"])[0])
        headers = {}
        if start + size < len(items):
            nxt = {k: v for k, v in query.items() if k != "cursor"} | {
                "cursor": [str(start + size)]
            }
            headers["Link"] = f'<{self.url}{path}?{urlencode(nxt, doseq=True)}>; rel="next"'
        return 200, headers, items[start : start + size]

    def _info(self, repo_id: str, repo: Repo, rev: str):
        sha = self._revision(repo, rev)
        if sha is None:
            return _error(404, "RevisionNotFound", f"Revision {rev} not found")
        files = repo.revisions[sha]
        return 200, {}, {
            "_id": repo.uid, "id": repo_id, "author": repo_id.split("/")[0], "sha": sha,
            "lastModified": DATE, "createdAt": DATE, "private": False, "gated": False,
            "disabled": False, "downloads": 0, "likes": 0, "tags": [],
            "siblings": [{"rfilename": p} for p in sorted(files)],
        }  # fmt: skip

    def _tree(self, repo_id: str, repo: Repo, rev: str, under: str, query: dict):
        sha = self._revision(repo, rev)
        if sha is None:
            return _error(404, "RevisionNotFound", f"Revision {rev} not found")
        files = repo.revisions[sha]
        recursive = (query.get("recursive") or ["false"])[0].lower() in {"1", "true"}
        prefix = f"{under}/" if under else ""
        dirs: set[str] = set()
        entries = []
        for path in sorted(files):
            if not path.startswith(prefix):
                continue
            rel = path[len(prefix) :].split("/")
            for i in range(1, len(rel)):
                if recursive or i == 1:
                    dirs.add(prefix + "/".join(rel[:i]))
            if recursive or len(rel) == 1:
                data = files[path]
                entries.append(
                    {"type": "file", "oid": git_blob_sha1(data), "size": len(data), "path": path}
                )
        if under and not entries and not dirs:
            return _error(404, "EntryNotFound", f"{under} not found in {repo_id}@{sha}")
        folders = [
            {"type": "directory", "oid": hashlib.sha1(d.encode()).hexdigest(), "size": 0, "path": d}
            for d in sorted(dirs)
        ]
        path = f"/api/datasets/{repo_id}/tree/{rev}" + (f"/{under}" if under else "")
        return self._page(folders + entries, query, path, self.tree_page_size)

    def _resolve(self, repo: Repo, rev: str, path: str, method: str):
        sha = self._revision(repo, rev)
        if sha is None:
            return _error(404, "RevisionNotFound", f"Revision {rev} not found")
        data = repo.revisions[sha].get(path)
        if data is None:
            status, headers, payload = _error(404, "EntryNotFound", f"{path} not found")
            return status, headers | {"X-Repo-Commit": sha}, payload
        headers = {
            "X-Repo-Commit": sha,
            "ETag": f'"{git_blob_sha1(data)}"',
            "Content-Type": "application/octet-stream",
            "Accept-Ranges": "bytes",
        }
        return 200, headers, data

    def _preupload(self, repo: Repo, rev: str, body: bytes):
        sha = self._revision(repo, rev)
        if sha is None:
            return _error(404, "RevisionNotFound", f"Revision {rev} not found")
        files = repo.revisions[sha]
        wanted = json.loads(body or b"{}").get("files", [])
        return (
            200,
            {},
            {
                "files": [
                    {
                        "path": f["path"],
                        "uploadMode": "regular",
                        "shouldIgnore": False,
                        "oid": git_blob_sha1(files[f["path"]]) if f["path"] in files else None,
                    }
                    for f in wanted
                ],
                "commitOid": sha,
            },
        )

    def _commit(self, repo_id: str, repo: Repo, rev: str, body: bytes):
        if rev != "main":
            return _error(400, None, f"the stand-in commits to main only, not {rev}")
        lines = [json.loads(line) for line in io.BytesIO(body).read().splitlines() if line]
        if not lines or lines[0].get("key") != "header":
            return _error(400, None, "commit payload must start with a header line")
        header = lines[0]["value"]
        files: dict[str, bytes] = {}
        delete = []
        for line in lines[1:]:
            key, value = line["key"], line["value"]
            if key == "file":
                if value.get("encoding") != "base64":
                    return _error(400, None, "the stand-in takes base64 files only")
                files[value["path"]] = base64.b64decode(value["content"])
            elif key == "deletedFile":
                delete.append(value["path"])
            elif key == "deletedFolder":
                folder = value["path"].rstrip("/") + "/"
                delete.extend(p for p in repo.revisions[repo.head] if p.startswith(folder))
            else:
                return _error(400, None, f"the stand-in does not take {key!r} operations")
        with self._lock:  # check-and-commit atomically, as the Hub's git backend does
            parent = header.get("parentCommit")
            if parent and parent != repo.head:
                return _error(
                    412, None, "A commit has happened since. Please refresh and try again."
                )
            sha = self.commit(repo_id, files, tuple(delete))
        return (
            200,
            {},
            {
                "success": True,
                "commitOid": sha,
                "commitUrl": f"{self.url}/datasets/{repo_id}/commit/{sha}",
                "pullRequestUrl": None,
                "hookOutput": "",
            },
        )


def _error(status: int, code: str | None, message: str):
    headers = {"X-Error-Message": message}
    if code:
        headers["X-Error-Code"] = code
    return status, headers, {"error": message}


@contextlib.contextmanager
def serve_hub(monkeypatch, tmp_path: Path, **kw: Any) -> Iterator[StandInHub]:
    """Start a stand-in Hub and point `huggingface_hub` at it, online, home under tmp_path.

    `huggingface_hub.constants` reads HF_ENDPOINT, HF_HUB_OFFLINE, HF_HOME, HF_HUB_CACHE
    and the token path once, at import: the environment AND those constants are patched
    (both restored by `monkeypatch`). HF_TOKEN is unset; a test sets it when it wants one.
    """
    from huggingface_hub import constants
    from huggingface_hub.utils import _http

    hub = StandInHub(**kw).start()
    home = tmp_path / "hf_home"
    cache = home / "hub"
    env = {
        "HF_ENDPOINT": hub.url,
        "HF_HOME": str(home),
        "HF_HUB_CACHE": str(cache),
        "HF_HUB_OFFLINE": "0",
        "HF_HUB_DISABLE_TELEMETRY": "1",
        "HF_HUB_DISABLE_PROGRESS_BARS": "1",
        "HF_HUB_DISABLE_UPDATE_CHECK": "1",
    }
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    for k in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "TRANSFORMERS_OFFLINE", "HF_HUB_ETAG_TIMEOUT"):
        monkeypatch.delenv(k, raising=False)
    patches = {
        "ENDPOINT": hub.url,
        "HUGGINGFACE_CO_URL_TEMPLATE": hub.url + "/{repo_id}/resolve/{revision}/{filename}",
        "HF_HUB_OFFLINE": False,
        "HF_HOME": str(home),
        "HF_HUB_CACHE": str(cache),
        "HF_TOKEN_PATH": str(home / "token"),
        "HF_STORED_TOKENS_PATH": str(home / "stored_tokens"),
        "HF_HUB_DISABLE_TELEMETRY": True,
        "HF_HUB_DISABLE_PROGRESS_BARS": True,
    }
    for name, value in patches.items():
        if hasattr(constants, name):
            monkeypatch.setattr(constants, name, value)
    _http.close_session()  # no keep-alive connection from an earlier test's server
    try:
        yield hub
    finally:
        _http.close_session()
        hub.stop()


# -- v1 details repos in the leaderboard's layout ------------------------------------------

V1_TAGS = {
    "harness_arc_challenge_25": "arc:challenge|25",
    "harness_hendrycksTest_anatomy_5": "hendrycksTest-anatomy|5",
    "harness_truthfulqa_mc_0": "truthfulqa:mc|0",
}


def parquet_bytes(frame: pl.DataFrame) -> bytes:
    buf = io.BytesIO()
    frame.write_parquet(buf)
    return buf.getvalue()


def v1_card(configs: dict[str, list[tuple[str, str]]]) -> str:
    """A dataset card whose YAML lists each config's splits (timestamped and `latest`)."""
    meta = {"configs": [
        {"config_name": name, "data_files": [{"split": s, "path": [p]} for s, p in splits]}
        for name, splits in configs.items()
    ]}  # fmt: skip
    return "---\n" + json.dumps(meta, indent=1) + "\n---\n# details\n"


def v1_files(ts: str, arc: list[float]) -> dict[str, bytes | str]:
    """arc with a plain `acc_norm` column, MMLU anatomy with a `metrics` struct,
    TruthfulQA with a flattened `metrics.mc1` column, and the aggregated results file."""
    arc_name = f"{ts}/details_harness|arc:challenge|25_{ts}.parquet"
    anat_name = f"{ts}/details_harness|hendrycksTest-anatomy|5_{ts}.parquet"
    tqa_name = f"{ts}/details_harness|truthfulqa:mc|0_{ts}.parquet"
    return {
        arc_name: parquet_bytes(
            pl.DataFrame({"example": ["q"] * len(arc), "acc_norm": arc, "acc": [0.0] * len(arc)})
        ),
        anat_name: parquet_bytes(
            pl.DataFrame({"metrics": [{"acc": 1.0}, {"acc": 0.0}, {"acc": 1.0}]})
        ),
        tqa_name: parquet_bytes(
            pl.DataFrame({"metrics.mc1": [True, False], "metrics.mc2": [0.7, 0.2]})
        ),
        f"results_{ts}.json": "{}",
    }


def card_for(ts_of: dict[str, str]) -> str:
    """The card of a repo whose `latest` split of each V1_TAGS config is at `ts_of[config]`."""
    return v1_card({
        cfg: [(ts_of[cfg].replace("-", "_"), f"**/details_harness|{tag}_{ts_of[cfg]}.parquet"),
              ("latest", f"**/details_harness|{tag}_{ts_of[cfg]}.parquet")]
        for cfg, tag in V1_TAGS.items()
    } | {"results": [("latest", "**/results_*.json")]})  # fmt: skip


def v1_repo(ts: str, arc: list[float]) -> dict[str, bytes | str]:
    """Every file of a v1 details repo evaluated once at `ts` (README card included)."""
    return v1_files(ts, arc) | {"README.md": card_for(dict.fromkeys(V1_TAGS, ts))}
