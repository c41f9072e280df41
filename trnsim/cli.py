"""Command line for instructors and learners: ``python -m trnsim COMMAND``.

Commands:

* ``doctor``: check this environment for the course and say exactly what to fix
  (exit status 1 when something needs fixing).
* ``student-copies OUT``: write the notebooks with exercise solutions replaced by stubs
  (``--verify`` also runs every copy and checks each stub answers with a hint).
* ``lite``: build the course as a static JupyterLite site (default ``_output/``).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path


def _default_notebooks() -> Path:
    """``notebooks/`` of the checkout trnsim runs from, else ``./notebooks``."""
    here = Path(__file__).resolve().parent.parent / "notebooks"
    return here if here.is_dir() else Path("notebooks")


def cmd_doctor(args: argparse.Namespace) -> int:
    from trnsim.doctor import doctor_report, format_doctor_report

    items = doctor_report()
    print(format_doctor_report(items))
    return 0 if all(i.ok for i in items) else 1


def cmd_student_copies(args: argparse.Namespace) -> int:
    from trnsim.student import verify_student_copy, write_student_copies

    try:
        copies = write_student_copies(args.out, args.notebooks)
    except (FileNotFoundError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for c in copies:
        code = [s for s in c.stubbed if s.cell_type == "code"]
        other = len(c.stubbed) - len(code)
        answers = sorted({a for s in code for a in s.answers})
        print(f"{c.target}: {len(code)} exercise cell(s) stubbed"
              + (f", {other} worked answer(s) removed" if other else "")
              + (f" (answers: {', '.join(answers)})" if answers else ""))
    if not args.verify:
        return 0
    problems = []
    for c in copies:
        problems += verify_student_copy(c.target)
    for p in problems:
        print(f"PROBLEM {p}", file=sys.stderr)
    print(f"verified {len(copies)} student copies: " + ("all cells run, every stub gives a hint" if not problems
                                                         else f"{len(problems)} problem(s)"))
    return 1 if problems else 0


def cmd_lite(args: argparse.Namespace) -> int:
    from trnsim.lite import NETWORK_NOTE, LiteBuildError, build_site

    try:
        site = build_site(args.output_dir, args.notebooks, wheel=args.wheel)
    except LiteBuildError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"JupyterLite site in {site.output_dir} ({len(site.notebooks)} notebooks, wheel {site.wheel})")
    print(f"serve it with:  python -m http.server 8000 --directory {site.output_dir}")
    print("then open one notebook per link:")
    for name in site.notebooks:
        print(f"  http://localhost:8000/{site.url_for(name)}")
    print(NETWORK_NOTE)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m trnsim", description="trnsim course tools.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("doctor", help="check this environment and say what to fix")
    p.set_defaults(func=cmd_doctor)

    p = sub.add_parser("student-copies", help="write the notebooks with solutions replaced by stubs")
    p.add_argument("out", type=Path, help="folder for the student copies (created if missing)")
    p.add_argument("--notebooks", type=Path, default=_default_notebooks(), help="the course notebooks folder")
    p.add_argument("--verify", action="store_true",
                   help="run every copy in a fresh kernel and check each stub prints a hint")
    p.set_defaults(func=cmd_student_copies)

    p = sub.add_parser("lite", help="build the course as a static JupyterLite site")
    p.add_argument("--output-dir", type=Path, default=Path("_output"), help="site folder (replaced)")
    p.add_argument("--notebooks", type=Path, default=_default_notebooks(), help="the course notebooks folder")
    p.add_argument("--wheel", type=Path, default=None, help="use this trnsim wheel instead of building one")
    p.set_defaults(func=cmd_lite)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.func(args)
