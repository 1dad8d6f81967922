"""A test certificate authority: a CA and one server certificate, written as PEM files.

HTTPS origins serve the certificate; a proxy is told to trust the CA for upstream TLS
(``ssl_verify_upstream_trusted_ca``), as an operator would trust a private CA.
"""

from __future__ import annotations

import datetime
import ipaddress
import ssl
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


@dataclass(frozen=True)
class CertAuthority:
    """A CA and one server certificate for 127.0.0.1-127.0.0.3 and localhost, as files."""

    ca_pem: Path
    cert_pem: Path
    key_pem: Path

    def server_context(self) -> ssl.SSLContext:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(self.cert_pem, self.key_pem)
        ctx.set_alpn_protocols(["http/1.1"])
        return ctx

    def issue(self, *names: str) -> tuple[Path, Path]:
        """Another server certificate, for these DNS names (or IP addresses), signed by this CA:
        (cert, key)."""
        ca_key = serialization.load_pem_private_key(
            (self.ca_pem.parent / "test-ca-key.pem").read_bytes(), None)
        ca_cert = x509.load_pem_x509_certificate(self.ca_pem.read_bytes())
        assert isinstance(ca_key, ec.EllipticCurvePrivateKey)
        key = ec.generate_private_key(ec.SECP256R1())
        cert = _server_cert(ca_cert, ca_key, key, [_name(n) for n in names])
        stem = "-".join(names)
        cert_pem = self.ca_pem.parent / f"{stem}.cert.pem"
        key_pem = self.ca_pem.parent / f"{stem}.key.pem"
        cert_pem.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        key_pem.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                              serialization.PrivateFormat.PKCS8,
                                              serialization.NoEncryption()))
        return cert_pem, key_pem

    def by_server_name(self, names: dict[str, tuple[Path, Path]]) -> ssl.SSLContext:
        """A server context that presents, for each server name in ``names``, that name's
        certificate, and this CA's default one otherwise (HTTP/1.1 only)."""
        default = self.server_context()
        contexts = {}
        for name, (cert, key) in names.items():
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(cert, key)
            ctx.set_alpn_protocols(["http/1.1"])
            contexts[name] = ctx
        wrapped = default.sni_callback

        def choose(sock: ssl.SSLObject, name: str | None, ctx: ssl.SSLContext) -> None:
            if name in contexts:
                sock.context = contexts[name]
            if wrapped is not None:
                wrapped(sock, name, ctx)

        default.sni_callback = choose  # type: ignore[assignment]
        return default


def _name(name: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(name))
    except ValueError:
        return x509.DNSName(name)


def make_test_ca(directory: Path) -> CertAuthority:
    """A new CA and server certificate (valid from yesterday for 30 days) in ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.UTC)
    start, end = now - datetime.timedelta(days=1), now + datetime.timedelta(days=30)

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "robotsgate e2e test CA")])
    ca_ski = x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key())
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(end)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(_key_usage(ca=True), critical=True)
        .add_extension(ca_ski, critical=False)
        .sign(ca_key, hashes.SHA256())
    )

    key = ec.generate_private_key(ec.SECP256R1())
    sans: list[x509.GeneralName] = [x509.DNSName("localhost")]
    sans += [x509.IPAddress(ipaddress.ip_address(f"127.0.0.{i}")) for i in (1, 2, 3)]
    cert = _server_cert(ca_cert, ca_key, key, sans)

    ca_pem = directory / "test-ca.pem"
    (directory / "test-ca-key.pem").write_bytes(ca_key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption()))
    cert_pem = directory / "server-cert.pem"
    key_pem = directory / "server-key.pem"
    ca_pem.write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
    cert_pem.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_pem.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return CertAuthority(ca_pem, cert_pem, key_pem)



def _server_cert(ca_cert: x509.Certificate, ca_key: ec.EllipticCurvePrivateKey,
                 key: ec.EllipticCurvePrivateKey, sans: list[x509.GeneralName]
                 ) -> x509.Certificate:
    """A server certificate for ``sans``, valid from yesterday for 30 days."""
    now = datetime.datetime.now(datetime.UTC)
    ca_ski = x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key())
    first = next((n.value for n in sans if isinstance(n, x509.DNSName)), "localhost")
    return (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, first)]))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=30))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(_key_usage(ca=False), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ca_ski),
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())
    )


def _key_usage(*, ca: bool) -> x509.KeyUsage:
    """What a key of these certificates may do: sign (a handshake), and for the CA also sign
    certificates and CRLs; nothing else."""
    return x509.KeyUsage(
        digital_signature=True,
        content_commitment=False,
        key_encipherment=False,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=ca,
        crl_sign=ca,
        encipher_only=False,
        decipher_only=False,
    )
