"""Pod requests as upstream computes them (``resourcehelper.PodRequests``)."""

from __future__ import annotations

from kaudit.model.pod import parse_pod
from kaudit.model.resources import pod_requests, resource_units
from kaudit.tracegen.builders import make_pod

MI = 1024 * 1024


def requests(obj: dict, **kwargs: bool) -> dict[str, int]:
    return resource_units(pod_requests(obj["spec"], **kwargs))


def test_containers_add_up() -> None:
    pod = make_pod("p").req(cpu="500m", memory="1Gi").container("b", "img", cpu="250m").obj()
    assert requests(pod) == {"cpu": 750, "memory": 1024 * MI}


def test_init_containers_take_the_maximum() -> None:
    pod = (make_pod("p").req(cpu="1", memory="1Gi")
           .init_container("setup", "img", cpu="2", memory="512Mi").obj())
    assert requests(pod) == {"cpu": 2000, "memory": 1024 * MI}


def test_sidecars_add_to_containers_and_to_later_init_containers() -> None:
    pod = (make_pod("p").req(cpu="1")
           .init_container("proxy", "img", sidecar=True, cpu="500m")
           .init_container("migrate", "img", cpu="2").obj())
    # containers 1 + sidecar 0.5 = 1.5; the regular init container runs beside the sidecar: 2.5
    assert requests(pod)["cpu"] == 2500
    pod = (make_pod("p").req(cpu="1")
           .init_container("migrate", "img", cpu="1200m")
           .init_container("proxy", "img", sidecar=True, cpu="500m").obj())
    assert requests(pod)["cpu"] == 1500


def test_overhead_and_pod_level_resources() -> None:
    pod = make_pod("p").req(cpu="1", memory="1Gi").obj()
    pod["spec"]["overhead"] = {"cpu": "100m", "memory": "64Mi"}
    assert requests(pod) == {"cpu": 1100, "memory": 1088 * MI}
    pod["spec"]["resources"] = {"requests": {"cpu": "3"}}
    assert requests(pod) == {"cpu": 3100, "memory": 1088 * MI}
    assert requests(pod, pod_level_resources=False)["cpu"] == 1100


def test_non_zero_defaults_apply_to_missing_keys_only() -> None:
    pod = make_pod("p").container("b", "img").obj()  # two containers without requests
    info = parse_pod(pod)
    assert info.requests == {}
    assert (info.non_zero_cpu, info.non_zero_memory) == (200, 400 * MI)
    explicit = parse_pod(make_pod("q").req(cpu="0", memory="0").obj())
    assert (explicit.non_zero_cpu, explicit.non_zero_memory) == (0, 0)


def test_sub_milli_quantities_are_summed_before_rounding() -> None:
    pod = make_pod("p").req(cpu="0.0005").container("b", "img", cpu="0.0005").obj()
    assert requests(pod)["cpu"] == 1


def test_extended_resources_and_hugepages() -> None:
    pod = make_pod("p").extended("nvidia.com/gpu", "2").req(**{"hugepages-2Mi": "4Mi"}).obj()
    assert requests(pod) == {"nvidia.com/gpu": 2, "hugepages-2Mi": 4 * MI}
