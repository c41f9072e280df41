"""Command line for instructors and learners: ``python -m trnsim COMMAND``.

Commands:

* ``doctor``: check this environment for the course and say exactly what to fix
  (exit status 1 when something needs fixing).
* ``nbgrader-course DIR``: an nbgrader course folder (one assignment per notebook) for
  ``nbgrader generate_assignment`` / ``autograde`` (the ``grade`` extra installs nbgrader).
* ``nbgrader-sync``: convert the course notebooks' exercises to nbgrader cells in place
  (idempotent; ``--check`` only reports, exit status 1 when a notebook is not converted).
* ``lite``: build the course as a static JupyterLite site (default ``_output/``).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path


def _default_notebooks() -> Path:
    """``notebooks/`` of the checkout trnsim runs from, else ``./notebooks``."""
    here = Path(__file__).resolve().parents[2] / "notebooks"       # trnsim/course/cli.py -> the checkout
    return here if here.is_dir() else Path("notebooks")


def cmd_doctor(args: argparse.Namespace) -> int:
    from trnsim.course.doctor import doctor_report, format_doctor_report

    items = doctor_report()
    print(format_doctor_report(items))
    return 0 if all(i.ok for i in items) else 1


def cmd_nbgrader_sync(args: argparse.Namespace) -> int:
    from trnsim.course.grading.cells import GradingError
    from trnsim.course.grading.notebook import sync_notebooks

    try:
        results = sync_notebooks(args.notebooks, write=not args.check)
    except (FileNotFoundError, GradingError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    changed = [r for r in results if r.changed]
    for r in results:
        state = (f"{'would convert' if args.check else 'converted'} {len(r.converted)} exercise cell(s), "
                 f"{len(r.tests_added)} test cell(s) added" if r.changed else "already in nbgrader form")
        print(f"{r.path}: {state}; {r.points:g} autograded point(s)")
        for note in r.untested:
            print(f"warning: {note}", file=sys.stderr)
    if args.check:
        if changed:
            print(f"{len(changed)} notebook(s) not in nbgrader form: run python -m trnsim nbgrader-sync",
                  file=sys.stderr)
        return 1 if changed else 0
    if changed:
        print("re-execute the converted notebooks so their stored outputs match (nbval), e.g.\n"
              + "\n".join(f"  jupyter nbconvert --to notebook --execute --inplace {r.path}" for r in changed))
    return 0


def cmd_nbgrader_course(args: argparse.Namespace) -> int:
    from trnsim.course.grading.cells import GradingError
    from trnsim.course.grading.course import CONFIG_NAME, write_course

    try:
        assignments = write_course(args.course_dir, args.notebooks)
    except (FileNotFoundError, ValueError, GradingError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for a in assignments:
        print(f"{a.notebook}: assignment {a.name}, {a.points:g} autograded point(s)")
    print(f"nbgrader course folder {args.course_dir} ({len(assignments)} assignments, config {CONFIG_NAME}); next:\n"
          f"  cd {args.course_dir} && nbgrader generate_assignment \"*\"")
    return 0


def cmd_lite(args: argparse.Namespace) -> int:
    from trnsim.course.lite import NETWORK_NOTE, LiteBuildError, build_site

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

    p = sub.add_parser("nbgrader-course", help="make an nbgrader course folder, one assignment per notebook")
    p.add_argument("course_dir", type=Path, help="the course folder (created if missing; source/ is refreshed)")
    p.add_argument("--notebooks", type=Path, default=_default_notebooks(), help="the course notebooks folder")
    p.set_defaults(func=cmd_nbgrader_course)

    p = sub.add_parser("nbgrader-sync", help="convert the notebooks' exercises to nbgrader cells, in place")
    p.add_argument("--notebooks", type=Path, default=_default_notebooks(), help="the course notebooks folder")
    p.add_argument("--check", action="store_true",
                   help="change nothing; exit status 1 when a notebook still has unconverted exercises")
    p.set_defaults(func=cmd_nbgrader_sync)

    p = sub.add_parser("lite", help="build the course as a static JupyterLite site")
    p.add_argument("--output-dir", type=Path, default=Path("_output"), help="site folder (replaced)")
    p.add_argument("--notebooks", type=Path, default=_default_notebooks(), help="the course notebooks folder")
    p.add_argument("--wheel", type=Path, default=None, help="use this trnsim wheel instead of building one")
    p.set_defaults(func=cmd_lite)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.func(args)
