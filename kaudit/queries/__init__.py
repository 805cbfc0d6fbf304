"""The one query layer: every reader of the event log (CLI, JSON API, dashboard) goes here."""
