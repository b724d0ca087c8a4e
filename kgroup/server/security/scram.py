"""SCRAM (RFC 5802, with RFC 7677's SHA-256 and Kafka's SHA-512) on the server side, and the
salted credentials every SASL mechanism checks passwords against.

Passwords are never kept: a user is stored as Kafka's `ScramCredential` (salt, StoredKey,
ServerKey, iterations) per hash. An unknown user gets a fake credential derived from a per-server
secret, so the exchange runs to the same final proof check and an unknown user costs the same time
as a wrong password (Kafka's `ScramSaslServer` does the same).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
from dataclasses import dataclass

HASHES = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}
ITERATIONS = 4096  # Kafka's default and minimum for SCRAM credentials


class ScramError(Exception):
    """The client's message is not a valid SCRAM message, or its proof is wrong."""


@dataclass(frozen=True)
class ScramCredential:
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int


def _hmac(hash_name, key, data):
    return hmac.new(key, data, hash_name).digest()


def salted_credential(hash_name: str, password: str, salt: bytes | None = None,
                      iterations: int = ITERATIONS) -> ScramCredential:
    salt = salt if salt is not None else os.urandom(32)
    salted = hashlib.pbkdf2_hmac(hash_name, password.encode("utf-8"), salt, iterations)
    client_key = _hmac(hash_name, salted, b"Client Key")
    return ScramCredential(salt, hashlib.new(hash_name, client_key).digest(),
                           _hmac(hash_name, salted, b"Server Key"), iterations)


def password_matches(hash_name: str, credential: ScramCredential, password: str) -> bool:
    """A clear password (SASL/PLAIN) checked against the salted credential, in constant time."""
    candidate = salted_credential(hash_name, password, credential.salt, credential.iterations)
    return hmac.compare_digest(candidate.stored_key, credential.stored_key)


class CredentialStore:
    """Users' salted credentials per hash; fake ones for unknown users (same cost, never matching)."""

    def __init__(self, users: dict[str, str] | None = None):
        self._secret = os.urandom(32)
        self._users: dict[str, dict[str, ScramCredential]] = {}
        for name, password in (users or {}).items():
            self.add(name, password)

    def add(self, name: str, password: str, salt: bytes | None = None):
        """`salt`: a fixed one (known-answer tests); by default a random one per hash."""
        self._users[name] = {h: salted_credential(h, password, salt) for h in HASHES.values()}

    def lookup(self, name: str, hash_name: str) -> tuple[ScramCredential, bool]:
        """(credential, known). An unknown user's credential has a stable salt and random keys."""
        known = self._users.get(name)
        if known is not None:
            return known[hash_name], True
        salt = _hmac(hash_name, self._secret, name.encode("utf-8"))[:32]
        return ScramCredential(salt, os.urandom(hashlib.new(hash_name).digest_size),
                               os.urandom(hashlib.new(hash_name).digest_size), ITERATIONS), False


def _attributes(text: str) -> dict[str, str]:
    out = {}
    for part in text.split(","):
        if len(part) < 2 or part[1] != "=":
            raise ScramError(f"invalid SCRAM attribute {part!r}")
        out.setdefault(part[0], part[2:])
    return out


def _saslname(text: str) -> str:
    if "=" in text.replace("=2C", "").replace("=3D", ""):
        raise ScramError("invalid user name encoding")
    return text.replace("=2C", ",").replace("=3D", "=")


class ScramServer:
    """One SCRAM exchange: client-first → server-first, client-final → server-final (or ScramError)."""

    def __init__(self, mechanism: str, store: CredentialStore, server_nonce: str | None = None):
        """`server_nonce`: a fixed nonce part (known-answer tests); by default 18 random bytes."""
        self.mechanism = mechanism
        self._server_nonce = server_nonce
        self.hash_name = HASHES[mechanism]
        self.store = store
        self.username = None
        self._known = False
        self._credential = None
        self._gs2_header = ""
        self._client_first_bare = ""
        self._server_first = ""
        self._nonce = ""
        self.complete = False

    def first(self, message: bytes) -> bytes:
        text = message.decode("utf-8", "replace")
        parts = text.split(",", 2)
        if len(parts) != 3 or parts[0] not in ("n", "y") or (parts[1] and not parts[1].startswith("a=")):
            raise ScramError("invalid SCRAM client-first message")
        self._gs2_header = f"{parts[0]},{parts[1]},"
        self._client_first_bare = parts[2]
        attrs = _attributes(parts[2])
        if "n" not in attrs or "r" not in attrs or not attrs["r"]:
            raise ScramError("SCRAM client-first message needs n= and r=")
        self.username = _saslname(attrs["n"])
        self._credential, self._known = self.store.lookup(self.username, self.hash_name)
        self._nonce = attrs["r"] + (self._server_nonce
                                    or base64.b64encode(os.urandom(18)).decode("ascii"))
        salt = base64.b64encode(self._credential.salt).decode("ascii")
        self._server_first = f"r={self._nonce},s={salt},i={self._credential.iterations}"
        return self._server_first.encode("utf-8")

    def final(self, message: bytes) -> bytes:
        text = message.decode("utf-8", "replace")
        without_proof, sep, proof_part = text.rpartition(",p=")
        if not sep:
            raise ScramError("SCRAM client-final message has no proof")
        attrs = _attributes(without_proof)
        expected_binding = base64.b64encode(self._gs2_header.encode("utf-8")).decode("ascii")
        if attrs.get("c") != expected_binding or attrs.get("r") != self._nonce:
            raise ScramError("SCRAM client-final message does not match the exchange")
        try:
            proof = base64.b64decode(proof_part, validate=True)
        except ValueError:
            raise ScramError("invalid SCRAM proof encoding") from None
        auth_message = ",".join((self._client_first_bare, self._server_first,
                                 without_proof)).encode("utf-8")
        cred = self._credential
        signature = _hmac(self.hash_name, cred.stored_key, auth_message)
        if len(proof) != len(signature):
            raise ScramError("invalid SCRAM proof length")
        client_key = bytes(a ^ b for a, b in zip(proof, signature))
        computed = hashlib.new(self.hash_name, client_key).digest()
        if not (hmac.compare_digest(computed, cred.stored_key) and self._known):
            raise ScramError("invalid credentials")
        self.complete = True
        server_signature = _hmac(self.hash_name, cred.server_key, auth_message)
        return b"v=" + base64.b64encode(server_signature)
