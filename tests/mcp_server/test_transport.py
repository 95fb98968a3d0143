"""Which Host and Origin headers the HTTP server accepts, whatever address it binds."""

from __future__ import annotations

import pytest

from haiku_cli.mcp_server.transport import is_loopback, security_settings


def test_loopback_binding_accepts_only_loopback_names() -> None:
    settings = security_settings("127.0.0.1")
    assert settings.enable_dns_rebinding_protection
    assert settings.allowed_hosts == ["127.0.0.1:*", "localhost:*", "[::1]:*"]
    assert "http://evil.example:*" not in settings.allowed_origins


def test_a_wildcard_binding_adds_only_the_names_allowed() -> None:
    settings = security_settings("0.0.0.0", ["box.lan", "fd00::5"])
    assert settings.allowed_hosts == ["127.0.0.1:*", "localhost:*", "[::1]:*", "box.lan:*", "[fd00::5]:*"]
    assert {"http://box.lan:*", "https://box.lan:*"} <= set(settings.allowed_origins)
    assert not any(h.startswith("0.0.0.0") for h in settings.allowed_hosts)


def test_a_specific_address_is_accepted_as_itself() -> None:
    assert "192.168.1.7:*" in security_settings("192.168.1.7").allowed_hosts


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("localhost", True),
        ("::1", True),
        ("[::1]", True),
        ("0.0.0.0", False),
        ("box.lan", False),
    ],
)
def test_is_loopback(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback
