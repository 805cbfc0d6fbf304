"""DynamicResources: dynamic resource allocation with structured parameters (see :mod:`.plugin`)."""

from kaudit.plugins.dynamic_resources.plugin import NO_CLAIMS_TO_DEALLOCATE, DynamicResources

__all__ = ["NO_CLAIMS_TO_DEALLOCATE", "DynamicResources"]
