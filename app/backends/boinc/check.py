"""``boinc-gateway boinc check``: what a project admin runs first.

Pings the project, checks each BOINC account the gateway will act as (the project-wide
authenticator and users' own ones: known, with remote-submission rights), and for each
gateway app compares the BOINC app's templates with the app's input and output names and
probes submission with ``estimate_batch`` (which creates nothing), so a server with the
template-loading bug of the protocol reference (11.1) is recognised before a batch fails on it.
Authenticators are never printed.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlalchemy import select
from sqlmodel import col

from app.backends.boinc import models as m
from app.backends.boinc.context import (
    MappingError,
    boinc_app,
    check_templates,
    client_for,
    describe,
)
from app.backends.boinc.errors import BoincError
from app.backends.boinc.rpc import BoincClient
from app.config import Settings
from app.db import Database
from app.models import App, User

TEMPLATE_BUG = "couldn't parse input template file"


@dataclass
class Report:
    """Lines for the admin, and whether everything checked out."""

    lines: list[str] = field(default_factory=list)
    ok: bool = True

    def good(self, text: str) -> None:
        """A check that passed."""
        self.lines.append(f"ok    {text}")

    def bad(self, text: str) -> None:
        """A check that failed."""
        self.lines.append(f"FAIL  {text}")
        self.ok = False


def _probe_submission(client: BoincClient, app: App, name: str, report: Report) -> None:
    # local_staged inputs are not touched by estimate_batch: the names need not exist.
    spec = m.JobSpec("bgw-check", inputs=[m.LocalInput("0" * 32) for _ in app.inputs])
    try:
        client.estimate_batch(name, [spec])
        report.good(f"app {app.name}: BOINC accepts submissions to {name}")
    except BoincError as exc:
        text = describe(exc)
        if TEMPLATE_BUG in text:
            report.bad(
                f"app {app.name}: this BOINC server cannot read input templates during remote "
                "submission (the XXE-hardening bug of BOINC 8.3 master, boinc-rpc.md 11.1); "
                f"patch the server: {text}"
            )
        elif "rsc_fpops_est" in text:
            report.good(f"app {app.name}: submission reaches {name} (no FLOP estimate to probe)")
        else:
            report.bad(f"app {app.name}: submission to {name} refused: {text}")


def _probe_sizes(client: BoincClient, settings: Settings, report: Report) -> None:
    """The largest requests the gateway will send must get past the project's PHP
    post_max_size, which silently drops larger ones ("can't parse request")."""
    limits = {
        "BGW_BOINC_SUBMIT_MAX_BYTES": settings.boinc_submit_max_bytes,
        "BGW_BOINC_UPLOAD_MAX_BYTES": settings.boinc_upload_max_bytes,
    }
    for label, nbytes in limits.items():
        try:
            client.probe_request_size(nbytes)
            report.good(f"requests of {nbytes} bytes ({label}) get through")
        except BoincError as exc:
            report.bad(
                f"requests of {nbytes} bytes ({label}) are dropped ({describe(exc)}): the "
                f"project's PHP post_max_size is smaller; raise it, or lower {label} to it"
            )


def _check_app(client: BoincClient, app: App, report: Report) -> None:
    name, _ = boinc_app(app)
    try:
        templates = client.get_templates(name)
    except BoincError as exc:
        report.bad(f"app {app.name}: BOINC app {name}: {describe(exc)}")
        return
    try:
        check_templates(app, templates)
    except MappingError as exc:
        report.bad(str(exc))
        return
    report.good(
        f"app {app.name}: BOINC app {name} templates match (inputs "
        f"{list(templates.input_open_names)}, outputs {list(templates.output_open_names)})"
    )
    _probe_submission(client, app, name, report)


class AppRefused(Exception):
    """A gateway app the BOINC project cannot run (no such BOINC app, templates disagree)."""


def check_new_app(settings: Settings, app: App) -> bool:
    """Before an app is registered with the boinc backend: its BOINC app exists and its
    templates agree with the app's inputs and outputs (the check submissions repeat). Asks
    as the project-wide account; without one there is nobody to ask (False, not checked).
    Raises ``AppRefused``, or the ``BoincError`` when the project cannot be asked now."""
    if not settings.boinc_url or not settings.boinc_authenticator:
        return False
    name, _ = boinc_app(app)
    timeout = min(30.0, settings.boinc_timeout_seconds)
    with client_for(settings, settings.boinc_authenticator, timeout=timeout) as c:
        try:
            templates = c.get_templates(name)
        except BoincError as exc:
            if exc.retryable:
                raise
            raise AppRefused(f"app {app.name}: BOINC app {name}: {describe(exc)}") from exc
    try:
        check_templates(app, templates)
    except MappingError as exc:
        raise AppRefused(str(exc)) from exc
    return True


def run(settings: Settings, db: Database) -> Report:
    """Check the configured project against the gateway's accounts and apps."""
    report = Report()
    if not settings.boinc_url:
        report.bad("BGW_BOINC_URL is not set")
        return report
    with db.read_session() as session:
        apps = list(
            session.execute(
                select(App).where(col(App.disabled).is_(False)).order_by(col(App.name))
            ).scalars()
        )
        own = session.execute(
            select(col(User.name), col(User.boinc_authenticator)).where(
                col(User.boinc_authenticator).is_not(None), col(User.disabled).is_(False)
            )
        ).all()
    # (label, authenticator, the user whose apps to check: None for every app)
    accounts: list[tuple[str, str, str | None]] = []
    if settings.boinc_authenticator:
        label = "the project-wide account (BGW_BOINC_AUTHENTICATOR)"
        accounts.append((label, settings.boinc_authenticator, None))
    accounts += [(f"user {name}'s own account", auth, name) for name, auth in own if auth]
    timeout = settings.boinc_timeout_seconds
    with client_for(settings, "", timeout=timeout) as pinger:
        try:
            pinger.ping()
            report.good(f"{pinger.project_url} answers")
        except BoincError as exc:
            report.bad(f"{pinger.project_url}: {describe(exc)}")
            return report
        _probe_sizes(pinger, settings, report)
    if not accounts:
        report.bad("no BOINC account: set BGW_BOINC_AUTHENTICATOR or users' boinc_authenticator")
    for label, auth, user in accounts:
        with client_for(settings, auth, timeout=timeout) as client:
            try:
                client.query_batches()
                report.good(f"{label}: known, with remote submission rights")
            except BoincError as exc:
                report.bad(f"{label}: {describe(exc)}")
                continue
            for app in apps:
                if user is None or app.allowed_users is None or user in app.allowed_users:
                    _check_app(client, app, report)
    return report
