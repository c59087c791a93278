"""The seccomp program's decisions, read by running it as the kernel would (no install):
every denied syscall refused, threads allowed and processes not, another ABI killed."""

from __future__ import annotations

import pytest

from deepsearch.sandbox import seccomp

ALLOW, KILL = 0x7FFF0000, 0x80000000
EPERM, ENOSYS = 0x00050000 | 1, 0x00050000 | 38
ARCHES = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
CLONE_THREAD, CLONE_NEWUSER = 0x00010000, 0x10000000
DENIED = [
    "execve", "execveat", "fork", "vfork", "socket", "socketpair", "unshare", "setns",
    "mount", "umount2", "pivot_root", "chroot", "open_tree", "move_mount", "fsopen",
    "fsconfig", "fsmount", "fspick", "mount_setattr", "open_by_handle_at",
    "name_to_handle_at", "ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd",
    "kcmp", "process_madvise", "keyctl", "add_key", "request_key", "bpf", "perf_event_open",
    "userfaultfd", "io_uring_setup", "io_uring_enter", "io_uring_register", "kexec_load",
    "kexec_file_load", "init_module", "finit_module", "delete_module", "reboot", "swapon",
    "swapoff", "acct", "quotactl", "mknod", "mknodat", "personality", "syslog", "uselib",
]  # fmt: skip


@pytest.mark.parametrize("arch", sorted(ARCHES))
def test_every_denied_syscall_is_refused_and_others_allowed(arch: str) -> None:
    program, numbers, audit = (
        seccomp.build_filter(arch),
        seccomp.syscall_numbers(arch),
        ARCHES[arch],
    )
    for name in DENIED:
        if name in numbers:  # aarch64's table has no fork, vfork, mknod or uselib
            assert seccomp.evaluate(program, numbers[name], audit) == EPERM, name
    assert seccomp.evaluate(program, numbers["clone3"], audit) == ENOSYS  # libc falls back
    denied = {numbers[n] for n in DENIED if n in numbers} | {numbers["clone3"]}
    for nr in set(range(450)) - denied - {numbers["clone"], numbers["ioctl"]}:
        assert seccomp.evaluate(program, nr, audit) == ALLOW, nr  # read, write, mmap ...


@pytest.mark.parametrize("arch", sorted(ARCHES))
def test_threads_are_allowed_and_processes_not(arch: str) -> None:
    program, clone, audit = (
        seccomp.build_filter(arch),
        seccomp.syscall_numbers(arch)["clone"],
        ARCHES[arch],
    )
    assert seccomp.evaluate(program, clone, audit, (0x3D0F00 | CLONE_THREAD,)) == ALLOW
    assert seccomp.evaluate(program, clone, audit, (0x11,)) == EPERM  # fork() by clone
    assert seccomp.evaluate(program, clone, audit, (CLONE_NEWUSER,)) == EPERM


@pytest.mark.parametrize("arch", sorted(ARCHES))
def test_terminal_injection_is_refused_and_other_ioctls_allowed(arch: str) -> None:
    program, ioctl, audit = (
        seccomp.build_filter(arch),
        seccomp.syscall_numbers(arch)["ioctl"],
        ARCHES[arch],
    )
    assert seccomp.evaluate(program, ioctl, audit, (0, 0x5412)) == EPERM  # TIOCSTI
    assert seccomp.evaluate(program, ioctl, audit, (0, 0x5401)) == ALLOW  # TCGETS


def test_another_abi_is_killed() -> None:
    program = seccomp.build_filter("x86_64")
    assert seccomp.evaluate(program, 11, 0x40000003) == KILL  # i386's execve via int 0x80
    assert seccomp.evaluate(program, 0x40000000 | 59, ARCHES["x86_64"]) == KILL  # x32
    assert seccomp.evaluate(program, 0, ARCHES["aarch64"]) == KILL


def test_this_machine_has_a_table_and_an_unknown_one_fails_closed() -> None:
    assert seccomp.supported()  # CI's machine: the sandbox would be off without one
    assert not seccomp.supported("riscv64")
    with pytest.raises(KeyError):
        seccomp.build_filter("riscv64")


@pytest.mark.parametrize(
    ("reported", "table"),
    [("x86_64", "x86_64"), ("AMD64", "x86_64"), ("arm64", "aarch64"), ("aarch64", "aarch64"),
     ("riscv64", "riscv64")],
)  # fmt: skip
def test_the_machine_names_other_systems_use_find_the_same_table(
    reported: str, table: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(seccomp.platform, "machine", lambda: reported)
    assert seccomp.machine() == table


def test_only_the_arguments_the_rules_name_are_read() -> None:
    program, numbers, audit = (
        seccomp.build_filter("x86_64"),
        seccomp.syscall_numbers(),
        ARCHES["x86_64"],
    )
    # TIOCSTI's number as another syscall's argument is nothing (read(fd, buf=0x5412)).
    assert seccomp.evaluate(program, 0, audit, (3, 0x5412)) == ALLOW
    assert seccomp.evaluate(program, numbers["ioctl"], audit, (0, 0x5413)) == ALLOW
    assert seccomp.evaluate(program, numbers["ioctl"], audit, (0, -1)) == ALLOW
    # The x32 bit itself, and a negative number (-1 as the kernel's u32), are another ABI.
    assert seccomp.evaluate(program, 0x40000000, audit) == KILL
    assert seccomp.evaluate(program, -1, audit) == KILL


def test_the_interpreter_refuses_an_opcode_it_does_not_know() -> None:
    with pytest.raises(ValueError, match="opcode 0x99 not understood"):
        seccomp.evaluate(seccomp._insn(0x99, 0), 0, ARCHES["x86_64"])
