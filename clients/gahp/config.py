"""Settings of the boinc-gahp shim: an optional TOML file, never required.

The gridmanager starts the shim with no arguments and always sends BOINC_SELECT_PROJECT
before the first BOINC command, so the file only supplies defaults (a service URL and
token for manual use) and tuning knobs. Lookup order: `--config PATH`, the environment
variable BOINC_GAHP_CONFIG, then `$XDG_CONFIG_HOME/boinc-gahp.toml` (default
`~/.config/boinc-gahp.toml`).

Keys (all optional)::

    url = "https://gateway.example.org/"    # default project URL
    token = "..."                            # default bearer token, or:
    token_file = "~/.boinc_auth"             # first word of this file
    log_file = "/tmp/boinc-gahp.log"         # default: stderr
    log_level = "INFO"
    command_timeout = 240                    # seconds per async command (< 300)
    max_in_flight = 200                      # beyond: "F Threads limit reached"
    http_retries = 2                         # retries of requests that never reached the server
    max_reply_bytes = 450000                 # cap of one result line (gridmanager: 500 KiB)
    advertise_response_prefix = false        # list RESPONSE_PREFIX in COMMANDS
"""

from __future__ import annotations

import logging
import os
import tomllib
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

ENV_VAR = "BOINC_GAHP_CONFIG"


class ConfigError(Exception):
    """The configuration file exists but cannot be used."""


@dataclass(frozen=True)
class Config:
    """Every setting of the shim, with its default."""

    url: str | None = None
    token: str | None = None
    token_file: str | None = None
    log_file: str | None = None
    log_level: str = "INFO"
    command_timeout: float = 240.0
    max_in_flight: int = 200
    http_retries: int = 2
    max_reply_bytes: int = 450_000
    advertise_response_prefix: bool = False


_LIMITS: dict[str, tuple[float, float]] = {
    # The gridmanager gives up on a command after 300 s (gahp.md 1.12); stay below it.
    "command_timeout": (0.1, 290.0),
    "max_in_flight": (1, 100_000),
    "http_retries": (0, 10),
    # 500 KiB is where the gridmanager ASSERTs; leave room for the reqid and prefix.
    "max_reply_bytes": (1_000, 500_000),
}


def default_path() -> Path:
    """Where the configuration file is looked for when nothing names one."""
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "boinc-gahp.toml"


def load_config(path: str | None = None) -> Config:
    """Read the configuration; a missing default file just means defaults."""
    explicit = path or os.environ.get(ENV_VAR)
    target = Path(explicit).expanduser() if explicit else default_path()
    try:
        with target.open("rb") as handle:
            data = tomllib.load(handle)
    except FileNotFoundError:
        if explicit:
            raise ConfigError(f"configuration file {target} does not exist") from None
        return Config()
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"cannot read configuration file {target}: {exc}") from exc
    return _from_mapping(data, target)


def _from_mapping(data: dict[str, Any], source: Path) -> Config:
    known = {f.name: f for f in fields(Config)}
    values: dict[str, Any] = {}
    for key, value in data.items():
        if key not in known:
            raise ConfigError(f"{source}: unknown key {key!r}")
        values[key] = _check(key, value, type(getattr(Config(), key)), source)
    config = replace(Config(), **values)
    if config.token is None and config.token_file:
        config = replace(config, token=read_token_file(config.token_file))
    return config


def _check(key: str, value: Any, default_type: type, source: Path) -> Any:
    if key in ("url", "token", "token_file", "log_file", "log_level"):
        if not isinstance(value, str):
            raise ConfigError(f"{source}: {key} must be a string")
        return value
    if key == "advertise_response_prefix":
        if not isinstance(value, bool):
            raise ConfigError(f"{source}: {key} must be true or false")
        return value
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(f"{source}: {key} must be a number")
    low, high = _LIMITS[key]
    if not low <= value <= high:
        raise ConfigError(f"{source}: {key} must be between {low:g} and {high:g}")
    return default_type(value)


def read_token_file(path: str) -> str:
    """Return the first word of an authenticator file, as the gridmanager does."""
    try:
        words = Path(path).expanduser().read_text(encoding="utf-8").split()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read token file {path}: {exc}") from exc
    if not words:
        raise ConfigError(f"token file {path} is empty")
    return words[0]
