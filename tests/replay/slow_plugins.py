"""An out-of-tree plugin that makes one scheduling attempt long, as a costly selector would.

``SlowFilter`` spins (pure Python, busy) in its first Filter call for
``$KAUDIT_TEST_SLOW_FILTER_SECONDS`` (default 3) seconds, after touching the file
``$KAUDIT_TEST_SLOW_FILTER_MARK`` if set, so a test knows the long attempt has begun.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any, ClassVar

from kaudit.framework.plugin import NodeFilterPlugin
from kaudit.framework.status import Status

CONFIG = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
  plugins:
    filter:
      enabled:
      - name: SlowFilter
"""
REFERENCE = "tests.replay.slow_plugins:SlowFilter"


class SlowFilter(NodeFilterPlugin):
    name = "SlowFilter"
    spun: ClassVar[bool] = False

    def filter_node(self, state: Any, pod: Any, node: Any) -> Status:
        if not SlowFilter.spun:
            SlowFilter.spun = True
            mark = os.environ.get("KAUDIT_TEST_SLOW_FILTER_MARK")
            if mark:
                Path(mark).touch()
            deadline = time.monotonic() + float(
                os.environ.get("KAUDIT_TEST_SLOW_FILTER_SECONDS", "3"))
            spins = 0
            while time.monotonic() < deadline:
                spins += 1
        return Status.success()
