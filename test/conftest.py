"""Every test (and every `deplo` it starts) sees no tuning store unless it names one with --db:
the user's default store (~/.cache/deplo/tuning/) must never change what a test compiles."""

import os
import tempfile

os.environ["DEPLO_TUNING_DB"] = os.path.join(tempfile.gettempdir(), f"deplo-tests-{os.getpid()}",
                                             "no-store.sqlite")
