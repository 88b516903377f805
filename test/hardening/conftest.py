"""Hypothesis profiles and shared helpers of the hardening tests.

Profiles (chosen with the environment variable ``HYPOTHESIS_PROFILE``):
- ``ci`` (default): few examples, ``derandomize=True`` so every run explores the same
  inputs, no example database (nothing is written into the repository), no deadline
  (the machine is shared and loaded);
- ``long``: many more examples, still no database; run it on demand, e.g.
  ``HYPOTHESIS_PROFILE=long pytest test/hardening``. The seeded fuzz loops scale with
  the same switch (each reads ``HYPOTHESIS_PROFILE``); ``TELAMALLOC_FUZZ_SEED=<n>`` makes
  them explore other inputs.

Hypothesis also keeps caches (constants found in the source, Unicode tables) in its home
directory, by default ``.hypothesis/`` in the working directory, i.e. the repository; it is
moved to a directory under the system's temporary directory.

The profile is registered under the name ``hardening`` and applied by each test with
``@settings(settings.get_profile("hardening"))``, so it never changes the settings of
other test directories that run in the same session.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, settings
from hypothesis.configuration import set_hypothesis_home_dir

set_hypothesis_home_dir(Path(tempfile.gettempdir()) / f"telamalloc-hypothesis-{os.getuid()}")

PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "ci")
if PROFILE not in ("ci", "long"):
    PROFILE = "ci"

_COMMON = dict(
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
    print_blob=True,
)
settings.register_profile("hardening-ci", max_examples=60, derandomize=True, **_COMMON)
settings.register_profile("hardening-long", max_examples=2000, derandomize=False, **_COMMON)
settings.register_profile("hardening", settings.get_profile(f"hardening-{PROFILE}"))
