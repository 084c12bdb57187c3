"""The ``boinc-gateway`` command: serve, worker, migrate, gc, users, apps, boinc, openapi."""

from __future__ import annotations

import json
import signal
import sys
import threading
from pathlib import Path
from typing import Annotated

import typer

from app.config import get_settings
from app.logs import configure

cli = typer.Typer(no_args_is_help=True, add_completion=False, help=__doc__)
users_cli = typer.Typer(no_args_is_help=True, help="Manage users.")
apps_cli = typer.Typer(no_args_is_help=True, help="Manage apps.")
cli.add_typer(users_cli, name="users")
cli.add_typer(apps_cli, name="apps")
boinc_cli = typer.Typer(no_args_is_help=True, help="The BOINC project behind the gateway.")
cli.add_typer(boinc_cli, name="boinc")


def _setup() -> None:
    s = get_settings()
    configure(s.log_level, s.log_json)


@cli.command()
def serve(
    host: Annotated[str, typer.Option(help="address to bind")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="port to bind")] = 8000,
) -> None:
    """Run the REST API and, in the same process, the dispatcher."""
    import uvicorn

    from app.main import create_app

    _setup()
    s = get_settings()
    if not s.bootstrap_token:
        typer.echo(
            "No BGW_BOOTSTRAP_TOKEN set: create a user with "
            "`boinc-gateway users create NAME --admin` to get a token.",
            err=True,
        )
    uvicorn.run(create_app(s), host=host, port=port, log_config=None, access_log=False)


@cli.command()
def worker() -> None:
    """Run only the dispatcher (several workers may share one PostgreSQL database)."""
    from app.db import Database
    from app.dispatcher import Dispatcher
    from app.services.store import FileStore
    from app.setup import prepare

    _setup()
    s = get_settings()
    db = Database.for_settings(s)
    prepare(db, s)
    dispatcher = Dispatcher(db, FileStore(s.store_dir), s)
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    signal.signal(signal.SIGINT, lambda *_: done.set())
    dispatcher.start()
    done.wait()
    dispatcher.stop()
    db.dispose()


@cli.command()
def migrate() -> None:
    """Bring the database schema up to date."""
    from app.migrate import upgrade

    _setup()
    s = get_settings()
    s.data_dir.mkdir(parents=True, exist_ok=True)
    upgrade(s.resolved_database_url)
    typer.echo("database is up to date", err=True)


@cli.command()
def gc() -> None:
    """Delete stored files that nothing protects any more."""
    from app.db import Database
    from app.migrate import upgrade
    from app.services import gc as gc_svc
    from app.services.store import FileStore

    _setup()
    s = get_settings()
    upgrade(s.resolved_database_url)
    db = Database.for_settings(s)
    n = gc_svc.collect(db, FileStore(s.store_dir))
    db.dispose()
    typer.echo(f"deleted {n} file(s)", err=True)


@users_cli.command("create")
def users_create(
    name: str,
    admin: Annotated[bool, typer.Option("--admin", help="give admin rights")] = False,
    max_active_jobs: Annotated[int | None, typer.Option(help="quota")] = None,
    max_storage_bytes: Annotated[int | None, typer.Option(help="quota")] = None,
) -> None:
    """Create a user and print its token (and nothing else)."""
    from pydantic import ValidationError

    from app.db import Database
    from app.errors import ServiceError
    from app.schemas import Quotas, UserCreate
    from app.services import users as users_svc
    from app.setup import prepare

    _setup()
    s = get_settings()
    db = Database.for_settings(s)
    prepare(db, s)
    try:
        data = UserCreate(
            name=name,
            admin=admin,
            quotas=Quotas(max_active_jobs=max_active_jobs, max_storage_bytes=max_storage_bytes)
            if max_active_jobs is not None or max_storage_bytes is not None
            else None,
        )
        with db.session() as session:
            _, token = users_svc.create_user(
                session,
                data=data,
                default_quotas=Quotas(
                    max_active_jobs=s.default_max_active_jobs,
                    max_storage_bytes=s.default_max_storage_bytes,
                ),
            )
    except (ServiceError, ValidationError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from None
    finally:
        db.dispose()
    typer.echo(token)


@apps_cli.command("create")
def apps_create(
    file: Annotated[Path, typer.Option("--file", help="app definition (JSON)", exists=True)],
    replace: Annotated[bool, typer.Option(help="replace an existing app")] = False,
) -> None:
    """Register (or with --replace, overwrite) an app from a JSON definition."""
    from pydantic import ValidationError

    from app.db import Database
    from app.errors import ServiceError
    from app.schemas import AppIn
    from app.services import apps as apps_svc
    from app.setup import prepare

    _setup()
    s = get_settings()
    db = Database.for_settings(s)
    prepare(db, s)
    try:
        data = AppIn.model_validate_json(file.read_text())
        with db.session() as session:
            if replace:
                apps_svc.put_app(session, name=data.name, data=data)
            else:
                apps_svc.create_app(session, data=data)
    except (ServiceError, ValidationError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from None
    finally:
        db.dispose()
    typer.echo(f"app {data.name} registered", err=True)


@boinc_cli.command("check")
def boinc_check() -> None:
    """Check the project, the BOINC accounts and every app's templates; exit 1 on a problem."""
    from app.backends.boinc.check import run
    from app.db import Database
    from app.setup import prepare

    _setup()
    s = get_settings()
    db = Database.for_settings(s)
    prepare(db, s)
    try:
        report = run(s, db)
    finally:
        db.dispose()
    for line in report.lines:
        typer.echo(line)
    if not report.ok:
        raise typer.Exit(1)


@cli.command()
def openapi() -> None:
    """Print the OpenAPI document (no server or database needed)."""
    from app.main import create_app

    doc = create_app(run_dispatcher=False).openapi()
    sys.stdout.write(json.dumps(doc, indent=2, sort_keys=False) + "\n")


def main() -> None:
    """Console-script entry point."""
    cli()


if __name__ == "__main__":
    main()
