"""kaudit's web dashboard (``kaudit serve``): the event log in the browser.

A Flask application factory with one blueprint per area. Every page is a small HTML shell
whose script fetches the page's JSON twin under ``/api/v1/…`` and draws from it, so a page and
its JSON always agree. The dashboard is read-only: its database connections refuse writes.
"""

from kaudit.dashboard.app import create_app

__all__ = ["create_app"]
