"""Start and stop a real Kubernetes control plane on loopback: etcd, kube-apiserver,
kube-controller-manager, kube-scheduler and KWOK, built by :mod:`benchmarks.realcluster.build`.

Every component listens on 127.0.0.1 on a port chosen at run time, authenticates with its own
client certificate (:mod:`benchmarks.realcluster.certs`) and logs to ``<workdir>/logs/``. The
API server authorises with ``Node,RBAC`` and writes its audit log (JSON lines) under the
policy ``docs/audit-policy.md`` recommends, read from that document so the two never drift.
kube-scheduler runs with the ``KubeSchedulerConfiguration`` file given (the same file is
given to kaudit), its client's QPS raised so the API client is not what limits a large run.

Flags follow kubeadm's static pods (``cmd/kubeadm/app/phases/controlplane/manifests.go``),
minus what needs a real network: no node IPAM, service load balancers or cloud controllers.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from benchmarks.realcluster import kwok
from benchmarks.realcluster.certs import Pki, kubeconfig, make_pki

DOCS = Path(__file__).resolve().parents[2] / "docs"
READY_TIMEOUT = 90.0
STOP_TIMEOUT = 20.0
#: The scheduler's API client: upstream's default (50/100) would make the client, not the
#: scheduler, the limit of a 10,000-pod run.
SCHEDULER_QPS = 5000
SCHEDULER_BURST = 5000


#: The components that write to the API on their own (the API server and etcd only answer).
WRITERS = ("kube-controller-manager", "kube-scheduler", "kwok")


class ControlPlaneError(RuntimeError):
    """A component did not start or stopped; the message quotes the end of its log."""


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def audit_policy() -> str:
    """The audit policy of ``docs/audit-policy.md`` (its first YAML block)."""
    text = (DOCS / "audit-policy.md").read_text()
    match = re.search(r"```yaml\n(.*?)```", text, re.S)
    if match is None:
        raise ControlPlaneError("docs/audit-policy.md has no ```yaml block")
    return match.group(1)


def scheduler_configuration(kubeconfig_path: Path, profile_yaml: str = "") -> str:
    """A ``KubeSchedulerConfiguration`` for the harness: its client connection, no leader
    election, and ``profile_yaml`` (the ``profiles:`` list and anything else) appended."""
    return ("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
            f"clientConnection:\n  kubeconfig: {kubeconfig_path}\n"
            f"  qps: {SCHEDULER_QPS}\n  burst: {SCHEDULER_BURST}\n"
            "leaderElection:\n  leaderElect: false\n" + profile_yaml)


@dataclass
class Component:
    """A running program: its command, log file and process."""

    name: str
    command: list[str]
    log_path: Path
    process: subprocess.Popen[bytes] | None = None
    _log: IO[bytes] | None = None

    def start(self) -> None:
        self._log = open(self.log_path, "ab")  # noqa: SIM115 - held until stop()
        self.process = subprocess.Popen(self.command, stdout=self._log, stderr=subprocess.STDOUT,
                                        stdin=subprocess.DEVNULL, start_new_session=True)

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def log_tail(self, lines: int = 25) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def send(self, number: signal.Signals) -> None:
        """Send ``number`` to the program's process group."""
        if self.process is not None and self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, number)

    def stop(self, kill: bool = False) -> None:
        if self.process is not None and self.process.poll() is None:
            self.send(signal.SIGKILL if kill else signal.SIGTERM)
            self.send(signal.SIGCONT)  # a paused program acts on SIGTERM once continued
            try:
                self.process.wait(STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(STOP_TIMEOUT)
        if self._log is not None:
            self._log.close()
            self._log = None

    def peak_rss_kib(self) -> int:
        """The process's peak resident memory (``VmHWM``), or 0 when it is gone."""
        if not self.running() or self.process is None:
            return 0
        try:
            status = Path(f"/proc/{self.process.pid}/status").read_text()
        except OSError:
            return 0
        match = re.search(r"VmHWM:\s+(\d+)", status)
        return int(match.group(1)) if match else 0


def node_monitor_grace_seconds(nodes: int) -> int:
    """The node monitor grace period for ``nodes`` KWOK nodes: upstream's 50 s up to 1,000
    nodes, 50 s more per further 1,000."""
    return 50 * max(1, -(-nodes // 1000))


@dataclass
class ControlPlane:
    """A control plane in ``workdir``. :meth:`start` brings every component up and waits until
    the API server is ready and the scheduler and controller manager are healthy."""

    workdir: Path
    binaries: dict[str, Path]
    scheduler_profile_yaml: str = ""
    node_lease_seconds: int = 40
    #: How long the node lifecycle controller waits for a node's lease before it marks the
    #: node unreachable (kube-controller-manager's default is 50 s). KWOK renews thousands of
    #: leases on the same cores as the control plane; at 5,000 nodes on two cores renewals
    #: fall behind and nodes flap between Ready and unreachable, which no real cluster of
    #: healthy nodes does. :func:`node_monitor_grace_seconds` scales it with the nodes.
    node_monitor_grace_seconds: int = 50
    components: dict[str, Component] = field(default_factory=dict)
    ports: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        (self.workdir / "logs").mkdir(exist_ok=True)
        self.pki: Pki = make_pki(self.workdir / "pki")
        self.ports = {name: free_port() for name in
                      ("etcd", "etcd-peer", "apiserver", "scheduler", "controller-manager",
                       "kwok")}
        self.server = f"https://127.0.0.1:{self.ports['apiserver']}"
        self.kubeconfigs = {client: kubeconfig(self.pki, self.server, client,
                                               self.workdir / f"{client}.kubeconfig")
                            for client in ("admin", "kwok", "recorder", "scheduler",
                                           "controller-manager")}
        self.audit_log = self.workdir / "audit.log"
        self.scheduler_config = self.workdir / "scheduler-config.yaml"
        self.scheduler_config.write_text(scheduler_configuration(
            self.kubeconfigs["scheduler"], self.scheduler_profile_yaml))
        (self.workdir / "audit-policy.yaml").write_text(audit_policy())
        kwok.write_stages(self.workdir / "kwok-stages.yaml")
        self._define()

    # -- commands ----------------------------------------------------------------------
    def _define(self) -> None:
        pki, ports, logs = self.pki, self.ports, self.workdir / "logs"
        def add(name: str, command: list[str]) -> None:
            self.components[name] = Component(name, command, logs / f"{name}.log")

        add("etcd", [str(self.binaries["etcd"]), f"--data-dir={self.workdir / 'etcd'}",
                     f"--listen-client-url=http://127.0.0.1:{ports['etcd']}",
                     f"--listen-peer-url=http://127.0.0.1:{ports['etcd-peer']}"])
        add("kube-apiserver", [
            str(self.binaries["kube-apiserver"]),
            f"--etcd-servers=http://127.0.0.1:{ports['etcd']}",
            "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
            f"--secure-port={ports['apiserver']}", f"--cert-dir={self.workdir / 'pki'}",
            f"--tls-cert-file={pki.crt('apiserver')}",
            f"--tls-private-key-file={pki.key('apiserver')}",
            f"--client-ca-file={pki.ca}",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            f"--service-account-key-file={pki.sa_pub}",
            f"--service-account-signing-key-file={pki.sa_key}",
            "--service-cluster-ip-range=10.96.0.0/16",
            "--authorization-mode=Node,RBAC",
            # One client, the harness, drives the server; fairness queues would only add delay.
            "--enable-priority-and-fairness=false", "--max-requests-inflight=2000",
            "--max-mutating-requests-inflight=1000",
            "--endpoint-reconciler-type=none", "--profiling=false",
            f"--audit-policy-file={self.workdir / 'audit-policy.yaml'}",
            f"--audit-log-path={self.audit_log}", "--audit-log-format=json",
            "--audit-log-mode=blocking", "--audit-log-maxsize=0",
            "--v=0"])
        add("kube-controller-manager", [
            str(self.binaries["kube-controller-manager"]),
            f"--kubeconfig={self.kubeconfigs['controller-manager']}",
            f"--authentication-kubeconfig={self.kubeconfigs['controller-manager']}",
            f"--authorization-kubeconfig={self.kubeconfigs['controller-manager']}",
            "--bind-address=127.0.0.1", f"--secure-port={ports['controller-manager']}",
            f"--cert-dir={self.workdir / 'pki' / 'kcm'}",
            "--controllers=*,-nodeipam,-service-lb-controller,-cloud-node-lifecycle",
            f"--service-account-private-key-file={pki.sa_key}", f"--root-ca-file={pki.ca}",
            "--use-service-account-credentials=true", "--leader-elect=false",
            "--kube-api-qps=2000", "--kube-api-burst=2000",
            # Nodes are registered tainted not-ready (admission TaintNodesByCondition); check
            # them every second, not every 5 s, so a new KWOK node is usable at once.
            "--node-monitor-period=1s",
            f"--node-monitor-grace-period={self.node_monitor_grace_seconds}s",
            "--concurrent-deployment-syncs=20", "--concurrent-replicaset-syncs=20",
            "--concurrent-job-syncs=20", "--concurrent-daemonset-syncs=10",
            "--v=0"])
        add("kube-scheduler", [
            str(self.binaries["kube-scheduler"]), f"--config={self.scheduler_config}",
            f"--authentication-kubeconfig={self.kubeconfigs['scheduler']}",
            f"--authorization-kubeconfig={self.kubeconfigs['scheduler']}",
            "--bind-address=127.0.0.1", f"--secure-port={ports['scheduler']}",
            # -v=3 logs each scheduling cycle as it starts ("Attempting to schedule pod"): the
            # evidence of when the real scheduler decided, beside when the API recorded it.
            f"--cert-dir={self.workdir / 'pki' / 'scheduler'}", "--v=3"])
        add("kwok", [
            str(self.binaries["kwok"]), f"--kubeconfig={self.kubeconfigs['kwok']}",
            f"--config={self.workdir / 'kwok-stages.yaml'}",
            "--manage-all-nodes=false",
            f"--manage-nodes-with-annotation-selector={kwok.NODE_ANNOTATION}=fake",
            f"--node-lease-duration-seconds={self.node_lease_seconds}",
            "--cidr=10.244.0.0/16", "--node-ip=127.0.0.1",
            f"--server-address=127.0.0.1:{ports['kwok']}"])

    # -- lifecycle ---------------------------------------------------------------------
    def start(self) -> ControlPlane:
        """Start every component in dependency order; raise :class:`ControlPlaneError` with
        the component's log when one does not become healthy."""
        try:
            self._start("etcd", f"http://127.0.0.1:{self.ports['etcd']}/health", tls=False)
            self._start("kube-apiserver", f"{self.server}/readyz")
            self._start("kube-controller-manager",
                        f"https://127.0.0.1:{self.ports['controller-manager']}/healthz")
            self._start("kube-scheduler",
                        f"https://127.0.0.1:{self.ports['scheduler']}/healthz")
            self._start("kwok", f"http://127.0.0.1:{self.ports['kwok']}/healthz", tls=False)
        except BaseException:
            self.stop()
            raise
        return self

    def _start(self, name: str, health_url: str, tls: bool = True) -> None:
        component = self.components[name]
        component.start()
        self.wait_healthy(name, health_url, tls)

    def wait_healthy(self, name: str, url: str, tls: bool = True,
                     timeout: float = READY_TIMEOUT) -> None:
        component = self.components[name]
        context = self._admin_tls() if tls else None
        deadline = time.monotonic() + timeout
        while True:
            if not component.running():
                raise ControlPlaneError(f"{name} exited while starting:\n{component.log_tail()}")
            try:
                with urllib.request.urlopen(url, timeout=5, context=context) as answer:
                    if answer.status == 200:
                        return
            except (urllib.error.URLError, OSError, ssl.SSLError):
                pass
            if time.monotonic() > deadline:
                raise ControlPlaneError(
                    f"{name} was not healthy at {url} within {timeout:.0f}s:\n"
                    f"{component.log_tail()}")
            time.sleep(0.2)

    def _admin_tls(self) -> ssl.SSLContext:
        # Components' own serving certificates are self-signed: their health is checked
        # without verifying them; the API server's is verified against the cluster CA.
        context = ssl.create_default_context(cafile=str(self.pki.ca))
        context.load_cert_chain(str(self.pki.crt("admin")), str(self.pki.key("admin")))
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        return context

    def restart_apiserver(self, down_seconds: float = 2.0) -> None:
        """Stop kube-apiserver, wait ``down_seconds``, start it again and wait until ready."""
        component = self.components["kube-apiserver"]
        component.stop()
        time.sleep(down_seconds)
        self._start("kube-apiserver", f"{self.server}/readyz")

    def pause_writers(self, settle_seconds: float = 2.0) -> None:
        """Pause every component that writes to the API on its own (the controller manager,
        the scheduler and KWOK), then wait ``settle_seconds`` for the requests in flight and
        their watch events. A recorder stopped afterwards has seen everything the audit log
        holds up to that moment: the end of a run is then one instant in both traces, not a
        race between the writers and the recorder closing its watches.
        :meth:`resume_writers` undoes it; :meth:`stop` stops paused components too."""
        for name in WRITERS:
            self.components[name].send(signal.SIGSTOP)
        time.sleep(settle_seconds)

    def resume_writers(self) -> None:
        """Continue the components :meth:`pause_writers` paused."""
        for name in WRITERS:
            self.components[name].send(signal.SIGCONT)

    def check_running(self) -> None:
        """Raise :class:`ControlPlaneError` when a component has exited."""
        for component in self.components.values():
            if component.process is not None and not component.running():
                raise ControlPlaneError(
                    f"{component.name} exited (status {component.process.returncode}):\n"
                    f"{component.log_tail()}")

    def audit_logs(self) -> list[Path]:
        """The audit log's files: the rotated ones (the API server rotates at 100 MB, its log
        library's default) and the current one."""
        pattern = f"{self.audit_log.stem}-*{self.audit_log.suffix}"
        rotated = sorted(self.audit_log.parent.glob(pattern))
        return [*rotated, self.audit_log]

    def memory_kib(self) -> dict[str, int]:
        """Peak resident memory of each running component."""
        return {name: c.peak_rss_kib() for name, c in self.components.items()}

    def stop(self) -> None:
        """Stop every component, the last started first."""
        for component in reversed(list(self.components.values())):
            component.stop()

    def __enter__(self) -> ControlPlane:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
