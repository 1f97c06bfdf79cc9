"""Command line: ``python -m deckbuild [render|preview|check] ...``."""

from __future__ import annotations

import argparse
import signal
import sys
import time
from pathlib import Path

from . import findings, kernel, project_files
from .build import BuildSettings, build_document, output_paths
import os

from .errors import DeckError, DeckWarning
from .options import PROFILE_ENV
from .options import find_project_root, load_project


def emit(text: str, end: str = "\n") -> None:
    print(text, end=end, file=sys.stderr, flush=True)


def _targets(paths: list[str]) -> list[tuple[Path, object]]:
    """(document, project) pairs: a .qmd (or .md) file, or every document of a project
    directory."""
    if not paths:
        paths = ["."]
    out = []
    for p in paths:
        path = Path(p).resolve()
        if path.is_dir():
            root = find_project_root(path)
            if root is None:
                raise DeckError("no _quarto.yml here or above; name a .qmd file instead", path)
            project = load_project(root)
            if (error := project.missing_render_error()) is not None:
                raise error
            out += [(doc, project) for doc in project.render]
        elif path.suffix in project_files.DOCUMENT_SUFFIXES:
            if not path.exists():
                raise DeckError("document not found", path)
            root = find_project_root(path)
            project = load_project(root) if root else None
            if project is not None:
                for entry, line in project.missing_render:
                    # Quarto renders the file asked for and says what the list lacks
                    looked = project.root / entry.lstrip("/")
                    warning = DeckWarning(f"file listed under project: render not found: {entry} "
                                          f"(looked for {looked}); rendering {path.name}, as "
                                          "Quarto does", project.config.file, line)
                    emit(f"  {warning}")
            out.append((path, project))
        else:
            raise DeckError("expected a .qmd or .md file or a project directory", path)
    return out


def cmd_render(args) -> int:
    settings = BuildSettings(html_only=args.html_only, handout=args.handout,
                             use_cache=not args.no_cache,
                             cell_timeout=args.cell_timeout, jobs=args.jobs)
    t0 = time.perf_counter()
    results = [build_document(doc, settings, emit, project) for doc, project in _targets(args.paths)]
    if len(results) > 1:
        emit(f"[deckbuild] {len(results)} documents in {time.perf_counter() - t0:.2f}s")
    for r in results:
        print(r.html)
        if r.pdf:
            print(r.pdf)
        if r.handout:
            print(r.handout)
    return 0


def cmd_check(args) -> int:
    from . import browser

    failures = 0
    for doc, project in _targets(args.paths):
        html, pdf = output_paths(doc, project)
        if not html.exists():
            raise DeckError(f"not built yet: {html} (run render first)", doc)
        shots = html.with_name(f"{html.stem}_screenshots")
        t = time.perf_counter()
        report = browser.check_deck(html, shots)
        problems = report.problems()
        if pdf.exists():
            pages = browser.pdf_pages(pdf)
            if pages != report.total_slides:
                problems.append(f"PDF has {pages} pages for {report.total_slides} slides")
        emit(f"[deckbuild] checked {len(report.slides)} slides of {html.name} in "
             f"{time.perf_counter() - t:.2f}s; screenshots in {shots}")
        emit(f"[deckbuild] contact sheet: {report.contact_sheet}")
        for p in problems:
            emit(f"  PROBLEM {p}")
        emit("[deckbuild] form checks (findings per check):")
        for line in findings.summary(report.findings()):
            emit(f"  {line}")
        failing = report.failing()
        if failing:
            emit("[deckbuild] failing: " + ", ".join(f"{c} ({len(fs)})" for c, fs in failing.items()))
        failures += len(problems) + sum(len(fs) for fs in failing.values())
    return 1 if failures else 0


def cmd_preview(args) -> int:
    from . import preview

    return preview.serve(_targets(args.paths), args.port, not args.no_browser,
                         not args.no_cache, emit, args.cell_timeout)


def _seconds(text: str) -> float | bool:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a number of seconds (0: no limit), got {text!r}")
    return value or False


def _jobs(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of kernels >= 1, got {text!r}")
    return int(text)


def _timeout_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--cell-timeout", type=_seconds, default=None, metavar="SECONDS",
                        help="stop the build when one cell runs longer than this (0: no "
                             "limit; default: `deckbuild: cell-timeout` in _quarto.yml, else 600)")


def _render_arguments(render: argparse.ArgumentParser) -> None:
    render.add_argument("--html-only", action="store_true", help="skip the PDF")
    render.add_argument("--handout", action="store_true",
                        help="also print <name>-handout.pdf beside the PDF: one page per slide "
                             "with its speaker notes under it")
    render.add_argument("--no-cache", action="store_true",
                        help="re-execute every cell and rebuild everything")
    _timeout_argument(render)
    render.add_argument("--jobs", type=_jobs, default=None, metavar="N",
                        help="chapters run at once, each in its own kernel (default: one per core)")


def _profile_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--profile", default=None, metavar="NAME[,NAME]",
                        help="Quarto profiles to activate (_quarto-NAME.yml, when-profile; "
                             "default: $QUARTO_PROFILE, else the project's profile: default:)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m deckbuild",
        description="Render Quarto reveal.js decks without the Quarto binary: execute the "
                    "Python cells, run pandoc, print the PDF in Chromium.")
    sub = parser.add_subparsers(dest="command")
    render = sub.add_parser("render", help="build HTML and PDF (the default command)")
    render.add_argument("paths", nargs="*", help=".qmd files or a project directory (default: .)")
    _render_arguments(render)
    _profile_argument(render)
    preview = sub.add_parser("preview", help="serve on localhost and rebuild on change")
    preview.add_argument("paths", nargs="*", help=".qmd file or project directory (default: .)")
    preview.add_argument("--port", type=int, default=4848, help="port on 127.0.0.1 (default 4848)")
    preview.add_argument("--no-browser", action="store_true", help="do not open a browser")
    preview.add_argument("--no-cache", action="store_true", help="re-execute every cell")
    _timeout_argument(preview)
    _profile_argument(preview)
    check = sub.add_parser("check", help="check built decks in Chromium, save slide screenshots")
    check.add_argument("paths", nargs="*", help=".qmd files or a project directory (default: .)")
    parser.epilog = ("examples:  python -m deckbuild render            # the whole project\n"
                     "           python -m deckbuild slides/index.qmd --html-only\n"
                     "           python -m deckbuild preview slides/index.qmd\n"
                     "           python -m deckbuild check             # browser checks + screenshots")
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] not in ("render", "preview", "check", "-h", "--help"):
        argv.insert(0, "render")
    args = parser.parse_args(argv)
    if getattr(args, "profile", None):
        os.environ[PROFILE_ENV] = args.profile     # as quarto render --profile does
    # Ctrl-C and SIGTERM kill the kernel first, then unwind; installed even when the
    # process started with SIGINT ignored (as a background job does)
    signal.signal(signal.SIGINT, kernel.interrupt_handler)
    signal.signal(signal.SIGTERM, kernel.interrupt_handler)
    try:
        if args.command == "preview":
            return cmd_preview(args)
        if args.command == "check":
            return cmd_check(args)
        return cmd_render(args)
    except DeckError as exc:
        emit(f"\nERROR {exc}")
        return 1
    except KeyboardInterrupt:
        kernel.kill_kernels()
        emit("\ninterrupted")
        return 130
