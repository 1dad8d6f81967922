"""The proxy's Ed25519 key: made once (`robotsgate keygen`), read at start-up, never logged.

It signs the audit log's checkpoints (robotsgate.audit.chain), so that a third party holding
only the public key can tell that the log is the one the proxy wrote. A key is named by its id,
the JWK SHA-256 thumbprint of its public key (RFC 7638), as HTTP message signatures name it
(Web Bot Auth's `keyid`).

The key file is PKCS #8 PEM, unencrypted (the proxy starts unattended), readable by its owner
only: `keygen` creates it so, and will not write over a file that exists.
"""

import base64
import hashlib
import json
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey


def b64url(data: bytes) -> str:
    """base64url without padding (RFC 7515 §2), as JWKs and key ids are written."""
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64url(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


@dataclass(frozen=True, slots=True)
class PublicKey:
    raw: bytes  # the 32 bytes of an Ed25519 public key

    @property
    def keyid(self) -> str:
        """The JWK SHA-256 thumbprint (RFC 7638 §3: the required members, sorted, no spaces)."""
        canonical = json.dumps({"crv": "Ed25519", "kty": "OKP", "x": b64url(self.raw)},
                               separators=(",", ":"), sort_keys=True)
        return b64url(hashlib.sha256(canonical.encode("ascii")).digest())

    def jwk(self) -> dict[str, str]:
        """The key as a JWK (RFC 8037), with its id."""
        return {"kty": "OKP", "crv": "Ed25519", "x": b64url(self.raw), "kid": self.keyid}

    def verifies(self, signature: bytes, data: bytes) -> bool:
        try:
            Ed25519PublicKey.from_public_bytes(self.raw).verify(signature, data)
        except (InvalidSignature, ValueError):
            return False
        return True


@dataclass(frozen=True, slots=True)
class SigningKey:
    private: Ed25519PrivateKey = field(repr=False)  # never printed, never logged
    public: PublicKey
    path: str

    def sign(self, data: bytes) -> bytes:
        return self.private.sign(data)


def generate(path: str) -> SigningKey:
    """A new key, written to `path` (created: never over a file that exists), mode 0600."""
    private = Ed25519PrivateKey.generate()
    pem = private.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(fd, pem)
    finally:
        os.close(fd)
    return _signing(private, path)


def load(path: str) -> SigningKey:
    """The key in `path`; ValueError says what is wrong with it (not its content)."""
    try:
        info = os.stat(path)
        data = Path(path).read_bytes()
    except OSError as exc:
        raise ValueError(f"cannot read {path!r}: {exc.strerror or exc}") from None
    if info.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise ValueError(f"{path!r} may be read by others (mode {stat.filemode(info.st_mode)}): "
                         f"chmod 600 it, or make a new one with robotsgate keygen")
    try:
        private = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"{path!r} is not an unencrypted PEM private key ({exc})") from None
    if not isinstance(private, Ed25519PrivateKey):
        raise ValueError(f"{path!r} is not an Ed25519 key: robotsgate keygen makes one")
    return _signing(private, path)


def _signing(private: Ed25519PrivateKey, path: str) -> SigningKey:
    raw = private.public_key().public_bytes(serialization.Encoding.Raw,
                                            serialization.PublicFormat.Raw)
    return SigningKey(private, PublicKey(raw), path)


def public_keys(path: str) -> list[PublicKey]:
    """The public keys a file holds: a PEM key (public or private: only its public half is
    kept), or a JWK Set (a key directory, {"keys": [...]}) of which the Ed25519 keys count.
    ValueError says why none could be read."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise ValueError(f"cannot read {path!r}: {exc.strerror or exc}") from None
    if data.lstrip().startswith(b"{"):
        return _from_jwks(path, data)
    try:
        key: object = serialization.load_pem_public_key(data)
    except ValueError:
        try:
            key = serialization.load_pem_private_key(data, password=None).public_key()
        except (ValueError, TypeError) as exc:
            raise ValueError(f"{path!r} holds no PEM key nor a JWK Set ({exc})") from None
    if not isinstance(key, Ed25519PublicKey):
        raise ValueError(f"{path!r} is not an Ed25519 key")
    return [PublicKey(key.public_bytes(serialization.Encoding.Raw,
                                       serialization.PublicFormat.Raw))]


def directory_key(path: str) -> tuple[list[PublicKey], SigningKey | None]:
    """A key a directory lists: its public keys, and the key itself when the file holds a
    private one (which then signs the directory's responses). ValueError says what is
    wrong."""
    try:
        private = b"PRIVATE KEY" in Path(path).read_bytes()
    except OSError as exc:
        raise ValueError(f"cannot read {path!r}: {exc.strerror or exc}") from None
    if private:
        held = load(path)
        return [held.public], held
    return public_keys(path), None


def _from_jwks(path: str, data: bytes) -> list[PublicKey]:
    try:
        document = json.loads(data)
        entries = document["keys"] if isinstance(document, dict) and "keys" in document \
            else [document]
        keys = [PublicKey(_unb64url(entry["x"])) for entry in entries
                if isinstance(entry, dict) and entry.get("kty") == "OKP" and
                entry.get("crv") == "Ed25519" and isinstance(entry.get("x"), str)]
    except (ValueError, TypeError, KeyError) as exc:
        raise ValueError(f"{path!r} is not a JWK Set ({exc})") from None
    keys = [key for key in keys if len(key.raw) == 32]
    if not keys:
        raise ValueError(f"{path!r} holds no Ed25519 key")
    return keys
