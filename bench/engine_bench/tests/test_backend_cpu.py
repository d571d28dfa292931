"""bench/engine.py's (h) reads the CPU its PostgreSQL backend spends from /proc: the figure grows
with the work the backend does, and is None off PostgreSQL."""
from __future__ import annotations

import pytest
from django.db import connection

from engine_bench.database import backend_cpu

pytestmark = pytest.mark.django_db


def test_the_backend_s_cpu_grows_with_its_work() -> None:
    before = backend_cpu()
    if connection.vendor != "postgresql":
        assert before is None
        return
    assert before is not None and before >= 0
    with connection.cursor() as cursor:  # about a second of the server's CPU, whatever the load
        cursor.execute("SELECT count(*) FROM generate_series(1, 3000000) AS a, LATERAL (SELECT md5(a::text)) b")
    after = backend_cpu()
    assert after is not None and after - before >= 0.05
