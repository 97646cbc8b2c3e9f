"""What an XPlane file's HLO modules say of their collectives: kind, bytes, group.

XLA stores each module compiled while the profiler ran as a serialized
``HloProto`` (``xla/service/hlo.proto``) in a stat ``Hlo Proto`` of the event
metadata of the plane ``/host:metadata``, named ``<module>(<program id>)``.
Fields read (numbers as in ``hlo.proto`` and ``xla_data.proto``):

- ``HloProto``: hlo_module 1; ``HloModuleProto``: name 1, computations 3;
  ``HloComputationProto``: instructions 2;
- ``HloInstructionProto``: name 1, opcode 2, shape 3, id 35, operand_ids 36,
  replica_groups 49 (the older field), collective_device_list 87
  (``CollectiveDeviceListProto``: replica_groups 1, iota_replica_group_list 2,
  ``IotaReplicaGroupListProto``: num_replica_groups 1, num_devices_per_group 2);
- ``ShapeProto``: element_type 2 (``PrimitiveType``), dimensions 3,
  tuple_shapes 4; ``ReplicaGroup``: replica_ids 1.

Bytes follow nccl-tests as :mod:`cctviz.model.collectives` says (the whole
output of an all-gather, the whole input otherwise): an ``all-reduce``'s
result, an ``all-gather``'s result, a ``reduce-scatter``'s and an
``all-to-all``'s operands, a ``collective-permute``'s result, a
``collective-broadcast``'s result. The asynchronous pairs (``*-start`` and
``*-done``) are one collective: the ``-start`` carries it (its result is a tuple
of operand and result buffers: the buffer the kind names is taken), the
``-done`` is the wait (kind ``comm``, no bytes). A ``collective-permute``'s
start takes its operand's bytes (its result tuple holds flags beside the buffers).

>>> SIZES[11], OPCODES["all-reduce-start"]
(32, 'all_reduce')
"""

from __future__ import annotations

from dataclasses import dataclass

from ._protobuf import LEN, VARINT, fields, packed_varints, signed

#: PrimitiveType -> bits per element (xla_data.proto)
SIZES = {
    1: 8,  # PRED
    2: 8, 3: 16, 4: 32, 5: 64,  # S8 S16 S32 S64
    6: 8, 7: 16, 8: 32, 9: 64,  # U8 U16 U32 U64
    10: 16, 11: 32, 12: 64, 16: 16,  # F16 F32 F64 BF16
    15: 64, 18: 128,  # C64 C128
    19: 8, 20: 8, 23: 8, 24: 8, 25: 8, 28: 8, 29: 8, 33: 8,  # the 8-bit floats
    21: 4, 22: 4, 26: 2, 27: 2, 32: 4,  # S4 U4 S2 U2 F4E2M1FN
    30: 1, 31: 1,  # S1 U1
    13: 0, 14: 0, 17: 0,  # TUPLE OPAQUE TOKEN
}  # fmt: skip

#: HLO opcode -> collective kind (cctviz.model.collectives' names)
OPCODES = {
    "all-reduce": "all_reduce",
    "all-reduce-start": "all_reduce",
    "all-gather": "all_gather",
    "all-gather-start": "all_gather",
    "reduce-scatter": "reduce_scatter",
    "all-to-all": "all_to_all",
    "ragged-all-to-all": "all_to_all",
    "collective-permute": "collective_permute",
    "collective-permute-start": "collective_permute",
    "collective-broadcast": "broadcast",
}
#: the ends of asynchronous collectives: waits, not transfers
DONE = {
    "all-reduce-done": "all_reduce",
    "all-gather-done": "all_gather",
    "collective-permute-done": "collective_permute",
    "async-done": None,
}
#: kinds whose bytes are the operands' (the whole input); the others: the result's
_INPUT_KINDS = {"reduce_scatter", "all_to_all"}


@dataclass(frozen=True)
class Instruction:
    """One HLO instruction of a module: its opcode and, for a collective, its kind,
    bytes (nccl-tests' size, per device) and group size (None: every device of
    the program)."""

    opcode: str
    kind: str | None = None
    nbytes: float | None = None
    group_size: int | None = None


def _shape(raw: bytes) -> list[int]:
    """The bytes of each array of a shape (a tuple: of each element)."""
    etype, dims, tuples = 0, [], []
    for f, wt, v in fields(raw):
        if f == 2 and wt == VARINT:
            etype = v
        elif f == 3:
            dims += packed_varints(v) if wt == LEN else [v]
        elif f == 4 and wt == LEN:
            tuples.append(v)
    if tuples:
        return [b for t in tuples for b in _shape(t)]
    n = 1
    for d in dims:
        n *= signed(d)
    bits = SIZES.get(etype)
    return [-1 if bits is None else (n * bits + 7) // 8]


def _group_size(groups: list[bytes], device_list: bytes | None) -> int | None:
    """The size of the instruction's first replica group (all groups are the same
    size in SPMD programs); None where it names none (every device)."""
    if device_list is not None:
        for f, wt, v in fields(device_list):
            if f == 1 and wt == LEN:
                groups = [*groups, v]
            elif f == 2 and wt == LEN:
                iota = {ff: vv for ff, ww, vv in fields(v) if ww == VARINT}
                if iota.get(2):
                    return int(iota[2])
    for g in groups:
        ids = [
            x for f, wt, v in fields(g) if f == 1 for x in (packed_varints(v) if wt == LEN else [v])
        ]
        if ids:
            return len(ids)
    return None


def _instruction(
    raw: bytes,
) -> tuple[str, int, str, list[int], list[int], list[bytes], bytes | None]:
    name, op, iid, shape, operands, groups, device_list = "", "", 0, [], [], [], None
    for f, wt, v in fields(raw):
        if f == 1 and wt == LEN:
            name = bytes(v).decode("utf-8", "replace")
        elif f == 2 and wt == LEN:
            op = bytes(v).decode("utf-8", "replace")
        elif f == 3 and wt == LEN:
            shape = _shape(v)
        elif f == 35 and wt == VARINT:
            iid = v
        elif f == 36:
            operands += packed_varints(v) if wt == LEN else [v]
        elif f == 49 and wt == LEN:
            groups.append(v)
        elif f == 87 and wt == LEN:
            device_list = v
    return name, iid, op, shape, operands, groups, device_list


def module_collectives(hlo_proto: bytes) -> tuple[str, dict[str, Instruction]]:
    """The module's name and, per instruction name, its :class:`Instruction`
    (every instruction: its opcode; a collective: its kind, bytes, group)."""
    module = next((v for f, wt, v in fields(hlo_proto) if f == 1 and wt == LEN), b"")
    name, raw = "", []
    for f, wt, v in fields(module):
        if f == 1 and wt == LEN:
            name = bytes(v).decode("utf-8", "replace")
        elif f == 3 and wt == LEN:
            raw += [i for ff, ww, i in fields(v) if ff == 2 and ww == LEN]
    parsed = [_instruction(r) for r in raw]
    shape_of = {iid: shape for _, iid, _, shape, _, _, _ in parsed}
    out: dict[str, Instruction] = {}
    for nm, _, op, shape, operands, groups, device_list in parsed:
        kind = OPCODES.get(op)
        if kind is None:
            out[nm] = Instruction(op, DONE.get(op) if op in DONE else None)
            continue
        if kind in _INPUT_KINDS or op == "collective-permute-start":
            sizes = [b for o in operands for b in shape_of.get(o, [-1])]
        elif op == "all-gather-start" and len(shape) > 1:  # (operands..., results...)
            sizes = shape[len(shape) // 2 :]
        else:
            sizes = shape
        nbytes = None if not sizes or min(sizes) < 0 else float(sum(sizes))
        out[nm] = Instruction(op, kind, nbytes, _group_size(groups, device_list))
    return name, out


__all__ = ["DONE", "OPCODES", "SIZES", "Instruction", "module_collectives"]
