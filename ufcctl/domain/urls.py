"""Credentials in URLs: finding them and masking them in anything printed (pure, standard library only).

A URL like https://user:secret@host/ would carry its password into logs, artifacts and error
messages; ufcctl refuses such URLs in inventories (`ufcctl inventory check`) and masks the password
(`user:***@host`) wherever a URL is printed. Node-side programs ship this module
(ufcctl/nodeside/__init__.py), so it imports nothing but the standard library.
"""

from __future__ import annotations

import re

# scheme://userinfo@ at the start of a URL; userinfo holds no '/', '?', '#' or '@' (RFC 3986, 3.2.1)
_USERINFO = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*://)([^/?#@\s]*)@")


def has_credentials(url: str) -> bool:
    """True when `url` names a user (and perhaps a password) before its host."""
    return bool(_USERINFO.match(url))


def mask(url: str) -> str:
    """`url` with the password (or a lone user name, which may be a token) replaced by ***."""
    def masked(match: re.Match[str]) -> str:
        user, colon, _ = match.group(2).partition(":")
        return f"{match.group(1)}{user + ':***' if colon else '***'}@"

    return _USERINFO.sub(masked, url, count=1)
