"""Text that is safe to put in XML, HTML and Markdown, whatever a message contains.

Messages and reproducers quote what a system returned, so they may hold control characters, lone
surrogates (from JSON ``\\ud800`` escapes) or the character U+FFFE. XML 1.0 forbids those outright
(a JUnit file holding one is rejected by every consumer) and HTML treats them as parse errors.
They are replaced by a visible escape, so that nothing is lost silently.
"""

from __future__ import annotations

import re

# XML 1.0 Char: #x9 | #xA | #xD | [#x20-#xD7FF] | [#xE000-#xFFFD] | [#x10000-#x10FFFF]; DEL and
# the C1 controls are allowed by XML but are parse errors in HTML and invisible everywhere
_UNSAFE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff]")
_ANCHOR_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def clean(text: str | None) -> str:
    """``text`` with every character XML or HTML cannot hold written as ``\\xNN`` / ``\\uNNNN``."""
    if not text:
        return ""
    return _UNSAFE.sub(_escape, text)


def anchor(*parts: str) -> str:
    """A stable fragment id for a system and spec: letters, digits, '.', '_' and '-' only."""
    return "--".join(_ANCHOR_UNSAFE.sub("-", part).strip("-") or "x" for part in parts)
