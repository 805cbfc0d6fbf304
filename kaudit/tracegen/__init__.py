"""Trace generators: the shipped sample trace, synthetic benchmark traces, object builders."""
