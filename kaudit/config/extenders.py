"""The ``extenders`` of a KubeSchedulerConfiguration: decoded, validated and ordered.

Mirrors kube-scheduler v1.34:

* the types, ``Extender``, ``ExtenderManagedResource`` and ``ExtenderTLSConfig``
  (``staging/src/k8s.io/kube-scheduler/config/v1/types.go``), decoded strictly;
* no defaulting in the configuration (``apis/config/v1/defaults.go`` has none): an
  ``httpTimeout`` of zero becomes 5 s when the extender is built (``pkg/scheduler/
  extender.go``, ``DefaultExtenderTimeout``);
* ``validateExtenders`` (``apis/config/validation/validation.go``): a prioritizing extender
  needs a positive weight, at most one extender binds, managed resource names are extended
  resource names and unique across all extenders, with upstream's messages;
* ``buildExtenders`` (``pkg/scheduler/scheduler.go``): ignorable extenders go after the
  others, and resources an extender manages with ``ignoredByScheduler`` replace
  NodeResourcesFit's ``ignoredResources`` in every profile.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from typing import Any

from kaudit.config.duration import format_duration, parse_duration
from kaudit.config.extender_tls import TLSSettingError, build_tls_context
from kaudit.config.fielderrors import (
    NO_VALUE,
    FieldError,
    GoNamedString,
    child,
    index,
    invalid,
    required,
)
from kaudit.config.schema import ListOf, Obj
from kaudit.k8s.labels import is_qualified_name

#: ``DefaultExtenderTimeout``: the timeout of an extender whose ``httpTimeout`` is zero.
DEFAULT_TIMEOUT_NS = 5_000_000_000
#: ``extenderv1.MaxExtenderPriority``: the top of the scale extender scores are given on.
MAX_EXTENDER_PRIORITY = 10

_TLS = Obj({"insecure": "bool", "serverName": "string", "certFile": "string",
            "keyFile": "string", "caFile": "string", "certData": "bytes",
            "keyData": "bytes", "caData": "bytes"})
EXTENDER = Obj({
    "urlPrefix": "string", "filterVerb": "string", "preemptVerb": "string",
    "prioritizeVerb": "string", "weight": "int64", "bindVerb": "string",
    "enableHTTPS": "bool", "tlsConfig": _TLS, "httpTimeout": "duration",
    "nodeCacheCapable": "bool",
    "managedResources": ListOf(Obj({"name": "string", "ignoredByScheduler": "bool"})),
    "ignorable": "bool",
})


@dataclass(frozen=True)
class ManagedResource:
    name: str
    ignored_by_scheduler: bool = False


@dataclass(frozen=True)
class TLSConfig:
    insecure: bool = False
    server_name: str = ""
    cert_file: str = ""
    key_file: str = ""
    ca_file: str = ""
    cert_data: bytes = b""
    key_data: bytes = b""
    ca_data: bytes = b""


@dataclass(frozen=True)
class ExtenderConfig:
    """One scheduler extender as configured (``origin``: its path in the file)."""

    url_prefix: str = ""
    filter_verb: str = ""
    preempt_verb: str = ""
    prioritize_verb: str = ""
    weight: int = 0
    bind_verb: str = ""
    enable_https: bool = False
    tls_config: TLSConfig | None = None
    http_timeout_ns: int = 0
    node_cache_capable: bool = False
    managed_resources: tuple[ManagedResource, ...] = ()
    ignorable: bool = False
    origin: str = ""

    @property
    def name(self) -> str:
        """``HTTPExtender.Name()``: the URL prefix as configured."""
        return self.url_prefix

    @property
    def timeout_ns(self) -> int:
        """The request timeout: ``httpTimeout``, 5 s when zero; none when negative."""
        return self.http_timeout_ns or DEFAULT_TIMEOUT_NS

    @property
    def is_filter(self) -> bool:
        return bool(self.filter_verb)

    @property
    def is_prioritizer(self) -> bool:
        return bool(self.prioritize_verb)

    @property
    def is_binder(self) -> bool:
        return bool(self.bind_verb)

    @property
    def supports_preemption(self) -> bool:
        return bool(self.preempt_verb)

    def to_dict(self) -> dict[str, Any]:
        """The extender as a v1 configuration object (``kaudit config show``)."""
        out: dict[str, Any] = {"urlPrefix": self.url_prefix}
        for key, value in (("filterVerb", self.filter_verb),
                           ("preemptVerb", self.preempt_verb),
                           ("prioritizeVerb", self.prioritize_verb),
                           ("weight", self.weight), ("bindVerb", self.bind_verb),
                           ("enableHTTPS", self.enable_https),
                           ("nodeCacheCapable", self.node_cache_capable),
                           ("ignorable", self.ignorable)):
            if value:
                out[key] = value
        if self.tls_config is not None:
            tls = self.tls_config
            out["tlsConfig"] = {k: v for k, v in (
                ("insecure", tls.insecure), ("serverName", tls.server_name),
                ("certFile", tls.cert_file), ("keyFile", tls.key_file),
                ("caFile", tls.ca_file),
                ("certData", base64.b64encode(tls.cert_data).decode()),
                ("keyData", base64.b64encode(tls.key_data).decode()),
                ("caData", base64.b64encode(tls.ca_data).decode())) if v}
        out["httpTimeout"] = format_duration(self.http_timeout_ns)
        if self.managed_resources:
            out["managedResources"] = [
                {"name": r.name, **({"ignoredByScheduler": True}
                                    if r.ignored_by_scheduler else {})}
                for r in self.managed_resources]
        return out


def decode_bytes(value: str) -> bytes:
    """A Go ``[]byte`` field's JSON form: standard base64; raises ValueError."""
    try:
        return base64.b64decode(value, validate=True)
    except binascii.Error as exc:
        raise ValueError(f"illegal base64 data: {exc}") from None


def decode_extenders(raw: list[dict[str, Any]], path: str = "extenders"
                     ) -> tuple[ExtenderConfig, ...]:
    """The extenders of a configuration already checked against :data:`EXTENDER`."""
    extenders = []
    for i, item in enumerate(raw):
        tls_raw = item.get("tlsConfig")
        tls = None
        if tls_raw is not None:
            tls = TLSConfig(
                insecure=bool(tls_raw.get("insecure")),
                server_name=tls_raw.get("serverName") or "",
                cert_file=tls_raw.get("certFile") or "", key_file=tls_raw.get("keyFile") or "",
                ca_file=tls_raw.get("caFile") or "",
                cert_data=decode_bytes(tls_raw.get("certData") or ""),
                key_data=decode_bytes(tls_raw.get("keyData") or ""),
                ca_data=decode_bytes(tls_raw.get("caData") or ""))
        timeout = item.get("httpTimeout")
        extenders.append(ExtenderConfig(
            url_prefix=item.get("urlPrefix") or "",
            filter_verb=item.get("filterVerb") or "",
            preempt_verb=item.get("preemptVerb") or "",
            prioritize_verb=item.get("prioritizeVerb") or "",
            weight=int(item.get("weight") or 0),
            bind_verb=item.get("bindVerb") or "",
            enable_https=bool(item.get("enableHTTPS")),
            tls_config=tls,
            http_timeout_ns=parse_duration(timeout) if timeout else 0,
            node_cache_capable=bool(item.get("nodeCacheCapable")),
            managed_resources=tuple(
                ManagedResource(r.get("name") or "", bool(r.get("ignoredByScheduler")))
                for r in item.get("managedResources") or []),
            ignorable=bool(item.get("ignorable")),
            origin=index(path, i)))
    return tuple(extenders)


def is_extended_resource_name(name: str) -> bool:
    """``v1helper.IsExtendedResourceName``: a qualified name outside ``kubernetes.io/``
    with a domain, and not a ``requests.`` quota name."""
    if "/" not in name or "kubernetes.io/" in name or name.startswith("requests."):
        return False
    return not is_qualified_name("requests." + name)


def tls_errors(tls: TLSConfig, path: str) -> list[FieldError]:
    """The TLS settings client-go's transport (``TLSConfigFor``, which ``NewHTTPExtender``
    calls when the scheduler starts) refuses: a CA with ``insecure``; and a client certificate
    without its key or a key without its certificate (client-go would silently send neither;
    kaudit refuses the half-configured pair); and, as ``TLSConfigFor`` loads them, a CA or
    client certificate file that cannot be read or data that is not PEM."""
    errors: list[FieldError] = []
    if tls.insecure and (tls.ca_file or tls.ca_data):
        errors.append(invalid(child(path, "insecure"), True, "specifying a root certificates "
                              "file with the insecure flag is not allowed"))
    has_cert, has_key = bool(tls.cert_file or tls.cert_data), bool(tls.key_file or tls.key_data)
    if has_cert != has_key:
        missing = "keyFile" if has_cert else "certFile"
        errors.append(required(child(path, missing), "a client certificate needs both a "
                               "certificate (certFile or certData) and a key (keyFile or "
                               "keyData)"))
    if not errors:
        errors += _loading_errors(tls, path)
    return errors


def _loading_errors(tls: TLSConfig, path: str) -> list[FieldError]:
    """The CA and client certificate loaded as the transport loads them (client-go reads the
    files and parses the PEM when the scheduler starts)."""
    try:
        build_tls_context(tls, enable_https=False)
    except TLSSettingError as exc:
        files = {"caFile": tls.ca_file, "certFile": tls.cert_file, "keyFile": tls.key_file}
        return [invalid(child(path, exc.field), files.get(exc.field, NO_VALUE), exc.reason)]
    return []


def validate_extenders(extenders: tuple[ExtenderConfig, ...],
                       path: str = "extenders") -> list[FieldError]:
    """``validateExtenders``, errors in upstream's order."""
    errors: list[FieldError] = []
    binders = 0
    managed: set[str] = set()
    for i, extender in enumerate(extenders):
        at = index(path, i)
        if extender.prioritize_verb and extender.weight <= 0:
            errors.append(invalid(child(at, "weight"), extender.weight,
                                  "must have a positive weight applied to it"))
        if extender.bind_verb:
            binders += 1
        if extender.tls_config is not None:
            errors += tls_errors(extender.tls_config, child(at, "tlsConfig"))
        for j, resource in enumerate(extender.managed_resources):
            name_path = child(index(child(at, "managedResources"), j), "name")
            qualified = is_qualified_name(resource.name)
            if qualified:  # a v1.ResourceName prints as json.Marshal writes it
                errors.extend(invalid(name_path, GoNamedString(resource.name), message)
                              for message in qualified)
            elif not is_extended_resource_name(resource.name):
                errors.append(invalid(name_path, resource.name,
                                      "is an invalid extended resource name"))
            if resource.name in managed:
                errors.append(invalid(name_path, resource.name,
                                      "duplicate extender managed resource name"))
            managed.add(resource.name)
    if binders > 1:
        errors.append(invalid(path, f"found {binders} extenders implementing bind",
                              "only one extender can implement bind"))
    return errors


def in_call_order(extenders: tuple[ExtenderConfig, ...]) -> tuple[ExtenderConfig, ...]:
    """``buildExtenders``: the extenders as the scheduler calls them, ignorable ones last."""
    return (tuple(e for e in extenders if not e.ignorable)
            + tuple(e for e in extenders if e.ignorable))


def ignored_resources(extenders: tuple[ExtenderConfig, ...]) -> list[str]:
    """Resources some extender manages with ``ignoredByScheduler``, in configuration order."""
    return [r.name for e in extenders for r in e.managed_resources if r.ignored_by_scheduler]
