"""What the compiled kernels are built with: ``njit`` (how every kernel is compiled), the record
formats' numbers, and ``prefetch(buf, i)``: ask the processor for the cache line holding ``buf[i]``.

This module imports numba: only the kernels (``walk_jit``, ``decode_jit``) import it, and
``jit.kernels`` imports them.

A loop that visits records scattered through a file waits for memory at
every record (~100 ns on this machine) unless the processor is told early
which lines will be needed. A read would wait too; a prefetch (LLVM's
``llvm.prefetch``) does not: the line arrives while the loop works on the
records before it. ``decode_jit`` and ``walk_jit`` prefetch the record a few
records ahead of the one they read, which halves their time. The result
never depends on it.
"""
from __future__ import annotations

import numba
from llvmlite import ir
from numba.core import cgutils, types
from numba.extending import intrinsic

from .formats import RECORD_FORMATS

__all__ = ["njit", "prefetch", "PCAP", "PCAPNG"]

PCAP, PCAPNG = RECORD_FORMATS["pcap"], RECORD_FORMATS["pcapng"]


def njit(func):
    """Compile ``func`` with numba when first called: no GIL held (``read_capture`` decodes one
    window in a thread while the next is scanned), machine code kept on disk. (numba raises
    RuntimeError here when no cache directory is writable: ``kernels`` then gives None.)"""
    return numba.njit(nogil=True, cache=True)(func)


@intrinsic
def prefetch(typingctx, buf, i):
    def codegen(context, builder, signature, args):
        array = context.make_array(signature.args[0])(context, builder, args[0])
        byte_ptr = ir.IntType(8).as_pointer()
        at = builder.bitcast(builder.gep(array.data, [args[1]]), byte_ptr)
        i32 = ir.IntType(32)
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(ir.VoidType(), [byte_ptr, i32, i32, i32]),
                                            "llvm.prefetch.p0i8")
        # read (0), keep in every cache level (3), data not instructions (1); never faults
        builder.call(fn, [at, ir.Constant(i32, 0), ir.Constant(i32, 3), ir.Constant(i32, 1)])
        return context.get_dummy_value()
    return types.void(buf, i), codegen
