"""Ed25519 signatures over a published version's manifest and over its set's `latest`
pointer (optional; see the trust model in `sparseeval.consume.sets.layout`).
`cryptography` is imported only when a key is used.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import hashlib
import json
import os
import uuid
from pathlib import Path

from sparseeval.consume.answers.responses import printable
from sparseeval.consume.sets.layout import (
    MANIFEST,
    POINTER_SIGNATURE,
    SIGNATURE,
    AnchorSetError,
    pointer_serial,
    read_manifest,
    verify,
)

POINTER_MEMORY = "pointers.json"
MAX_MEMORY_BYTES = 4 << 20  # a machine's memory of the sets it follows: kilobytes


def pem_bytes(key: str | bytes | Path, what: str) -> bytes:
    """PEM text (str/bytes holding `-----BEGIN`) as bytes, or the bytes of a PEM file path."""
    if isinstance(key, bytes) and b"-----BEGIN" in key:
        return key
    if isinstance(key, str) and "-----BEGIN" in key:
        return key.encode()
    path = Path(os.fsdecode(key)) if isinstance(key, bytes | str) else Path(key)
    try:
        return path.read_bytes()
    except OSError as e:
        raise AnchorSetError(f"{what}: cannot read {printable(path)} ({e.strerror})") from None


def _crypto():
    try:
        from cryptography.exceptions import InvalidSignature
        from cryptography.hazmat.primitives.asymmetric import ed25519
        from cryptography.hazmat.primitives.serialization import load_pem_public_key
    except ImportError:
        raise AnchorSetError(
            "signatures need the cryptography package: pip install cryptography"
        ) from None
    return InvalidSignature, ed25519, load_pem_public_key


def verify_signature(folder: str | Path, manifest: dict, public_key) -> None:
    """`manifest.sig` is an Ed25519 signature of manifest.json's bytes by `public_key`.

    public_key: PEM bytes/str, a path to a PEM file, or an `Ed25519PublicKey`.
    """
    key, folder = _public_key(public_key), Path(folder)
    sig_path = folder / SIGNATURE
    if not sig_path.is_file():
        raise AnchorSetError(
            f"{printable(folder)}: no {SIGNATURE}; a public key was given, so only a set "
            "signed with its private key is accepted"
        )
    body = (folder / MANIFEST).read_bytes()
    if not _verifies(key, sig_path.read_bytes(), body):
        raise AnchorSetError(
            f"{printable(folder)}: {SIGNATURE} does not verify with the public key given "
            "(not signed by that key, or the manifest changed); refusing it"
        )
    try:
        same = json.loads(body) == manifest
    except (ValueError, UnicodeDecodeError):
        same = False
    if not same:
        raise AnchorSetError(f"{printable(folder)}: manifest changed while it was being read")


def signed_pointer(pointer: dict, private_key_pem) -> dict:
    """`pointer` (a set's `latest`) with its `signature`: Ed25519 over `pointer_body`."""
    key = private_key(private_key_pem)
    body = pointer_body(pointer)
    return pointer | {POINTER_SIGNATURE: signature(key, body).decode().strip()}


def verify_pointer(path: str | Path, pointer: dict, public_key, where: str | None = None) -> None:
    """The `latest` pointer at `path` (read as `pointer`) is signed by `public_key`: a
    pointer rewritten to another version, or with another promotion record, is refused.

    where: the set's place (a folder, a Hub repo and path); then a signed pointer older
    than one followed there before on this machine is refused too (`pointer_memory`).
    """
    key = _public_key(public_key)
    sig = pointer.get(POINTER_SIGNATURE)
    if not isinstance(sig, str):
        raise AnchorSetError(
            f"{printable(path)}: the latest pointer is not signed; a public key was given, so"
            " only a pointer its private key signed is followed (pin a version, or sign the"
            " promotion: versions.set_latest(..., signing_key=...))"
        )
    if not _verifies(key, sig.encode(), pointer_body(pointer)):
        raise AnchorSetError(
            f"{printable(path)}: the latest pointer's signature does not verify with the public"
            " key given (rewritten, e.g. to an older version, or signed by another key);"
            " refusing it"
        )
    if where is not None:
        _check_fresh(path, pointer, key, where)


def pointer_memory() -> Path:
    """Where this machine remembers the newest signed `latest` it followed in each set (by
    the signing key and the set's place): `$XDG_STATE_HOME/sparseeval/pointers.json`,
    `~/.local/state/...` by default. Delete it to accept an older pointer put back on
    purpose (a publisher's restore from backup)."""
    state = os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state"
    return Path(state) / "sparseeval" / POINTER_MEMORY


def _check_fresh(path, pointer: dict, key, where: str) -> None:
    """Refuse a signed pointer whose `serial` is below the one followed at `where` before;
    remember a newer one (best effort: a read-only home loads, unprotected)."""
    if "serial" not in pointer:
        return  # signed before pointers had serials: nothing to compare
    serial, memory = pointer_serial(pointer), pointer_memory()
    seen = _read_memory(memory)
    slot = f"{_fingerprint(key)} {where}"
    before = seen.get(slot)
    if type(before) is int and serial < before:
        raise AnchorSetError(
            f"{printable(path)}: this signed latest pointer (promotion {serial}) is older than"
            f" one followed here before (promotion {before}): an old copy put back? refusing"
            f" it (if the publisher restored it on purpose, delete {printable(memory)})"
        )
    if before != serial:
        with contextlib.suppress(OSError):
            _replace_memory(memory, seen | {slot: serial})


def _read_memory(memory: Path) -> dict:
    try:
        with open(memory, "rb") as f:
            seen = json.loads(f.read(MAX_MEMORY_BYTES))
    except (OSError, ValueError, UnicodeDecodeError):
        return {}
    return seen if isinstance(seen, dict) else {}


def _replace_memory(memory: Path, seen: dict) -> None:
    memory.parent.mkdir(parents=True, exist_ok=True)
    tmp = memory.with_name(f".{memory.name}-{uuid.uuid4().hex}.tmp")
    try:
        tmp.write_text(json.dumps(seen, indent=1, sort_keys=True))
        os.replace(tmp, memory)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


def _fingerprint(key) -> str:
    """The first 16 hex digits of the sha256 of an Ed25519 public key's raw bytes."""
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

    return hashlib.sha256(key.public_bytes(Encoding.Raw, PublicFormat.Raw)).hexdigest()[:16]


def pointer_body(pointer: dict) -> bytes:
    """The bytes a pointer's signature covers: its JSON, keys sorted, without the signature."""
    rest = {k: v for k, v in pointer.items() if k != POINTER_SIGNATURE}
    return json.dumps(rest, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()


def _public_key(public_key):
    """An `Ed25519PublicKey` from PEM bytes/str, a PEM file path, or a key object."""
    _, ed25519, load_pem_public_key = _crypto()
    if isinstance(public_key, ed25519.Ed25519PublicKey):
        return public_key
    try:
        key = load_pem_public_key(pem_bytes(public_key, "public key"))
    except (ValueError, TypeError) as e:
        raise AnchorSetError(f"public key: not a PEM public key ({printable(e)})") from None
    if not isinstance(key, ed25519.Ed25519PublicKey):
        raise AnchorSetError("public key: not an Ed25519 key")
    return key


def _verifies(key, encoded: bytes, body: bytes) -> bool:
    """Whether base64 `encoded` is the key's Ed25519 signature of `body`."""
    InvalidSignature, _, _ = _crypto()
    try:
        sig = base64.b64decode(encoded.strip(), validate=True)
    except (binascii.Error, ValueError):
        return False
    try:
        key.verify(sig, body)
    except (InvalidSignature, ValueError):
        return False
    return len(sig) == 64


def sign_version(folder: str | Path, private_key_pem) -> Path:
    """Write `manifest.sig` into a version folder: Ed25519 over manifest.json's exact bytes.

    private_key_pem: PEM bytes/str (unencrypted PKCS8), a path to a PEM file, or an
    `Ed25519PrivateKey`. The folder is verified first; the signature file is replaced
    atomically. Consumers check it with `load_anchor_set(..., public_key=...)`. Needs
    the `cryptography` package.
    """
    folder = Path(folder)
    key = private_key(private_key_pem)
    manifest = read_manifest(folder)
    verify(folder, manifest)
    body = (folder / MANIFEST).read_bytes()
    tmp = folder.parent / f".sig-{folder.name}-{uuid.uuid4().hex}.tmp"
    try:
        with open(tmp, "wb") as f:
            f.write(signature(key, body))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, folder / SIGNATURE)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
    return folder / SIGNATURE


def private_key(key):
    """An `Ed25519PrivateKey` from PEM bytes/str, a PEM file path, or a key object."""
    try:
        from cryptography.hazmat.primitives.asymmetric import ed25519
        from cryptography.hazmat.primitives.serialization import load_pem_private_key
    except ImportError:
        raise AnchorSetError(
            "signing needs the cryptography package: pip install cryptography"
        ) from None
    if isinstance(key, ed25519.Ed25519PrivateKey):
        return key
    try:
        loaded = load_pem_private_key(pem_bytes(key, "signing key"), password=None)
    except (ValueError, TypeError) as e:
        raise AnchorSetError(f"signing key: not an unencrypted PEM private key ({e})") from None
    if not isinstance(loaded, ed25519.Ed25519PrivateKey):
        raise AnchorSetError("signing key: not an Ed25519 key")
    return loaded


def signature(key, body: bytes) -> bytes:
    return base64.b64encode(key.sign(body)) + b"\n"


__all__ = [
    "pem_bytes",
    "pointer_body",
    "pointer_memory",
    "private_key",
    "sign_version",
    "signature",
    "signed_pointer",
    "verify_pointer",
    "verify_signature",
]
