"""Batch descriptions for ``bgw submit``: the ``POST /v1/batches`` body in JSON or YAML, where
a job input may name a local file (``{"name": "in", "path": "data/a.txt"}``); relative paths
are taken from the spec file's directory."""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from bgw.errors import UsageError


@dataclass
class Spec:
    """A parsed batch description and the local files its inputs name."""

    body: dict[str, Any]
    paths: list[Path] = field(default_factory=list)

    @property
    def name(self) -> str:
        """The batch name."""
        return str(self.body["name"])

    def resolved(self, md5s: Mapping[Path, str]) -> dict[str, Any]:
        """The request body with every ``path`` input replaced by its ``md5``."""
        body = copy.deepcopy(self.body)
        for job in body.get("jobs") or []:
            for spec in job.get("inputs") or []:
                if "path" in spec:
                    spec["md5"] = md5s[Path(spec.pop("path"))]
        return body


def _load(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"{path}: {exc.strerror or exc}") from None
    try:
        if path.suffix.lower() == ".json":
            return json.loads(text)
        return yaml.safe_load(text)
    except (ValueError, yaml.YAMLError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        kind = "JSON" if path.suffix.lower() == ".json" else "YAML"
        raise UsageError(f"{path}: not valid {kind}: {first}") from None


def load_spec(path: Path, *, name: str | None = None) -> Spec:
    """Read a batch description; ``name`` overrides the one in the file."""
    data = _load(path)
    if not isinstance(data, dict):
        raise UsageError(f"{path}: a batch description is a mapping with name, app and jobs")
    if name is not None:
        data["name"] = name
    for key in ("name", "app"):
        if not isinstance(data.get(key), str) or not data[key]:
            raise UsageError(f"{path}: `{key}` must be a non-empty string")
    jobs = data.get("jobs")
    if jobs is not None and not isinstance(jobs, list):
        raise UsageError(f"{path}: `jobs` must be a list")
    base = path.parent
    paths: dict[Path, None] = {}
    for i, job in enumerate(jobs or []):
        if not isinstance(job, dict):
            raise UsageError(f"{path}: job #{i} must be a mapping")
        inputs = job.get("inputs") or []
        if not isinstance(inputs, list):
            raise UsageError(f"{path}: job {job.get('name', i)}: `inputs` must be a list")
        for spec in inputs:
            if not isinstance(spec, dict):
                raise UsageError(f"{path}: job {job.get('name', i)}: each input is a mapping")
            if "path" not in spec:
                continue
            if not isinstance(spec["path"], str) or not spec["path"]:
                raise UsageError(f"{path}: job {job.get('name', i)}: `path` must be a string")
            if "md5" in spec or "content" in spec or "url" in spec:
                raise UsageError(
                    f"{path}: job {job.get('name', i)}: input {spec.get('name')} gives `path` "
                    "and another source"
                )
            local = (base / Path(spec["path"]).expanduser()).resolve()
            spec["path"] = str(local)
            paths[local] = None
    return Spec(body=data, paths=list(paths))
