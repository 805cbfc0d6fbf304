"""Certificates and keys of the harness's control plane, made with ``openssl``: a cluster CA,
the API server's serving certificate (for 127.0.0.1 and the names in-cluster clients use), one
client certificate per component with the identity upstream's default RBAC expects
(``system:kube-scheduler``, ``system:kube-controller-manager``; the admin and KWOK are in
``system:masters``), and the service-account signing key pair.

The layout and identities follow kubeadm's (``cmd/kubeadm/app/phases/certs``); EC P-256 keys
keep the whole set under a second to make.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

#: Client identities: file stem -> (common name, organisation or "").
CLIENTS = {
    "admin": ("kaudit-admin", "system:masters"),
    "kwok": ("kaudit-kwok", "system:masters"),
    "recorder": ("kaudit-recorder", "system:masters"),
    "scheduler": ("system:kube-scheduler", ""),
    "controller-manager": ("system:kube-controller-manager", ""),
}
VALID_DAYS = 30
SERVING_NAMES = ("DNS:localhost", "DNS:kubernetes", "DNS:kubernetes.default",
                 "DNS:kubernetes.default.svc", "DNS:kubernetes.default.svc.cluster.local",
                 "IP:127.0.0.1", "IP:10.96.0.1")


@dataclass(frozen=True)
class Pki:
    """Where the files are: ``<name>.crt``/``<name>.key`` per identity, ``sa.key``/``sa.pub``."""

    directory: Path

    def crt(self, name: str) -> Path:
        return self.directory / f"{name}.crt"

    def key(self, name: str) -> Path:
        return self.directory / f"{name}.key"

    @property
    def ca(self) -> Path:
        return self.crt("ca")

    @property
    def sa_key(self) -> Path:
        return self.directory / "sa.key"

    @property
    def sa_pub(self) -> Path:
        return self.directory / "sa.pub"


def _openssl(*args: str, cwd: Path) -> None:
    done = subprocess.run(["openssl", *args], cwd=cwd, capture_output=True, text=True,
                          check=False)
    if done.returncode != 0:
        raise RuntimeError(f"openssl {' '.join(args)} failed: {done.stderr.strip()}")


def _key(path: Path) -> None:
    _openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256",
             "-out", path.name, cwd=path.parent)


def _signed(pki: Pki, name: str, subject: str, extensions: str) -> None:
    directory = pki.directory
    _key(pki.key(name))
    ext = directory / f"{name}.ext"
    ext.write_text(extensions)
    _openssl("req", "-new", "-key", pki.key(name).name, "-subj", subject,
             "-out", f"{name}.csr", cwd=directory)
    _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
             "-CAcreateserial", "-days", str(VALID_DAYS), "-extfile", ext.name,
             "-out", pki.crt(name).name, cwd=directory)
    (directory / f"{name}.csr").unlink()
    ext.unlink()


def make_pki(directory: Path) -> Pki:
    """Make every certificate and key in ``directory`` (created if missing)."""
    directory.mkdir(parents=True, exist_ok=True)
    pki = Pki(directory)
    _key(pki.key("ca"))
    _openssl("req", "-x509", "-new", "-key", "ca.key", "-subj", "/CN=kaudit-harness-ca",
             "-days", str(VALID_DAYS), "-addext", "basicConstraints=critical,CA:TRUE",
             "-addext", "keyUsage=critical,keyCertSign,cRLSign,digitalSignature",
             "-out", "ca.crt", cwd=directory)
    _signed(pki, "apiserver", "/CN=kube-apiserver",
            "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\n"
            "extendedKeyUsage=serverAuth\nsubjectAltName=" + ",".join(SERVING_NAMES) + "\n")
    for name, (common, organisation) in CLIENTS.items():
        subject = f"/CN={common}" + (f"/O={organisation}" if organisation else "")
        _signed(pki, name, subject,
                "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\n"
                "extendedKeyUsage=clientAuth\n")
    _key(pki.sa_key)
    _openssl("pkey", "-in", "sa.key", "-pubout", "-out", "sa.pub", cwd=directory)
    return pki


def kubeconfig(pki: Pki, server: str, client: str, path: Path) -> Path:
    """Write a kubeconfig for ``client`` (a name of :data:`CLIENTS`) at ``server``."""
    path.write_text(
        "apiVersion: v1\nkind: Config\n"
        f"clusters:\n- name: harness\n  cluster:\n    server: {server}\n"
        f"    certificate-authority: {pki.ca}\n"
        f"users:\n- name: {client}\n  user:\n    client-certificate: {pki.crt(client)}\n"
        f"    client-key: {pki.key(client)}\n"
        f"contexts:\n- name: harness\n  context:\n    cluster: harness\n    user: {client}\n"
        "current-context: harness\n")
    return path
