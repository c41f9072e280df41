"""``nki.isa``: one function per NeuronCore instruction (``import trnsim.nki.isa as nisa``).

Layer 3 of trnsim.nki (tensors -> context -> **isa** -> language -> runtime). Instructions are grouped
in family modules; each instruction keeps its signature, numerics, rules and trace record together.
Semantics and rules follow the NKI 0.6 reference (aws-neuron-sdk ``nki/api/nki/isa``); arithmetic is
float32 (Vector/Scalar engines compute in fp32 and cast on output), matmul accumulates in fp32 PSUM.

How to add an instruction
-------------------------
Put it in the family module it belongs to, or in a new module ``isa/<family>.py`` exported below with
one ``from trnsim.nki.isa.<family> import *`` line (the module lists its public names in ``__all__``).
Inside the function, in this order:

1. ``ctx = current()`` (:mod:`trnsim.nki.context`): the running kernel (target limits in ``ctx.limits``,
   ``ctx.numerics`` False for timing-only traces, ``ctx.dialect`` "nki" or "beta1").
2. Validate operands with ``common.tile_arg(x, api, "arg", buffers=("sbuf", "psum"))`` (a view, partition
   dim first, within ``pmax``); scalars or [P, 1] vectors with ``common.scalar_or_vector``; free-size
   limits with ``common.check_free_limit``. Every broken rule raises
   ``KernelError(rule, message naming shape/value/limit, fix)`` (:mod:`trnsim.nki.rules`).
3. The destination: ``dview, out_t = common.out_tile(shape, dtype_name, buffer, api, dst)`` checks a
   given ``dst=`` (buffer and shape) or allocates a result tile (Beta-1 value-returning form).
4. Numerics only ``if ctx.numerics``: ``read(view)`` gives float32 values, ``common.store_result(ctx, dview,
   values, mask)`` writes them with the destination dtype's rounding (``write`` for extra outputs).
5. The trace record: ``ctx.emit(opcode, engine, reads, writes, attrs, flops, bytes_moved, free_elements,
   partitions)`` with the operand views (it computes dependencies and allocation lifetimes); then
   ``common.finish(ctx, out_t, values)`` and ``return common.result_of(dst, out_t, dview)``.

Instructions that drive an engine's accumulator registers (``reduce_cmd=``) go through ``_accum.start`` /
``_accum.save`` (state per core and engine, shared by every accumulating instruction of that engine);
instructions that also accept the Beta 1 value-returning form get their destination from
``_result.dst_or_new`` and return ``_result.done(ctx, dst, new_tile)``.

Operator tables (``ops.ALU``, ``ops.ACT``, ``ops.REDUCE``, ``ops.op_name``) give the numerics of ``op=``
arguments. Never import :mod:`trnsim.nki.language` or :mod:`trnsim.nki.runtime` from here.
"""
from trnsim.nki.isa.enums import *  # noqa: F401,F403
from trnsim.nki.isa.dma import *  # noqa: F401,F403
from trnsim.nki.isa.matmul import *  # noqa: F401,F403
from trnsim.nki.isa.transpose import *  # noqa: F401,F403
from trnsim.nki.isa.elementwise import *  # noqa: F401,F403
from trnsim.nki.isa.activations import *  # noqa: F401,F403
from trnsim.nki.isa.reduce import *  # noqa: F401,F403
from trnsim.nki.isa.copy import *  # noqa: F401,F403
from trnsim.nki.isa.fill import *  # noqa: F401,F403
from trnsim.nki.isa.select import *  # noqa: F401,F403
from trnsim.nki.isa.engines import *  # noqa: F401,F403
from trnsim.nki.isa.registers import *  # noqa: F401,F403
from trnsim.nki.isa.random import *  # noqa: F401,F403
from trnsim.nki.isa.gather import *  # noqa: F401,F403
from trnsim.nki.isa.sort import *  # noqa: F401,F403
from trnsim.nki.isa.scan import *  # noqa: F401,F403
from trnsim.nki.isa.fused import *  # noqa: F401,F403
from trnsim.nki.isa.dma_transform import *  # noqa: F401,F403
from trnsim.nki.isa.mx import *  # noqa: F401,F403
from trnsim.nki.isa.sync import *  # noqa: F401,F403

__all__ = sorted(n for n, v in globals().items() if not n.startswith("_") and not isinstance(v, type(__import__("sys"))))
