"""Known-answer checks of the server side of SCRAM (kgroup.server.security.scram): RFC 7677's SCRAM-SHA-256
example exchange reproduced byte for byte, and a SCRAM-SHA-512 exchange cross-checked against
the RFC 5802 formulas computed step by step here with hashlib/hmac."""

from __future__ import annotations

import base64
import hashlib
import hmac

import pytest

from kgroup.server.security.scram import CredentialStore, ScramError, ScramServer

# RFC 7677, section 3: user "user", password "pencil"
CLIENT_FIRST = b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
SERVER_NONCE = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
SALT = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
SERVER_FIRST = (b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                b"s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096")
CLIENT_FINAL = (b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
SERVER_FINAL = b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="


def _server(mechanism):
    store = CredentialStore()
    store.add("user", "pencil", salt=SALT)
    return ScramServer(mechanism, store, server_nonce=SERVER_NONCE)


def test_rfc_7677_scram_sha_256_example_exchange():
    server = _server("SCRAM-SHA-256")
    assert server.first(CLIENT_FIRST) == SERVER_FIRST
    assert server.final(CLIENT_FINAL) == SERVER_FINAL
    assert server.complete and server.username == "user"


def test_rfc_7677_exchange_with_a_flipped_proof_bit_fails():
    server = _server("SCRAM-SHA-256")
    server.first(CLIENT_FIRST)
    proof = bytearray(base64.b64decode(CLIENT_FINAL.rsplit(b"p=", 1)[1]))
    proof[0] ^= 1
    with pytest.raises(ScramError):
        server.final(CLIENT_FINAL.rsplit(b"p=", 1)[0] + b"p=" + base64.b64encode(bytes(proof)))


def _h(key, data):
    return hmac.new(key, data, "sha512").digest()


def test_scram_sha_512_matches_rfc_5802_computed_step_by_step():
    """The client side written out here from RFC 5802's definitions, independent of scram.py."""
    server = _server("SCRAM-SHA-512")
    server_first = server.first(CLIENT_FIRST)
    assert server_first == SERVER_FIRST  # same nonces and salt; the hash does not enter here
    salted = hashlib.pbkdf2_hmac("sha512", b"pencil", SALT, 4096)
    client_key = _h(salted, b"Client Key")
    stored_key = hashlib.sha512(client_key).digest()
    without_proof = b"c=biws,r=rOprNGfwEbeRWgbNEkqO" + SERVER_NONCE.encode()
    auth_message = b",".join((CLIENT_FIRST[3:], server_first, without_proof))
    proof = bytes(a ^ b for a, b in zip(client_key, _h(stored_key, auth_message)))
    server_signature = _h(_h(salted, b"Server Key"), auth_message)
    final = server.final(without_proof + b",p=" + base64.b64encode(proof))
    assert final == b"v=" + base64.b64encode(server_signature)
    assert len(server_signature) == 64
