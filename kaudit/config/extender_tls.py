"""An extender's TLS context, built once from its ``tlsConfig`` by validation and transport.

Mirrors client-go's ``TLSConfigFor`` / ``makeTransport`` as ``NewHTTPExtender`` uses them
(``staging/src/k8s.io/client-go/transport/transport.go``, Kubernetes v1.34): with a CA (file
or data) only that CA is trusted; ``enableHTTPS`` without a CA, or ``insecure``, does not
verify the server; a client certificate and key (files or data) are loaded as a pair. The
files are read and the PEM parsed when the scheduler starts, so a missing file or data that is
not a certificate fails the configuration, not the first call: the validation of
``extenders`` (:func:`kaudit.config.extenders.tls_errors`) builds the context with this module
and reports what failed, and the HTTP transport builds it with the same code.
"""

from __future__ import annotations

import ssl
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kaudit.config.extenders import TLSConfig


class TLSSettingError(ValueError):
    """A TLS setting that cannot be loaded: ``field`` names it (``caFile``, ``certData`` ...),
    ``reason`` says why (the operating system's or OpenSSL's words)."""

    def __init__(self, field: str, reason: str) -> None:
        self.field = field
        self.reason = reason
        super().__init__(f"{field}: {reason}")


def build_tls_context(tls: TLSConfig | None, enable_https: bool) -> ssl.SSLContext | None:
    """The context an extender's HTTPS calls use (None: plain HTTP with no TLS settings);
    raises :class:`TLSSettingError` for a file that cannot be read or data that is not PEM."""
    has_ca = tls is not None and bool(tls.ca_file or tls.ca_data)
    insecure = (tls is not None and tls.insecure) or (enable_https and not has_ca)
    if tls is None and not insecure:
        return None
    context = _trusting_context(tls) if tls is not None and has_ca else \
        ssl.create_default_context()
    if tls is not None and (tls.cert_data or tls.cert_file or tls.key_data or tls.key_file):
        _load_client_certificate(context, tls)
    if insecure:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    return context


def _reason(exc: Exception) -> str:
    if isinstance(exc, OSError) and not isinstance(exc, ssl.SSLError) and exc.strerror:
        return exc.strerror
    return str(exc)


def _trusting_context(tls: TLSConfig) -> ssl.SSLContext:
    field = "caData" if tls.ca_data else "caFile"
    try:
        if tls.ca_data:
            return ssl.create_default_context(cadata=tls.ca_data.decode())
        return ssl.create_default_context(cafile=tls.ca_file)
    except (OSError, ValueError) as exc:  # ssl.SSLError is an OSError
        raise TLSSettingError(field, f"cannot load the CA certificates: {_reason(exc)}"
                              ) from None


def _read(data: bytes, file: str, file_field: str) -> bytes:
    if data:
        return data
    if not file:
        return b""
    try:
        return Path(file).read_bytes()
    except OSError as exc:
        raise TLSSettingError(file_field, f"cannot read {file}: {_reason(exc)}") from None


def _load_client_certificate(context: ssl.SSLContext, tls: TLSConfig) -> None:
    cert = _read(tls.cert_data, tls.cert_file, "certFile")
    key = _read(tls.key_data, tls.key_file, "keyFile")
    cert_field = "certData" if tls.cert_data else "certFile"
    if not cert or not key:
        raise TLSSettingError(cert_field if not cert else "keyFile",
                              "a client certificate needs both a certificate and a key")
    with tempfile.TemporaryDirectory() as directory:  # ssl reads certificates from files
        cert_path, key_path = Path(directory, "cert.pem"), Path(directory, "key.pem")
        cert_path.write_bytes(cert)
        key_path.write_bytes(key)
        try:
            context.load_cert_chain(cert_path, key_path)
        except (OSError, ValueError) as exc:
            raise TLSSettingError(cert_field, "cannot load the client certificate and key "
                                  f"as PEM: {_reason(exc)}") from None
