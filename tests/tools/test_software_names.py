"""The names people write for the same software (`PostgreSQL`, `postgres`) are language data: a known
service is named by its software's other names, never by a name another known service has."""

from __future__ import annotations

from tools.software_names import software_aliases


def test_a_service_known_by_its_short_name_is_named_by_its_software_full_name():
    aliases = software_aliases(["postgres", "checkout"])

    assert "postgresql" in aliases["postgres"] and "pgsql" in aliases["postgres"]
    assert "checkout" not in aliases


def test_a_name_another_known_service_has_stays_that_services():
    aliases = software_aliases(["postgres", "postgresql"])

    assert "postgresql" not in aliases["postgres"] and "postgres" not in aliases["postgresql"]


def test_separators_and_case_do_not_hide_a_software_name():
    assert "redis" in software_aliases(["Redis_Server"])["Redis_Server"]
