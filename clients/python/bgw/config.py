"""Where bgw finds the service: ``BGW_URL`` / ``BGW_TOKEN``, else a TOML config file.

The file is ``$BGW_CONFIG``, else ``$XDG_CONFIG_HOME/bgw/config.toml``, else
``~/.config/bgw/config.toml``, with the keys ``url`` and ``token``. Environment variables
win over the file; the URL defaults to ``http://127.0.0.1:8000``.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from bgw.errors import UsageError

DEFAULT_URL = "http://127.0.0.1:8000"


@dataclass(frozen=True)
class Config:
    """The service's base URL and the user's bearer token."""

    url: str
    token: str


def config_path(env: Mapping[str, str]) -> Path:
    """The config file bgw reads (it need not exist)."""
    if env.get("BGW_CONFIG"):
        return Path(env["BGW_CONFIG"]).expanduser()
    base = env.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "bgw" / "config.toml"


def _read_file(path: Path, *, required: bool) -> dict[str, object]:
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except FileNotFoundError:
        if required:
            raise UsageError(f"config file {path} does not exist") from None
        return {}
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise UsageError(f"cannot read config file {path}: {exc}") from None


def load_config(env: Mapping[str, str] | None = None) -> Config:
    """Resolve the URL and token from the environment and the config file."""
    env = os.environ if env is None else env
    path = config_path(env)
    data = _read_file(path, required=bool(env.get("BGW_CONFIG")))
    url = env.get("BGW_URL") or data.get("url") or DEFAULT_URL
    token = env.get("BGW_TOKEN") or data.get("token")
    if not isinstance(url, str) or not url.startswith(("http://", "https://")):
        raise UsageError(f"the service URL must start with http:// or https://, not {url!r}")
    if not isinstance(token, str) or not token:
        raise UsageError(f'no token: set BGW_TOKEN or `token = "..."` in {path}')
    return Config(url=url.rstrip("/"), token=token)
