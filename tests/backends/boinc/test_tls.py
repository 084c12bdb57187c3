"""A project on https with its own (self-signed) certificate: BGW_BOINC_CA_FILE."""

from __future__ import annotations

import ssl
import subprocess
from pathlib import Path

import pytest

from app.backends.boinc.context import client_for
from app.backends.boinc.errors import BoincConnectionError
from app.config import Settings
from tests.fakes.boinc_server import ALICE_AUTH, FakeBoincServer


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 and its key."""
    d = tmp_path_factory.mktemp("tls")
    cert, key = d / "cert.pem", d / "key.pem"
    subprocess.run(
        [
            "openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
            "-keyout", str(key), "-out", str(cert), "-subj", "/CN=127.0.0.1",
            "-addext", "subjectAltName=IP:127.0.0.1",
        ],
        check=True,
        capture_output=True,
        timeout=60,
    )  # fmt: skip
    return cert, key


def test_a_self_signed_project_needs_its_ca_file(certificate: tuple[Path, Path]) -> None:
    cert, key = certificate
    tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    tls.load_cert_chain(cert, key)
    with FakeBoincServer(tls=tls) as fake:
        assert fake.url.startswith("https://")
        trusting = Settings(boinc_url=fake.url, boinc_ca_file=cert, boinc_timeout_seconds=5)
        with client_for(trusting, ALICE_AUTH) as client:
            client.ping()
            assert client.query_batches() == []
        # The system's CAs do not know it: a retryable connection error that says why.
        plain = Settings(boinc_url=fake.url, boinc_timeout_seconds=5)
        with client_for(plain, ALICE_AUTH) as client, pytest.raises(BoincConnectionError) as err:
            client.ping()
        assert "CERTIFICATE_VERIFY_FAILED" in str(err.value), err.value
        assert err.value.retryable
