"""What kaudit repeats of Kubernetes' API libraries below ``config`` and ``model``: how field
errors print bad values (:mod:`~kaudit.k8s.values`), label keys, values and selectors as
apimachinery validates them (:mod:`~kaudit.k8s.labels`) and the well-known label names
(:mod:`~kaudit.k8s.well_known`)."""
