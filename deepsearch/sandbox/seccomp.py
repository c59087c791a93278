"""The seccomp filter the sandboxed interpreter installs on itself before the code runs.

Built here, in the parent, as the raw classic-BPF program the kernel takes
(``struct sock_filter`` entries: u16 code, u8 jt, u8 jf, u32 k); the child receives it
as hex in its request and hands it to ``prctl(PR_SET_SECCOMP)`` (``child.py``), so the
child needs no seccomp library and the program is testable here as plain bytes.

What it denies (``EPERM``; ``clone3`` gets ``ENOSYS`` so the C library falls back to
``clone``, whose flags a classic filter can read):

- new programs and processes: ``execve``/``execveat``, ``fork``/``vfork``, and ``clone``
  without ``CLONE_THREAD`` (threads still work): no shell, no helper binaries, no fork
  bombs, even from native code that got past the audit hook;
- sockets of every family (the network namespace is empty anyway);
- every way out of or around the namespaces: ``unshare``, ``setns``, mounts and the new
  mount API, ``pivot_root``, ``chroot``, ``open_by_handle_at``;
- reaching other processes: ``ptrace``, ``process_vm_*``, ``pidfd_getfd``, ``kcmp``;
- kernel attack surface a calculator never needs: keyrings, ``bpf``, ``perf_event_open``,
  ``userfaultfd``, ``io_uring`` (its requests bypass seccomp), module and kexec loading,
  ``mknod``, ``personality``, ``syslog``, terminal input injection (``ioctl TIOCSTI``).

A syscall from another ABI than the one the filter was built for (x86_64's ``int 0x80``
32-bit entry, the x32 ABI) kills the process: those tables have other numbers.
"""

from __future__ import annotations

import platform
import struct

# Classic BPF opcodes (linux/filter.h) and seccomp return values (linux/seccomp.h).
_LD_W_ABS = 0x20  # BPF_LD | BPF_W | BPF_ABS
_JEQ_K = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
_JSET_K = 0x45  # BPF_JMP | BPF_JSET | BPF_K
_JGE_K = 0x35  # BPF_JMP | BPF_JGE | BPF_K
_RET_K = 0x06  # BPF_RET | BPF_K
_ALLOW = 0x7FFF0000
_KILL_PROCESS = 0x80000000
_ERRNO = 0x00050000
_EPERM, _ENOSYS = 1, 38
_CLONE_THREAD = 0x00010000
_TIOCSTI = 0x5412
_X32_BIT = 0x40000000

# seccomp_data offsets: nr (int), arch (u32), ip (u64), args[6] (u64, little-endian here).
_NR, _ARCH, _ARG0_LOW, _ARG1_LOW = 0, 4, 16, 24

_DENIED = (
    "execve execveat fork vfork socket socketpair unshare setns mount umount2 pivot_root"
    " chroot open_tree move_mount fsopen fsconfig fsmount fspick mount_setattr"
    " open_by_handle_at name_to_handle_at ptrace process_vm_readv process_vm_writev"
    " pidfd_getfd kcmp process_madvise keyctl add_key request_key bpf perf_event_open"
    " userfaultfd io_uring_setup io_uring_enter io_uring_register kexec_load"
    " kexec_file_load init_module finit_module delete_module reboot swapon swapoff acct"
    " quotactl mknod mknodat personality syslog uselib"
).split()

# Syscall numbers per ABI (from the kernel's tables; aarch64 uses the generic table,
# which has no fork, vfork, mknod or uselib).
_TABLES: dict[str, tuple[int, dict[str, int]]] = {
    "x86_64": (
        0xC000003E,  # AUDIT_ARCH_X86_64
        {
            "execve": 59,
            "execveat": 322,
            "fork": 57,
            "vfork": 58,
            "clone": 56,
            "clone3": 435,
            "ioctl": 16,
            "socket": 41,
            "socketpair": 53,
            "unshare": 272,
            "setns": 308,
            "mount": 165,
            "umount2": 166,
            "pivot_root": 155,
            "chroot": 161,
            "open_tree": 428,
            "move_mount": 429,
            "fsopen": 430,
            "fsconfig": 431,
            "fsmount": 432,
            "fspick": 433,
            "mount_setattr": 442,
            "open_by_handle_at": 304,
            "name_to_handle_at": 303,
            "ptrace": 101,
            "process_vm_readv": 310,
            "process_vm_writev": 311,
            "pidfd_getfd": 438,
            "kcmp": 312,
            "process_madvise": 440,
            "keyctl": 250,
            "add_key": 248,
            "request_key": 249,
            "bpf": 321,
            "perf_event_open": 298,
            "userfaultfd": 323,
            "io_uring_setup": 425,
            "io_uring_enter": 426,
            "io_uring_register": 427,
            "kexec_load": 246,
            "kexec_file_load": 320,
            "init_module": 175,
            "finit_module": 313,
            "delete_module": 176,
            "reboot": 169,
            "swapon": 167,
            "swapoff": 168,
            "acct": 163,
            "quotactl": 179,
            "mknod": 133,
            "mknodat": 259,
            "personality": 135,
            "syslog": 103,
            "uselib": 134,
        },
    ),  # fmt: skip
    "aarch64": (
        0xC00000B7,  # AUDIT_ARCH_AARCH64
        {
            "execve": 221,
            "execveat": 281,
            "clone": 220,
            "clone3": 435,
            "ioctl": 29,
            "socket": 198,
            "socketpair": 199,
            "unshare": 97,
            "setns": 268,
            "mount": 40,
            "umount2": 39,
            "pivot_root": 41,
            "chroot": 51,
            "open_tree": 428,
            "move_mount": 429,
            "fsopen": 430,
            "fsconfig": 431,
            "fsmount": 432,
            "fspick": 433,
            "mount_setattr": 442,
            "open_by_handle_at": 265,
            "name_to_handle_at": 264,
            "ptrace": 117,
            "process_vm_readv": 270,
            "process_vm_writev": 271,
            "pidfd_getfd": 438,
            "kcmp": 272,
            "process_madvise": 440,
            "keyctl": 219,
            "add_key": 217,
            "request_key": 218,
            "bpf": 280,
            "perf_event_open": 241,
            "userfaultfd": 282,
            "io_uring_setup": 425,
            "io_uring_enter": 426,
            "io_uring_register": 427,
            "kexec_load": 104,
            "kexec_file_load": 294,
            "init_module": 105,
            "finit_module": 273,
            "delete_module": 106,
            "reboot": 142,
            "swapon": 224,
            "swapoff": 225,
            "acct": 89,
            "quotactl": 60,
            "mknodat": 33,
            "personality": 92,
            "syslog": 116,
        },
    ),  # fmt: skip
}


def _insn(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("<HBBI", code, jt, jf, k)


def machine() -> str:
    """This machine's ABI name as the tables key it ("amd64" and "arm64" aliased)."""
    name = platform.machine().lower()
    return {"amd64": "x86_64", "arm64": "aarch64"}.get(name, name)


def supported(arch: str | None = None) -> bool:
    return (arch or machine()) in _TABLES


def syscall_numbers(arch: str | None = None) -> dict[str, int]:
    """Name -> number for ``arch`` (tests run the filter's logic against these)."""
    return dict(_TABLES[arch or machine()][1])


def build_filter(arch: str | None = None) -> bytes:
    """The filter program for ``arch`` (default: this machine's), as the kernel reads it.

    Raises:
        KeyError: no syscall table for that ABI (the sandbox then fails closed).
    """
    audit_arch, numbers = _TABLES[arch or machine()]
    denied = [numbers[name] for name in _DENIED if name in numbers]
    # Layout, each jump relative to the next instruction:
    #   0 load arch; 1 arch ok? ; 2 kill ; 3 load nr ; 4 x32 bit? -> kill
    #   then per denied number: jeq -> deny ; clone -> thread check ; clone3 -> enosys ;
    #   ioctl -> TIOCSTI check ; allow ; deny ; enosys ; kill(x32)
    body: list[bytes] = []
    tail_labels = ("allow", "deny", "enosys", "kill")
    # Instructions before the tail are collected with symbolic targets, resolved below.
    symbolic: list[tuple[int, int, str | int | None, str | int | None]] = []
    symbolic.append((_LD_W_ABS, _ARCH, None, None))
    symbolic.append((_JEQ_K, audit_arch, 1, 0))  # equal: skip the kill
    symbolic.append((_RET_K, _KILL_PROCESS, None, None))
    symbolic.append((_LD_W_ABS, _NR, None, None))
    symbolic.append((_JGE_K, _X32_BIT, "kill", 0))
    for number in denied:
        symbolic.append((_JEQ_K, number, "deny", 0))
    symbolic.append((_JEQ_K, numbers["clone3"], "enosys", 0))
    symbolic.append((_JEQ_K, numbers["clone"], 0, 2))  # not clone: skip its check
    symbolic.append((_LD_W_ABS, _ARG0_LOW, None, None))
    symbolic.append((_JSET_K, _CLONE_THREAD, "allow", "deny"))
    symbolic.append((_JEQ_K, numbers["ioctl"], 0, "allow"))
    symbolic.append((_LD_W_ABS, _ARG1_LOW, None, None))
    symbolic.append((_JEQ_K, _TIOCSTI, "deny", "allow"))
    start = len(symbolic)
    where = {label: start + i for i, label in enumerate(tail_labels)}
    for index, (code, k, jt, jf) in enumerate(symbolic):

        def offset(target: str | int | None, index: int = index) -> int:
            if target is None:
                return 0
            if isinstance(target, int):
                return target
            return where[target] - index - 1

        body.append(_insn(code, k, offset(jt), offset(jf)))
    body.append(_insn(_RET_K, _ALLOW))
    body.append(_insn(_RET_K, _ERRNO | _EPERM))
    body.append(_insn(_RET_K, _ERRNO | _ENOSYS))
    body.append(_insn(_RET_K, _KILL_PROCESS))
    return b"".join(body)


def evaluate(program: bytes, nr: int, arch: int, args: tuple[int, ...] = ()) -> int:
    """Run ``program`` on one syscall the way the kernel would; the return value.

    A small interpreter of the few opcodes ``build_filter`` emits, so tests can check the
    program's decisions (and jump offsets) without installing it.
    """
    words = [*args, 0, 0, 0, 0, 0, 0][:6]
    data = struct.pack("<iIQ6Q", nr, arch, 0, *(w & (2**64 - 1) for w in words))
    insns = [struct.unpack("<HBBI", program[i : i + 8]) for i in range(0, len(program), 8)]
    acc, pc = 0, 0
    while True:
        code, jt, jf, k = insns[pc]
        pc += 1
        if code == _LD_W_ABS:
            acc = struct.unpack_from("<I", data, k)[0]
        elif code == _RET_K:
            return k
        elif code in (_JEQ_K, _JSET_K, _JGE_K):
            hit = {_JEQ_K: acc == k, _JSET_K: acc & k != 0, _JGE_K: acc >= k}[code]
            pc += jt if hit else jf
        else:
            raise ValueError(f"opcode {code:#x} not understood")
