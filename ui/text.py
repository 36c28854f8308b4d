"""User text (a config's name, an uploaded file's name, a link's values) shown literally in Markdown.

st.markdown, st.caption, st.success, st.warning, st.error and st.subheader read their text as Markdown
(with Streamlit's :color[...] directives and $...$ math): a name like `**x** [y](javascript:z)` would be
formatted or linked. `md` backslash-escapes (CommonMark, "Backslash escapes") every character that can
start Markdown inside a line, a list marker at its start, and turns control characters such as newlines
into spaces, so the text reads as typed. Plain punctuation that is inert mid-line ( . , ' ( ) - ) and an
underscore inside a word (hidden_dim, which can never open emphasis) are left alone.
"""

from __future__ import annotations

import re

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
# \ ` * [ ] < > # | ~ $ : & ! always; _ unless it follows a letter or digit (CommonMark left-flanking rule)
_SPECIAL = re.compile(r"([\\`*\[\]<>#|~$:&!{}]|(?<![^\W_])_)")
_LIST_START = re.compile(r"^(\s*)([-+=]|\d+(?=[.)]))")


def md(text: str) -> str:
    """text escaped for Markdown: rendered, it shows exactly `text` (control characters as spaces)."""
    s = _SPECIAL.sub(r"\\\1", _CONTROL.sub(" ", str(text)))
    m = _LIST_START.match(s)
    if m and m.group(2)[0].isdigit():
        return s[: m.end()] + "\\" + s[m.end():]  # "1." -> "1\."
    return _LIST_START.sub(r"\1\\\2", s, count=1)  # "- x" -> "\- x"


def file_stem(name: str) -> str:
    """A config name as part of a download's file name: letters, digits, '.', '-', '_' only."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._") or "config"


def attention_note(cfgs, attention: str) -> str | None:
    """Which shown configs run another attention than the one chosen (a family without an sdpa path runs its own,
    eager): said beside the numbers, so "sdpa attention" in a caption is not read as theirs."""
    from albert_core.families import attention_run

    other = [c for c in cfgs if attention_run(c.family, attention) != attention]
    if not other:
        return None
    names = ", ".join(f"{md(c.name)} ({c.family})" for c in other)
    return (f"{names}: Hugging Face's model has no {attention} path and runs its own attention, so "
            f"{'its' if len(other) == 1 else 'their'} numbers here are eager's.")


def clipped_note(cfgs, seq_len: int, done: str = "Planned") -> str | None:
    """Which shown configs are `done` (planned, counted) at their own max_position, shorter than the sequence length
    asked for: said beside the numbers, not only in a field's help."""
    short = [c for c in cfgs if c.max_position < seq_len]
    if not short:
        return None
    if len(short) == len(cfgs):
        longest = max(c.max_position for c in cfgs)
        return (f"Sequence length {seq_len:,} is longer than the max_position of every shown config (longest "
                f"{longest:,}): each is planned at its own max_position. The chart's lower panel raises max_position "
                "with the sequence.")
    return (f"{done} at their own max_position (shorter than {seq_len:,} tokens): "
            + ", ".join(f"{md(c.name)} ({c.max_position:,})" for c in short) + ".")


def gap_words(gap: int, measured: int) -> str:
    """The modelled peak against the measured one: equal said in words, a gap under 0.01% in bytes (never
    "+0.00%"), else in percent."""
    if not gap:
        return "equal to the byte"
    pct = 100 * gap / measured
    return f"{gap:+,} B, {pct:+.4f}% vs measured" if abs(pct) < 0.01 else f"{pct:+.2f}% vs measured"
