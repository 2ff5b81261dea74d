"""Reports: terminal (rich), Markdown and JSON renderings of an analysed run."""

from rigbench.report._run import render_json, render_markdown, render_terminal
from rigbench.report._speed import speed_markdown, speed_table

__all__ = ["render_json", "render_markdown", "render_terminal", "speed_markdown", "speed_table"]
