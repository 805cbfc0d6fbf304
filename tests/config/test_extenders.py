"""The ``extenders`` section: strict decoding, upstream's validation and messages
(``apis/config/validation/validation_test.go``), the call order and the resources
NodeResourcesFit then ignores (``pkg/scheduler/scheduler.go`` ``buildExtenders``)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from kaudit.config import SchedulerConfiguration
from kaudit.config.extenders import is_extended_resource_name
from kaudit.errors import ConfigError
from kaudit.scheduler.build import build_scheduler, load


@pytest.mark.parametrize(("text", "message"), [
    ("extenders: [{urlPrefix: 'http://x', prioritizeVerb: prioritize, weight: -2}]\n",
     "config.yaml: extenders[0].weight: Invalid value: -2: must have a positive weight "
     "applied to it"),
    ("extenders: [{urlPrefix: 'http://x', prioritizeVerb: prioritize}]\n",
     "config.yaml: extenders[0].weight: Invalid value: 0: must have a positive weight "
     "applied to it"),
    ("extenders: [{urlPrefix: 'http://a', bindVerb: bind}, {urlPrefix: 'http://b', "
     "bindVerb: bind}]\n",
     'config.yaml: extenders: Invalid value: "found 2 extenders implementing bind": only one '
     "extender can implement bind"),
    ("extenders: [{urlPrefix: 'http://a', managedResources: [{name: foo.com/bar}]}, "
     "{urlPrefix: 'http://b', managedResources: [{name: foo.com/bar}]}]\n",
     'config.yaml: extenders[1].managedResources[0].name: Invalid value: "foo.com/bar": '
     "duplicate extender managed resource name"),
    ("extenders: [{urlPrefix: 'http://a', managedResources: [{name: kubernetes.io/foo}]}]\n",
     'config.yaml: extenders[0].managedResources[0].name: Invalid value: "kubernetes.io/foo": '
     "is an invalid extended resource name"),
    ("extenders: [{urlPrefix: 'http://a', managedResources: [{name: a/b/c}]}]\n",
     'config.yaml: extenders[0].managedResources[0].name: Invalid value: "a/b/c": a qualified '

     "name must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
     "with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used "
     "for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS "
     "subdomain prefix and '/' (e.g. 'example.com/MyName')"),
    # a v1.ResourceName is a named string type: field.Error prints it with json.Marshal
    # (checked against apimachinery v0.34.2: "a/b/c\u003c"), not with %q
    ("extenders: [{urlPrefix: 'http://a', managedResources: [{name: 'a/b/c<'}]}]\n",
     'config.yaml: extenders[0].managedResources[0].name: Invalid value: "a/b/c\\u003c": a '
     "qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start "
     "and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', "
     "regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an "
     "optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"),
    ("extenders: [{urlPrefix: 'http://a', httpTimeout: 5 seconds}]\n",
     'config.yaml: extenders[0].httpTimeout: Invalid value: "5 seconds": time: unknown unit '
     '" seconds" in duration "5 seconds"'),
    ("extenders: [{urlPrefix: 'http://a', tlsConfig: {caData: '%%%'}}]\n",
     'config.yaml: extenders[0].tlsConfig.caData: Invalid value: "%%%": illegal base64 data: '),
    ("extenders: [{urlPrefix: 'http://a', filterVerbs: filter}]\n",
     'config.yaml: extenders[0].filterVerbs: Forbidden: unknown field "filterVerbs"'),
])
def test_invalid_extenders(text: str, message: str, config_error: Callable[..., str]) -> None:
    assert config_error(text).startswith(message)


def test_duplicates_are_found_in_one_extender_too(config_error: Callable[..., str]) -> None:
    """``foo`` twice: invalid as an extended resource name, and a duplicate."""
    assert config_error(
        "extenders: [{urlPrefix: 'http://a', managedResources: [{name: foo}, {name: foo}]}]\n"
    ).splitlines() == [
        'config.yaml: extenders[0].managedResources[0].name: Invalid value: "foo": is an '
        "invalid extended resource name",
        'config.yaml: extenders[0].managedResources[1].name: Invalid value: "foo": is an '
        "invalid extended resource name",
        'config.yaml: extenders[0].managedResources[1].name: Invalid value: "foo": duplicate '
        "extender managed resource name"]


@pytest.mark.parametrize(("name", "extended"), [
    ("example.com/gpu", True), ("foo", False), ("kubernetes.io/foo", False),
    ("requests.example.com/gpu", False), ("example.com/with space", False),
    ("nvidia.com/gpu", True)])
def test_extended_resource_names(name: str, extended: bool) -> None:
    assert is_extended_resource_name(name) is extended


def test_extenders_are_called_ignorable_last_and_their_ignored_resources_reach_fit(
        load_yaml: Callable[..., SchedulerConfiguration]) -> None:
    config = load_yaml("""
        extenders:
        - {urlPrefix: 'http://ignorable', filterVerb: filter, ignorable: true}
        - urlPrefix: 'http://gpu'
          prioritizeVerb: prioritize
          weight: 3
          httpTimeout: 1m30s
          nodeCacheCapable: true
          managedResources: [{name: example.com/gpu, ignoredByScheduler: true},
                             {name: example.com/fpga}]
        profiles:
        - schedulerName: a
        - schedulerName: b
          pluginConfig:
          - name: NodeResourcesFit
            args: {ignoredResources: [example.com/other]}
        """)
    assert [e.url_prefix for e in config.extenders] == ["http://gpu", "http://ignorable"]
    gpu, ignorable = config.extenders
    assert (gpu.weight, gpu.timeout_ns, gpu.node_cache_capable) == (3, 90 * 10**9, True)
    assert (ignorable.timeout_ns, ignorable.is_filter, ignorable.is_prioritizer) == (
        5 * 10**9, True, False)
    for profile in ("a", "b"):
        fit = config.profiles[profile].plugin_args["NodeResourcesFit"]
        assert fit["ignoredResources"] == ["example.com/gpu"]
    shown = config.to_dict()["extenders"]
    assert shown[0] == {"urlPrefix": "http://gpu", "prioritizeVerb": "prioritize", "weight": 3,
                        "nodeCacheCapable": True, "httpTimeout": "1m30s",
                        "managedResources": [{"name": "example.com/gpu",
                                              "ignoredByScheduler": True},
                                             {"name": "example.com/fpga"}]}
    assert shown[1]["httpTimeout"] == "0s" and shown[1]["ignorable"] is True


def test_ignored_resources_need_node_resources_fit(config_error: Callable[..., str]) -> None:
    message = config_error("""
        extenders:
        - urlPrefix: 'http://gpu'
          managedResources: [{name: example.com/gpu, ignoredByScheduler: true}]
        profiles:
        - plugins: {multiPoint: {disabled: [{name: NodeResourcesFit}]}}
        """)
    assert message == ("config.yaml: profiles[0]: can't find NodeResourcesFitArgs in plugin "
                       "config (extenders manage resources with ignoredByScheduler)")


def test_the_scheduler_calls_extenders_in_upstream_order(
        load_yaml: Callable[..., SchedulerConfiguration]) -> None:
    config = load_yaml("""
        extenders:
        - {urlPrefix: 'http://first', filterVerb: filter, ignorable: true}
        - {urlPrefix: 'http://second', prioritizeVerb: prioritize, weight: 3}
        """)
    scheduler = build_scheduler(config, load()[1])
    assert [e.name for e in scheduler.extenders] == ["http://second", "http://first"]
    handle = scheduler.frameworks["default-scheduler"].instances["DefaultPreemption"].handle
    assert [e.name for e in handle.extenders] == ["http://second", "http://first"]


def test_an_unusable_tls_configuration_is_a_configuration_error(
        load_yaml: Callable[..., SchedulerConfiguration]) -> None:
    """Refused when the configuration is validated (``config show`` refuses it too), not
    first when the scheduler is built."""
    with pytest.raises(ConfigError, match=r"extenders\[0\]\.tlsConfig\.insecure: Invalid value: "
                                          "true: specifying a root certificates file with the "
                                          "insecure flag is not allowed"):
        load_yaml("""
            extenders:
            - urlPrefix: 'https://gpu'
              filterVerb: filter
              tlsConfig: {insecure: true, caFile: /nonexistent/ca.pem}
            """)


def test_extenders_ignored_resources_replace_invalid_ones_before_they_are_checked(
        load_yaml: Callable[..., SchedulerConfiguration]) -> None:
    config = load_yaml("""
        extenders:
        - urlPrefix: 'http://gpu'
          managedResources: [{name: example.com/gpu, ignoredByScheduler: true}]
        profiles:
        - pluginConfig:
          - name: NodeResourcesFit
            args: {ignoredResources: ["not a resource name!"]}
        """)
    fit = config.profiles["default-scheduler"].plugin_args["NodeResourcesFit"]
    assert fit["ignoredResources"] == ["example.com/gpu"]
