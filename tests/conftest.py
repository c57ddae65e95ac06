from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
RECORDS = Path(__file__).resolve().parent / "records"


@pytest.fixture(scope="session")
def shared_examples() -> Path:
    path = SHARED / "examples"
    if not path.is_dir():
        pytest.fail(f"the shared examples are missing: {path} (CI clones the repo beside shared/)")
    return path
