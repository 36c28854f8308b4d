"""Titles wrapped for the width a figure is drawn at (charts.base.fit_titles, ui/plots.py): the browser reports
the main area's width, and each figure's title and subtitle are wrapped for it; until then, for a phone."""

from __future__ import annotations

import plotly.graph_objects as go

from charts.base import TEXT_PX, line_px, slide, text_px, titles_meta
from ui import plots

CAPTION = ("Batch 8 per GPU, sequences as long as max_position, mixed_bf16, adamw, sdpa attention, full "
           "fine-tuning, no head; dashed: GPU memory. The training step's peak per GPU as max_position grows.")


def _lines(fig: go.Figure) -> list[str]:
    return fig.layout.title.subtitle.text.split("<br>")


def test_titles_wrap_for_the_drawn_width():
    phone = slide(go.Figure(), "Training memory against max_position", CAPTION)
    wide = slide(go.Figure(), "Training memory against max_position", CAPTION, figure_px=1000)
    assert all(text_px(ln, 12) <= TEXT_PX for ln in _lines(phone))
    assert all(text_px(ln, 12) <= line_px(1000) for ln in _lines(wide))
    assert len(_lines(wide)) < len(_lines(phone))  # a desktop figure wastes no lines on a phone's width
    assert max(text_px(ln, 12) for ln in _lines(wide)) > 0.6 * line_px(1000)
    assert wide.layout.margin.t < phone.layout.margin.t  # the top margin holds the lines it has
    narrow = slide(go.Figure(), "Training memory against max_position", CAPTION, figure_px=250)
    assert all(text_px(ln, 12) <= line_px(250) for ln in _lines(narrow))  # a column narrower than a phone


def test_fitted_copies_a_shared_figure_once_per_width():
    fig = slide(go.Figure(go.Bar(x=["a"], y=[1])), "Parameter counts", CAPTION)
    before = fig.to_plotly_json()
    assert plots.fitted(fig, None, None) is fig  # width unknown: as drawn for a phone
    a = plots.fitted(fig, 900.0, 900)
    assert a is not fig and fig.to_plotly_json() == before  # the cached figure is never changed
    assert titles_meta(a)["figure_px"] == 900.0 and titles_meta(a)["main_px"] == 900
    assert plots.fitted(fig, 900.0, 900) is a  # made once per figure and width
    assert plots.fitted(a, 900.0, 900) is a  # already wrapped for it
    assert plots.fitted(fig, 442.0, 900) is not a
    assert plots.fitted(go.Figure(), 900.0, 900).layout.title.text is None  # no slide() title: left alone


def test_column_width_from_the_page_width(monkeypatch):
    monkeypatch.setattr(plots, "view", lambda: {"main": 900, "stacked": False})
    assert plots.figure_px() == 900 and plots.figure_px(0.5) == (900 - plots.COLUMN_GAP_PX) * 0.5
    monkeypatch.setattr(plots, "view", lambda: {"main": 350, "stacked": True})
    assert plots.figure_px(0.5) == 350  # a phone stacks the columns: each takes the whole width
    monkeypatch.setattr(plots, "view", lambda: None)
    assert plots.figure_px(0.5) is None


def test_the_cookie_view_is_read_only_where_well_formed():
    assert plots.cookie_view("940:0") == {"main": 940, "stacked": False}
    assert plots.cookie_view("350:1") == {"main": 350, "stacked": True}
    from unittest.mock import MagicMock

    for bad in (None, MagicMock(), 940, "", "940", "940:2", "0:0", "00:1", "-40:0", "940:0;x", "1e3:0", "999999:0", "abc:0", " 940:0"):
        assert plots.cookie_view(bad) is None, bad


def test_without_a_script_run_the_view_is_unknown():
    """Outside a run (no session, no cookies): None, the phone's wrapping, never an error."""
    assert plots.view() is None
