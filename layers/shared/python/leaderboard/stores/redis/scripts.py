"""Lua scripts, each kept beside the module that runs it.

A script's first line may name the shared fragments it calls (`-- uses: tiebreakers, hidden`):
they are in `lua_shared/` and prepended in the order named when the script is loaded, so a
helper several scripts call is written once.
"""

from __future__ import annotations

import hashlib
import re
from functools import cache
from importlib import resources
from typing import Any

_USES = re.compile(r"--\s*uses:\s*([a-z_, ]+)")


@cache
def load_script(package: str, name: str) -> str:
    """The text of `<package>/<name>.lua` with the shared fragments it names."""
    text = resources.files(package).joinpath(f"{name}.lua").read_text()
    named = _USES.match(text)
    if named is None:
        return text
    shared = resources.files(__package__ or "leaderboard.stores.redis").joinpath("lua_shared")
    fragments = [n.strip() for n in named.group(1).split(",") if n.strip()]
    return "".join(shared.joinpath(f"{n}.lua").read_text() for n in fragments) + text


def script_sha(text: str) -> str:
    # EVALSHA names a script by its SHA-1: an identifier, not a security measure.
    return hashlib.sha1(text.encode(), usedforsecurity=False).hexdigest()


class Script:
    """A script a store class runs (`_submit = Script(__package__, "submit")`), registered with
    the instance's `client` on first use; later uses find it in the instance's own dict."""

    def __init__(self, package: str | None, name: str) -> None:
        if package is None:
            raise ValueError("a script is loaded from beside a module of a package")
        self.package, self.name, self.attr = package, name, name

    def __set_name__(self, owner: type, attr: str) -> None:
        self.attr = attr

    def __get__(self, instance: Any, owner: type | None = None) -> Any:
        if instance is None:
            return self
        registered = instance.client.register_script(load_script(self.package, self.name))
        instance.__dict__[self.attr] = registered
        return registered
