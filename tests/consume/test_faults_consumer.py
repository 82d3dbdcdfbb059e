"""Fault and bad-input trials on the consumer side (issue 13): answers files, published sets.

Items: 1 conflicting duplicate answers, 3 byte-order marks, 4 umask, 5 non-UTF-8 files,
7 a verifier that does not trust the manifest (+ optional Ed25519 signature), 9 crash
leftovers (only promoted versions load; `clean_leftovers`), 10 control characters.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys

import numpy as np
import pytest

from sparseeval.consume.answers.responses import ResponsesError, printable, read_responses_files
from sparseeval.consume.hashing import file_sha256
from sparseeval.consume.sets.anchorset import load_anchor_set
from sparseeval.consume.sets.layout import AnchorSetError, latest_version, list_versions, seal
from sparseeval.pipeline.versions import (
    clean_leftovers,
    new_version,
    set_latest,
    sign_version,
    write_version,
)
from tests.helpers import (
    FakeMirrorHub,
    anchor_answers,
    answers_csv,
    cli,
    publish_fit,
    signing_keys,
)

B = "arc"
STAMP = "2025-05-02T10-11-12.131415"


@pytest.fixture
def set_and_answers(arc_set, fitted):
    """The published ARC set and one test model's answers to its anchors."""
    return arc_set, anchor_answers(fitted)


def predict(root, files, capsys, *more) -> tuple[int, str, str]:
    argv = ["predict", "--anchor-set", str(root), "--benchmark", B, "--json", *more]
    return cli([*argv, "--responses", *map(str, files)], capsys)


def one_line_error(rc, out, err) -> str:
    assert rc == 2 and out == "", (rc, out, err)
    assert err.startswith("error: ") and err.count("\n") == 1, err
    assert "Traceback" not in err and "\x1b" not in err
    return err


# --------------------------------------------------------------------------- 1 duplicates


def test_conflicting_duplicates_are_refused_in_every_format(set_and_answers, tmp_path, capsys):
    root, answers = set_and_answers
    aset = load_anchor_set(root, B)
    item = aset.items[3]
    flipped = 1 - answers[item]
    csv_file = answers_csv(tmp_path / "a.csv", answers, extra=f"{item},{flipped}\n")
    jsonl = tmp_path / "a.jsonl"
    rows = [{"item": k, "correct": v} for k, v in answers.items()] + [
        {"item": item, "correct": flipped}
    ]
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in rows))
    js_list = tmp_path / "list.json"
    js_list.write_text(json.dumps(rows))
    js_obj = tmp_path / "obj.json"  # a JSON object with a repeated key
    pairs = [f'"{k}": {v}' for k, v in answers.items()] + [f'"{item}": {flipped}']
    js_obj.write_text("{" + ", ".join(pairs) + "}")
    for f in (csv_file, jsonl, js_list, js_obj):
        with pytest.raises(
            ResponsesError, match=rf"conflicting answers for 1 anchor\(s\): {item} "
        ):
            read_responses_files([f], aset)
        err = one_line_error(*predict(root, [f], capsys))
        assert f"conflicting answers for 1 anchor(s): {item} (" in err
    err = one_line_error(*predict(root, [csv_file], capsys))
    assert f"a.csv:{2 + list(answers).index(item)}: '{answers[item]}'" in err
    assert f"a.csv:{2 + len(answers)}: '{flipped}'" in err


def test_conflicts_across_files_and_identical_repeats(set_and_answers, tmp_path, capsys):
    root, answers = set_and_answers
    aset = load_anchor_set(root, B)
    a, b = aset.items[0], aset.items[5]
    first = answers_csv(tmp_path / "first.csv", answers)
    other = {k: v for k, v in answers.items()} | {a: 1 - answers[a], b: 1 - answers[b]}
    second = tmp_path / "second.jsonl"
    second.write_text(
        "".join(json.dumps({"item": k, "correct": v}) + "\n" for k, v in other.items())
    )
    err = one_line_error(*predict(root, [first, second], capsys))
    assert "conflicting answers for 2 anchor(s)" in err and f"{a} (" in err and f"{b} (" in err
    assert "first.csv" in err and "second.jsonl" in err
    # the same answer twice (1 / true / +1), and a blank next to an answer, are fine
    same = answers_csv(tmp_path / "same.csv", answers, extra=f"{a},{answers[a]}\n{b},\n")
    again = tmp_path / "again.json"
    again.write_text(json.dumps({k: bool(v) for k, v in answers.items()}))
    rc, out, _ = predict(root, [same, again], capsys)
    assert rc == 0 and json.loads(out)["value"] == pytest.approx(aset.predict(answers).value)
    # conflicts on items that are not anchors do not change the estimate: not refused
    noise = answers_csv(tmp_path / "noise.csv", answers, extra="not-an-anchor,1\nnot-an-anchor,0\n")
    assert predict(root, [noise], capsys)[0] == 0


# --------------------------------------------------------------------------- 3 byte-order mark


def test_files_with_a_byte_order_mark_are_read(set_and_answers, tmp_path, capsys):
    root, answers = set_and_answers
    expected = load_anchor_set(root, B).predict(answers).value
    csv_file = answers_csv(tmp_path / "bom.csv", answers, prefix="\ufeff")
    jsonl = tmp_path / "bom.jsonl"
    jsonl.write_text(
        "\ufeff" + "".join(json.dumps({"item": k, "correct": v}) + "\n" for k, v in answers.items())
    )
    js = tmp_path / "bom.json"
    js.write_text("\ufeff" + json.dumps(answers))
    for f in (csv_file, jsonl, js):
        assert f.read_bytes().startswith(b"\xef\xbb\xbf")
        rc, out, err = predict(root, [f], capsys)
        assert rc == 0, err
        assert json.loads(out)["value"] == pytest.approx(expected)


# --------------------------------------------------------------------------- 4 umask


@pytest.mark.parametrize("umask", [0o022, 0o077, 0o002], ids=lambda umask: f"{umask:03o}")
def test_published_folders_honour_the_umask(tmp_path, fitted, umask):
    old = os.umask(umask)
    try:
        folder = publish_fit(tmp_path, B, fitted)
        set_latest(tmp_path, B, 1)
    finally:
        os.umask(old)
    dir_mode, file_mode = 0o777 & ~umask, 0o666 & ~umask  # 755/644, 700/600, 775/664
    assert stat.S_IMODE(folder.stat().st_mode) == dir_mode
    for p in [tmp_path / B, folder, *folder.rglob("*")]:
        mode = stat.S_IMODE(p.stat().st_mode)
        assert mode == (dir_mode if p.is_dir() else file_mode), (p, oct(mode))
        assert bool(mode & stat.S_IROTH) == (umask != 0o077)  # who else may read follows it
    assert stat.S_IMODE((tmp_path / B / "k8" / "latest").stat().st_mode) == file_mode


# --------------------------------------------------------------------------- 5 non-UTF-8


def test_non_utf8_answers_files_are_one_line_errors(set_and_answers, tmp_path, capsys):
    root, answers = set_and_answers
    aset = load_anchor_set(root, B)
    good = answers_csv(tmp_path / "x.csv", answers).read_bytes()
    at = good.index(b"\n", 20) + 1  # start of the third or so line
    line = good[:at].count(b"\n") + 1
    files = {
        "bad.csv": good[:at] + b"caf\xe9,1\n" + good[at:],
        "bad.jsonl": b'{"item": "0", "correct": 1}\n{"item": "caf\xe9", "correct": 1}\n',
        "bad.json": b'{"0": 1, "caf\xe9": 1}',
    }
    lines = {"bad.csv": line, "bad.jsonl": 2, "bad.json": 1}
    for name, data in files.items():
        f = tmp_path / name
        f.write_bytes(data)
        with pytest.raises(ResponsesError, match=r"not UTF-8 text"):
            read_responses_files([f], aset)
        err = one_line_error(*predict(root, [f], capsys))
        byte, n = data.index(b"\xe9"), lines[name]
        assert f"{name}: not UTF-8 text (byte {byte}, line {n}: b'\\xe9')" in err, err


def test_non_utf8_lm_eval_samples_name_the_file(set_and_answers, tmp_path, capsys):
    root, _ = set_and_answers
    folder = tmp_path / "results" / "acme__tiny"
    folder.mkdir(parents=True)
    sample = {"doc_id": 0, "filter": "none", "metrics": ["acc"], "acc": 1.0, "doc": {"q": "é"}}
    text = json.dumps(sample, ensure_ascii=False).encode().replace("é".encode(), b"\xe9")
    f = folder / f"samples_arc_challenge_{STAMP}.jsonl"
    f.write_bytes(text + b"\n")
    for target in (f, tmp_path / "results"):
        err = one_line_error(*predict(root, [target], capsys))
        assert f.name in err and "not UTF-8 text" in err, err


# --------------------------------------------------------------------------- 7 the verifier


def rewrite(root, mutate, version: int = 1, pointer: bool = True):
    """An attacker with write access: edit the manifest, recompute hashes and seal (and the
    seal `latest` pinned at promotion, unless `pointer` is False)."""
    folder = root / B / "k8" / f"v{version}"
    man = json.loads((folder / "manifest.json").read_text())
    mutate(folder, man)
    man = seal(man)
    (folder / "manifest.json").write_text(json.dumps(man, indent=2))
    if pointer:
        latest = root / B / "k8" / "latest"
        ptr = json.loads(latest.read_text())
        ptr["promoted"][str(version)] = man["manifest_sha256"]
        if ptr["version"] == version:
            ptr["manifest_sha256"] = man["manifest_sha256"]
        latest.write_text(json.dumps(ptr))
    return folder


def zero_weights(folder, man):
    w = folder / "predictor" / "weights.npz"
    with np.load(w) as npz:
        arrays = {k: np.zeros_like(npz[k]) for k in npz.files}
    np.savez(w, **arrays)
    man["files"]["predictor/weights.npz"] = file_sha256(w)


def test_recomputed_manifest_is_caught_by_latest_and_by_a_signature(set_and_answers, tmp_path):
    root, answers = set_and_answers
    # a rewritten manifest no longer matches the seal `latest` pinned at promotion
    rewrite(root, zero_weights, pointer=False)
    with pytest.raises(AnchorSetError, match="differs from the one promoted"):
        load_anchor_set(root, B)
    # rewriting `latest` too gets through the hashes (documented: hashes detect damage, not
    # tampering) ...
    rewrite(root, lambda f, m: None)
    tampered = load_anchor_set(root, B)
    estimate = tampered.predict(answers)  # zeroed weights, accepted: every estimate is 0
    assert (estimate.value, estimate.low) == (0.0, 0.0)
    width = float(tampered.conformal.halfwidths(0.0))
    assert estimate.high == pytest.approx(width) and width > 0
    # ... which is what the optional signature is for
    with pytest.raises(AnchorSetError, match=r"no manifest\.sig"):
        load_anchor_set(root, B, public_key=signing_keys()[1])


def test_signed_sets_verify_and_tampering_is_refused(tmp_path, fitted):
    root = tmp_path / "published"
    pem, public = signing_keys()
    _, other_public = signing_keys()
    key_file = tmp_path / "signer.pub"
    key_file.write_bytes(public)
    folder = publish_fit(root, B, fitted, signing_key=pem.decode())
    set_latest(root, B, 1, signing_key=pem)
    assert (folder / "manifest.sig").is_file()
    for key in (public, public.decode(), key_file, str(key_file)):
        assert load_anchor_set(root, B, public_key=key).version == 1
    with pytest.raises(AnchorSetError, match="does not verify with the public key"):
        load_anchor_set(root, B, public_key=other_public)
    # sign_version signs an existing (unsigned) version
    publish_fit(root, B, fitted)
    set_latest(root, B, 2, signing_key=pem)
    with pytest.raises(AnchorSetError, match=r"no manifest\.sig"):
        load_anchor_set(root, B, public_key=public)
    sign_version(root / B / "k8" / "v2", pem)
    assert load_anchor_set(root, B, public_key=public).version == 2
    # recomputed hashes, seal and `latest`: the signature no longer matches
    rewrite(root, zero_weights, version=2)
    assert load_anchor_set(root, B).version == 2  # accepted without a key (documented)
    with pytest.raises(AnchorSetError, match="does not verify"):
        load_anchor_set(root, B, version=2, public_key=public)
    (root / B / "k8" / "v1" / "manifest.sig").write_text("not base64!\n")
    with pytest.raises(AnchorSetError, match="does not verify"):
        load_anchor_set(root, B, version=1, public_key=public)
    with pytest.raises(AnchorSetError, match="not a PEM public key"):
        load_anchor_set(root, B, version=1, public_key=b"-----BEGIN PUBLIC KEY-----\nxx\n")


def test_signature_travels_through_the_hub(tmp_path, fitted, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    from sparseeval.pipeline.mirror import push_to_hub

    root = tmp_path / "published"
    pem, public = signing_keys()
    publish_fit(root, B, fitted, signing_key=pem)
    set_latest(root, B, 1, signing_key=pem)
    hub = FakeMirrorHub(tmp_path / "hub")
    push_to_hub(root, B, "latest", "acme/sets", hub, signing_key=pem)
    assert load_anchor_set("acme/sets", B, hub_client=hub, public_key=public).version == 1
    with pytest.raises(AnchorSetError, match="does not verify"):
        load_anchor_set("acme/sets", B, hub_client=hub, public_key=signing_keys()[1])
    # a newer version pushed with an unsigned `latest`: followed by no one holding the key
    publish_fit(root, B, fitted, signing_key=pem)
    set_latest(root, B, 2, signing_key=pem)
    push_to_hub(root, B, "latest", "acme/sets", hub)
    with pytest.raises(AnchorSetError, match="latest pointer is not signed"):
        load_anchor_set("acme/sets", B, hub_client=hub, public_key=public)
    assert load_anchor_set("acme/sets", B, version=2, hub_client=hub, public_key=public)


def test_a_signed_latest_cannot_be_pointed_back_at_an_older_signed_version(tmp_path, fitted):
    """[4/5]: `latest` was covered by no signature, so rewriting it to an older signed
    version rolled consumers back silently."""
    root = tmp_path / "published"
    pem, public = signing_keys()
    for v in (1, 2):
        publish_fit(root, B, fitted, signing_key=pem)
        set_latest(root, B, v, signing_key=pem)
    assert load_anchor_set(root, B, public_key=public).version == 2
    pointer = root / B / "k8" / "latest"
    signed = json.loads(pointer.read_text())
    assert signed["version"] == 2 and "signature" in signed
    # the attack: `latest` rewritten to v1 (a version with a valid manifest signature)
    old = signed | {"version": 1, "path": "v1", "manifest_sha256": signed["promoted"]["1"]}
    pointer.write_text(json.dumps(old))
    assert load_anchor_set(root, B).version == 1  # without a key: followed (documented)
    with pytest.raises(AnchorSetError, match="latest pointer's signature does not verify"):
        load_anchor_set(root, B, public_key=public)
    for unsigned in ({k: v for k, v in old.items() if k != "signature"}, old | {"signature": 7}):
        pointer.write_text(json.dumps(unsigned))
        with pytest.raises(AnchorSetError, match="latest pointer is not signed"):
            load_anchor_set(root, B, public_key=public)
    # a version named by number is checked against the (rewritten) pointer's record too
    with pytest.raises(AnchorSetError, match="latest pointer is not signed"):
        load_anchor_set(root, B, version=2, public_key=public)
    set_latest(root, B, 2, signing_key=pem)  # the publisher promotes again: followed
    assert load_anchor_set(root, B, public_key=public).version == 2


def test_an_older_signed_latest_put_back_whole_is_refused_where_a_newer_was_followed(
    tmp_path, fitted, monkeypatch
):
    """[4/5]: a copy of an older signed `latest` put back whole verified, and rolled a
    consumer back silently. Each promotion's pointer now carries a signed `serial`, and the
    consumer remembers the newest it followed per set and key (`signing.pointer_memory`),
    as TUF clients remember the newest metadata version they saw."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    root, pointer = tmp_path / "published", tmp_path / "published" / B / "k8" / "latest"
    pem, public = signing_keys()
    publish_fit(root, B, fitted, signing_key=pem)
    set_latest(root, B, 1, signing_key=pem)
    assert load_anchor_set(root, B, public_key=public).version == 1
    old = pointer.read_bytes()
    publish_fit(root, B, fitted, signing_key=pem)
    set_latest(root, B, 2, signing_key=pem)
    assert json.loads(pointer.read_text())["serial"] == 2
    assert load_anchor_set(root, B, public_key=public).version == 2
    genuine = pointer.read_bytes()
    pointer.write_bytes(old)  # the attack: the whole signed pointer of v1 put back
    with pytest.raises(AnchorSetError, match=r"older than one followed here before \(promot"):
        load_anchor_set(root, B, public_key=public)
    with pytest.raises(AnchorSetError, match="older than one followed here"):
        load_anchor_set(root, B, version=1, public_key=public)  # the set's state is the replay
    # a machine that never followed the newer pointer cannot tell (said in the docs)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "another-machine"))
    assert load_anchor_set(root, B, public_key=public).version == 1
    # the publisher's own move back to v1 is a new promotion: followed everywhere
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    pointer.write_bytes(genuine)
    set_latest(root, B, 1, signing_key=pem)
    assert json.loads(pointer.read_text())["serial"] == 3
    assert load_anchor_set(root, B, public_key=public).version == 1
    memory = json.loads((tmp_path / "state" / "sparseeval" / "pointers.json").read_text())
    assert list(memory.values()) == [3]


def test_an_older_signed_hub_latest_is_refused_unless_a_revision_is_pinned(
    tmp_path, fitted, monkeypatch
):
    """[4/5] on the Hub mirror: the pushed `latest` carries the serial too."""
    from sparseeval.pipeline.mirror import push_to_hub

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    root, hub = tmp_path / "published", FakeMirrorHub(tmp_path / "hub")
    on_hub = tmp_path / "hub" / "acme" / "sets" / B / "k8" / "latest"
    pem, public = signing_keys()
    for v in (1, 2):
        publish_fit(root, B, fitted, signing_key=pem)
        push_to_hub(root, B, v, "acme/sets", hub, signing_key=pem)
        set_latest(root, B, v, signing_key=pem)
        if v == 1:
            old = on_hub.read_bytes()
        assert load_anchor_set("acme/sets", B, hub_client=hub, public_key=public).version == v
    on_hub.write_bytes(old)
    with pytest.raises(AnchorSetError, match="older than one followed here before"):
        load_anchor_set("acme/sets", B, hub_client=hub, public_key=public)
    pinned = load_anchor_set("acme/sets", B, hub_client=hub, public_key=public, revision="c0ffee")
    assert pinned.version == 1  # a pinned revision is loaded as it is


def test_consumer_path_without_a_key_imports_no_cryptography(set_and_answers):
    root, answers = set_and_answers
    code = (
        "import sys, sparseeval\n"
        f"a = sparseeval.load_anchor_set({str(root)!r}, {B!r})\n"
        f"a.predict({answers!r})\n"
        "print('cryptography' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_empty_or_missing_file_list_refuses(set_and_answers):
    root, _ = set_and_answers
    rewrite(root, lambda f, m: m.update(files={}))
    with pytest.raises(AnchorSetError, match="lists no files"):
        load_anchor_set(root, B)
    rewrite(root, lambda f, m: m.pop("files"))
    with pytest.raises(AnchorSetError, match="lists no files"):
        load_anchor_set(root, B)


def test_every_file_must_be_listed(set_and_answers, capsys):
    root, _ = set_and_answers
    folder = root / B / "k8" / "v1"
    (folder / "predictor" / "extra.npz").write_bytes(b"x")
    with pytest.raises(AnchorSetError, match=r"predictor/extra.npz \(not listed in the manifest\)"):
        load_anchor_set(root, B)
    (folder / "predictor" / "extra.npz").unlink()
    (folder / "manifest.sig").write_text("")  # allowed (checked only against a key)
    assert load_anchor_set(root, B).version == 1
    (folder / "notes\x1b]0;pwned\x07.txt").write_text("hi")
    err = one_line_error(*cli(["report", "--anchor-set", str(root), "--benchmark", B], capsys))
    assert "notes\\x1b]0;pwned\\x07.txt (not listed in the manifest)" in err


def test_paths_outside_the_version_folder_refuse(set_and_answers, tmp_path):
    root, _ = set_and_answers
    elsewhere = tmp_path / "elsewhere" / "predictor"
    shutil.copytree(root / B / "k8" / "v1" / "predictor", elsewhere)
    rewrite(root, lambda f, m: m["predictor"].update(folder="../../../elsewhere/predictor"))
    with pytest.raises(AnchorSetError, match=r"predictor folder .*elsewhere.*outside the version"):
        load_anchor_set(root, B)
    rewrite(root, lambda f, m: m["predictor"].update(folder=str(elsewhere)))
    with pytest.raises(AnchorSetError, match="absolute path"):
        load_anchor_set(root, B)

    def listed_outside(folder, man):
        man["predictor"]["folder"] = "predictor"
        man["files"]["../../../elsewhere/predictor/weights.npz"] = file_sha256(
            elsewhere / "weights.npz"
        )
        man["files"][str(elsewhere / "predictor.json")] = "0" * 64

    rewrite(root, listed_outside)
    with pytest.raises(AnchorSetError, match=r"weights.npz \(outside.*predictor.json \(absolute"):
        load_anchor_set(root, B)


def test_symlinks_are_refused(set_and_answers, tmp_path):
    root, _ = set_and_answers
    # a symlinked file inside (same bytes: the hashes alone would pass it)
    report = root / B / "k8" / "v1" / "report.md"
    copy = tmp_path / "report.md"
    shutil.copy(report, copy)
    report.unlink()
    report.symlink_to(copy)
    with pytest.raises(AnchorSetError, match=r"report.md \(symlink\)"):
        load_anchor_set(root, B)
    report.unlink()
    shutil.copy(copy, report)
    assert load_anchor_set(root, B).version == 1
    # a symlinked version folder
    moved = tmp_path / "moved-v1"
    os.rename(root / B / "k8" / "v1", moved)
    (root / B / "k8" / "v1").symlink_to(moved, target_is_directory=True)
    with pytest.raises(AnchorSetError, match="v1 is a symlink"):
        load_anchor_set(root, B)
    (root / B / "k8" / "v1").unlink()
    os.rename(moved, root / B / "k8" / "v1")
    # a symlinked benchmark folder
    other = tmp_path / "other-root"
    other.mkdir()
    os.rename(root / B, other / B)
    (root / B).symlink_to(other / B, target_is_directory=True)
    with pytest.raises(AnchorSetError, match=f"{B} is a symlink"):
        load_anchor_set(root, B)


def test_folder_and_manifest_versions_must_agree(set_and_answers):
    root, _ = set_and_answers
    os.rename(root / B / "k8" / "v1", root / B / "k8" / "v7")
    set_latest_raw(root, 7)
    with pytest.raises(AnchorSetError, match="folder v7 holds a manifest of version 1"):
        load_anchor_set(root, B)


def set_latest_raw(root, version):
    """A pointer written by hand (set_latest would refuse the folder)."""
    (root / B / "k8" / "latest").write_text(json.dumps({"version": version}))


# --------------------------------------------------------------------------- 9 leftovers


def test_a_candidate_that_was_never_promoted_does_not_load(set_and_answers, fitted, capsys):
    root, answers = set_and_answers
    publish_fit(root, B, fitted)  # v2: killed before the gate / promotion
    with pytest.raises(
        AnchorSetError, match=r"arc k8 v2 was never promoted \(a candidate that did "
    ):
        load_anchor_set(root, B, version=2)
    answers_file = answers_csv(root.parent / "a.csv", answers)
    err = one_line_error(*predict(root, [answers_file], capsys, "--version", "2"))
    assert "v2 was never promoted (a candidate that did not pass the gate or a crashed run)" in err
    assert load_anchor_set(root, B).version == 1
    mine = root.parent / "mine" / "v2"  # a copy you made yourself is yours to load
    shutil.copytree(root / B / "k8" / "v2", mine)
    assert load_anchor_set(mine, B).version == 2
    set_latest(root, B, 2)  # promoted now
    assert load_anchor_set(root, B, version=2).version == 2
    assert load_anchor_set(root, B, version=1).version == 1  # once live, stays loadable


def test_first_run_killed_before_promotion(tmp_path, fitted):
    folder = publish_fit(tmp_path, B, fitted)
    for target in (tmp_path, folder):
        with pytest.raises(AnchorSetError, match="v1 was never promoted"):
            load_anchor_set(target, B, version=1)


def test_sets_published_before_the_promotion_record_stay_loadable(set_and_answers, fitted):
    root, _ = set_and_answers
    publish_fit(root, B, fitted)
    set_latest(root, B, 2)
    publish_fit(root, B, fitted)  # v3: a candidate
    ptr = json.loads((root / B / "k8" / "latest").read_text())
    del ptr["promoted"]  # a pointer written by an older sparseeval
    (root / B / "k8" / "latest").write_text(json.dumps(ptr))
    assert [load_anchor_set(root, B, version=v).version for v in (1, 2)] == [1, 2]
    with pytest.raises(AnchorSetError, match="v3 was never promoted"):
        load_anchor_set(root, B, version=3)
    publish_fit(root, B, fitted)
    set_latest(root, B, 4)  # the first promotion recorded: the legacy ones keep loading
    assert [load_anchor_set(root, B, version=v).version for v in (1, 2, 4)] == [1, 2, 4]
    with pytest.raises(AnchorSetError, match="v3 was never promoted"):
        load_anchor_set(root, B, version=3)
    assert sorted(json.loads((root / B / "k8" / "latest").read_text())["promoted"]) == [
        "1",
        "2",
        "4",
    ]


def test_clean_leftovers(set_and_answers, fitted):
    root, _ = set_and_answers
    bench = root / B / "k8"
    publish_fit(root, B, fitted)  # v2: never promoted (a crashed run)
    publish_fit(root, B, fitted)
    set_latest(root, B, 3)
    publish_fit(root, B, fitted)  # v4: newer than live; maybe another run's candidate
    (bench / ".tmp-v5-deadbeef" / "predictor").mkdir(parents=True)
    (bench / ".trash-v9-cafe").mkdir()
    (bench / ".latest.0123.tmp").write_text("{")
    removed = clean_leftovers(root, B)
    assert sorted(os.path.basename(p) for p in removed) == [
        ".latest.0123.tmp", ".tmp-v5-deadbeef", ".trash-v9-cafe", "v2",
    ]  # fmt: skip
    tomb = json.loads((bench / ".discarded-v2").read_text())
    assert tomb["reason"] == "left over by an interrupted run"
    assert list_versions(root, B, 8) == [1, 3, 4] and latest_version(root, B, 8) == 3
    with pytest.raises(AnchorSetError, match="v2 not found"):
        load_anchor_set(root, B, version=2)
    assert clean_leftovers(root, B) == []
    # at the start of a pipeline run every never-promoted candidate goes
    removed = clean_leftovers(root, B, all_unpromoted=True)
    assert [os.path.basename(p) for p in removed] == ["v4"]
    assert list_versions(root, B, 8) == [1, 3]
    assert publish_fit(root, B, fitted).name == "v5"  # numbers are never reused
    assert sorted(p.name for p in bench.iterdir() if not p.name.startswith(".discarded")) == [
        "latest", "v1", "v3", "v5",
    ]  # fmt: skip


def test_a_discard_cut_short_is_refused_and_cleaned(set_and_answers, fitted):
    root, _ = set_and_answers
    publish_fit(root, B, fitted)
    set_latest(root, B, 2)
    tomb = {"version": 1, "reason": "bad \x1b[2J data"}
    (root / B / "k8" / ".discarded-v1").write_text(json.dumps(tomb))  # killed before the rename
    with pytest.raises(AnchorSetError, match=r"v1 was discarded \(bad \\x1b\[2J data\)"):
        load_anchor_set(root, B, version=1)
    assert [os.path.basename(p) for p in clean_leftovers(root, B)] == ["v1"]


def test_budget_sets_are_cleaned_too(tmp_path, fitted):
    publish_fit(tmp_path, B, fitted, budget=8)
    publish_fit(tmp_path, B, fitted, budget=8)
    set_latest(tmp_path, B, 2, budget=8)
    with pytest.raises(AnchorSetError, match="arc k8 v1 was never promoted"):
        load_anchor_set(tmp_path, B, version=1, budget=8)
    removed = clean_leftovers(tmp_path, B)
    assert removed == [str(tmp_path / B / "k8" / "v1")]


# --------------------------------------------------------------------------- 10 controls


def test_control_characters_from_files_are_escaped(set_and_answers, tmp_path, capsys):
    root, answers = set_and_answers
    assert printable("a\x1b]0;pwned\x07b\n\t\x9b") == "a\\x1b]0;pwned\\x07b\\n\\t\\x9b"
    assert printable("é ok") == "é ok"
    header = tmp_path / "evil.csv"
    header.write_text("\x1b]0;pwned\x07item,correct\n1,1\n")
    err = one_line_error(*predict(root, [header], capsys))
    assert "\\x1b]0;pwned\\x07item" in err
    aset = load_anchor_set(root, B)
    item = aset.items[0]
    bad = answers_csv(tmp_path / "bad\x1b[2J.csv", answers, extra=f"{item},yes\x1b[31m\n")
    err = one_line_error(*predict(root, [bad], capsys))
    assert "\\x1b[31m" in err
    dup = answers_csv(tmp_path / "dup\x1b[2J.csv", answers, extra=f"{item},{1 - answers[item]}\n")
    err = one_line_error(*predict(root, [dup], capsys))
    assert "dup\\x1b[2J.csv" in err
    missing = tmp_path / "gone\x1b[2J.csv"
    err = one_line_error(*predict(root, [missing], capsys))
    assert "gone\\x1b[2J.csv: no such file" in err


def test_write_version_refuses_a_bad_signing_key_before_writing(tmp_path, fitted):
    est = fitted[2]
    with pytest.raises(AnchorSetError, match="signing key"):
        decided = new_version(B, est, data_fingerprint="x", split_sizes={}, metrics={},
                              settings={})  # fmt: skip
        bad_key = b"-----BEGIN PRIVATE KEY-----\nnope\n-----END PRIVATE KEY-----\n"
        write_version(tmp_path, decided, signing_key=bad_key)
    assert not (tmp_path / B).exists() or list((tmp_path / B).iterdir()) == []
