"""What the parts of the ``boinc`` backend share: settings, clients per account, app templates.

Accounts: a batch is sent, polled and controlled with its owner's own BOINC authenticator
when the admin set one, else with the project-wide ``BGW_BOINC_AUTHENTICATOR``. Authenticators
are secrets: they key the client pool in memory and are never logged.
"""

from __future__ import annotations

import re
import ssl
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from app.backends.boinc import models as m
from app.backends.boinc.errors import BoincError
from app.backends.boinc.names import Namer
from app.backends.boinc.rpc import BoincClient
from app.config import Settings
from app.db import Database
from app.models import App
from app.services.store import FileStore

TEMPLATE_TTL = 3600.0
_SECRET_PARAM = re.compile(r"(auth(?:_str|enticator)?=)[^&\s]+")


def describe(exc: BaseException) -> str:
    """An error as text for logs and job errors, without the tokens of download URLs."""
    text = exc.message if isinstance(exc, BoincError) else str(exc)
    return _SECRET_PARAM.sub(r"\1***", text)


class MappingError(Exception):
    """A batch or job the gateway cannot express in BOINC terms (permanent, not BOINC's)."""


@dataclass(frozen=True, slots=True)
class Target:
    """Where a gateway app runs on BOINC: app name, version, output files in template order."""

    app_name: str
    app_version_num: int
    output_order: tuple[str, ...]


def boinc_app(app: App) -> tuple[str, int]:
    """The BOINC app name (default: the gateway app's name) and version number (0: any)."""
    spec: dict[str, Any] = app.boinc or {}
    return str(spec.get("app_name") or app.name), int(spec.get("app_version_num") or 0)


def check_templates(app: App, templates: m.Templates) -> Target:
    """Refuse an app whose input or output names disagree with its BOINC templates."""
    name, version = boinc_app(app)
    inputs = list(templates.input_open_names)
    if inputs != list(app.inputs):
        raise MappingError(
            f"app {app.name}: its inputs {list(app.inputs)} do not match the input template "
            f"of BOINC app {name} (open names {inputs}, in order)"
        )
    outputs = templates.output_open_names
    missing = [o["name"] for o in app.outputs if o["name"] not in outputs]
    if missing:
        raise MappingError(
            f"app {app.name}: outputs {missing} are not in the output template of BOINC app "
            f"{name} (open names {list(outputs)})"
        )
    return Target(name, version, tuple(outputs))


def part_refs(
    namer: Namer, batch_id: int, name: str, parts: int, boinc_id: int
) -> list[dict[str, Any]]:
    """How to name, in a batch RPC, each BOINC batch a gateway batch went as: part 0 by its
    id (``boinc_id``), the others by name."""
    names = namer.parts(batch_id, name, parts)
    return [{"batch_id": boinc_id}, *({"batch_name": n} for n in names[1:])]


def client_for(
    settings: Settings, authenticator: str, *, timeout: float | None = None
) -> BoincClient:
    """A client for the configured project acting as ``authenticator`` (TLS checked against
    ``BGW_BOINC_CA_FILE`` when set, else the system's CAs)."""
    verify: ssl.SSLContext | bool = True
    if settings.boinc_ca_file is not None:
        verify = ssl.create_default_context(cafile=str(settings.boinc_ca_file))
    return BoincClient(
        settings.boinc_url or "",
        authenticator,
        timeout=settings.boinc_timeout_seconds if timeout is None else timeout,
        max_upload_bytes=settings.boinc_upload_max_bytes,
        verify=verify,
    )


class ClientPool:
    """One client per authenticator, created on first use."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._clients: dict[str, BoincClient] = {}
        self._lock = threading.Lock()

    def get(self, authenticator: str) -> BoincClient:
        """The client acting as the account ``authenticator``."""
        with self._lock:
            client = self._clients.get(authenticator)
            if client is None:
                client = client_for(self.settings, authenticator)
                self._clients[authenticator] = client
            return client

    def close(self) -> None:
        """Close every client."""
        with self._lock:
            for client in self._clients.values():
                client.close()
            self._clients.clear()


@dataclass
class Context:
    """Everything the sending, polling and propagating code needs."""

    db: Database
    store: FileStore
    settings: Settings
    worker_id: str
    namer: Namer
    clients: ClientPool
    _templates: dict[tuple[str, str], tuple[float, m.Templates]] = field(default_factory=dict)

    def authenticator(self, own: str | None) -> str:
        """The account to act as for a user (their own, else the project-wide one)."""
        auth = own or self.settings.boinc_authenticator
        if not auth:
            raise MappingError(
                "no BOINC account: set BGW_BOINC_AUTHENTICATOR or the user's boinc_authenticator"
            )
        return auth

    def expire_time(self, lease_until: float | None) -> float:
        """The BOINC expire_time for a gateway lease (0: none)."""
        if not lease_until:
            return 0.0
        return lease_until + self.settings.boinc_expire_margin_seconds

    def target(self, app: App, authenticator: str) -> Target:
        """The app's BOINC target, checked against get_templates (cached for an hour)."""
        name, _ = boinc_app(app)
        key = (authenticator, name)
        cached = self._templates.get(key)
        if cached is None or time.monotonic() - cached[0] > TEMPLATE_TTL:
            templates = self.clients.get(authenticator).get_templates(name)
            cached = (time.monotonic(), templates)
            self._templates[key] = cached
        return check_templates(app, cached[1])
