"""Test certificates made with the `openssl` command at test time (never committed): a CA, a server
keystore it signs for 127.0.0.1/localhost, client keystores, and certificates that must fail."""

from __future__ import annotations

import pathlib
import shutil
import subprocess

OPENSSL = shutil.which("openssl")
CLIENT_SUBJECT = "/O=acme/OU=platform/CN=ops"
CLIENT_PRINCIPAL = "User:CN=ops,OU=platform,O=acme"  # Kafka's form: most specific RDN first
KEY_PASSWORD = "kpass"


def _openssl(*args):
    subprocess.run([OPENSSL, *map(str, args)], check=True, capture_output=True)


def _ca(where: pathlib.Path, name: str):
    key, cert = where / f"{name}-key.pem", where / f"{name}.pem"
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj",
             f"/CN={name}", "-keyout", key, "-out", cert)
    return key, cert


def _signed(where: pathlib.Path, name: str, subject: str, ca, extensions: str = "") -> str:
    """A keystore PEM (certificate + key in one file) for `subject`, signed by `ca`."""
    key, request, cert = (where / f"{name}-{part}.pem" for part in ("key", "req", "cert"))
    _openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", subject, "-keyout", key,
             "-out", request)
    ext = where / f"{name}.ext"
    ext.write_text(extensions)
    ca_key, ca_cert = ca
    _openssl("x509", "-req", "-in", request, "-CA", ca_cert, "-CAkey", ca_key, "-CAcreateserial",
             "-days", "1", "-out", cert, "-extfile", ext)
    keystore = where / f"{name}.keystore.pem"
    keystore.write_text(cert.read_text() + key.read_text())
    return str(keystore)


class Certificates:
    """Paths: `ca` (the truststore of both sides), `server` (keystore for 127.0.0.1 and
    localhost), `client` (CLIENT_SUBJECT), `rogue_client` (signed by another CA), `other_ca`,
    `wrong_host_server` (signed by `ca` for elsewhere.example only), `encrypted_client` (the
    client certificate with its key encrypted by KEY_PASSWORD)."""

    def __init__(self, where: pathlib.Path):
        ca = _ca(where, "test-ca")
        other = _ca(where, "other-ca")
        self.ca, self.other_ca = str(ca[1]), str(other[1])
        self.server = _signed(where, "server", "/CN=localhost", ca,
                              "subjectAltName=IP:127.0.0.1,DNS:localhost\n")
        self.wrong_host_server = _signed(where, "elsewhere", "/CN=elsewhere.example", ca,
                                         "subjectAltName=DNS:elsewhere.example\n")
        self.client = _signed(where, "client", CLIENT_SUBJECT, ca)
        self.rogue_client = _signed(where, "rogue", "/CN=rogue", other)
        encrypted_key = where / "client-key-encrypted.pem"
        _openssl("pkey", "-in", where / "client-key.pem", "-aes256", "-passout",
                 f"pass:{KEY_PASSWORD}", "-out", encrypted_key)
        self.encrypted_client = str(where / "client-encrypted.keystore.pem")
        pathlib.Path(self.encrypted_client).write_text(
            (where / "client-cert.pem").read_text() + encrypted_key.read_text())


def certificates_fixture(tmp_path_factory):
    """Body of a module-scoped `certs` fixture (skips without openssl)."""
    import pytest

    if OPENSSL is None:
        pytest.skip("the openssl command is needed to make test certificates")
    return Certificates(tmp_path_factory.mktemp("certs"))
