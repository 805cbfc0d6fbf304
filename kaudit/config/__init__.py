"""kube-scheduler's configuration (``kubescheduler.config.k8s.io/v1``), as of Kubernetes v1.34.

Load a KubeSchedulerConfiguration file (or the built-in defaults) with
:func:`load_configuration`; the result, a :class:`SchedulerConfiguration`, holds each
profile's final, ordered plugin list per extension point, score weights and defaulted
plugin args. Feature gates (:class:`FeatureGates`, :func:`parse_feature_gates`) change
the defaults as they do upstream. Module by module:

* ``decode``, ``schema``, ``args_schema``, ``source``: reading and strict decoding;
* ``defaulting``, ``default_plugins``, ``args_defaults``: ``apis/config/v1`` defaults;
* ``validation``, ``args_validation``, ``nodeselector``, ``labels``: upstream validation;
* ``profiles``: MultiPoint expansion and weights (``framework/runtime/framework.go``);
* ``plugins``: what configuration knows of a plugin (:class:`PluginSpec`, built by the
  scheduler from each plugin class's declarations; configuration imports no plugin);
  ``model``: the result.
"""

from kaudit.config.feature_gates import FeatureGates, parse_feature_gates
from kaudit.config.fielderrors import FieldError
from kaudit.config.load import load_configuration, load_object
from kaudit.config.model import EXTENSION_POINTS, PluginRef, Profile, SchedulerConfiguration
from kaudit.config.plugins import ArgsSpec, PluginSpec, validate_plugin_args

__all__ = [
    "EXTENSION_POINTS",
    "ArgsSpec",
    "FeatureGates",
    "FieldError",
    "PluginRef",
    "PluginSpec",
    "Profile",
    "SchedulerConfiguration",
    "load_configuration",
    "load_object",
    "parse_feature_gates",
    "validate_plugin_args",
]
