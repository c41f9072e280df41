"""Checkers behind the course's exercises: each returns a :class:`trnsim.course.check.CheckResult` with hints.

One module per part of the course: ``foundations`` (notebooks 00, 08), ``single_core`` (01-03), ``kernels_intro``
(04), ``puzzles`` (04b, with ``puzzle_solutions`` and ``puzzle_spec``), ``kernels_perf`` (05, 06), ``numerics`` (07),
``cluster`` (09), ``training`` (10, 11), ``scaling`` (09, 11, 12), ``serving`` (12), ``deploy`` (13). The numbers they
check against come from the simulator (``trnsim.models``, ``trnsim.perf``, ...), never the other way round.
"""
