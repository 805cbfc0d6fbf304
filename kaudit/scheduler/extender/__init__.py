"""Scheduler extenders (``pkg/scheduler/extender.go``, Kubernetes v1.34): the HTTP client
(``http``), its wire types (``wire``), the calls a scheduling and binding cycle make
(``cycle``) and recorded answers replayed in place of a live extender (``answers``)."""
