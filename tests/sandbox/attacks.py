"""Hostile programs for the red-team suite: each tries to reach a canary.

Every snippet runs inside the sandbox with these names bound: ``P`` (a file only the
user may read, holding the canary), ``D`` (its folder), ``W`` (a file outside the work
directory the program must not create or change), ``PORT`` (a loopback listener that
counts connections), ``PARENT_ENV`` (the name of a variable set only in the parent),
``MARK`` (a name to create in the host's shared folders) and ``leak(text)`` (reports
whatever it read). The suite runs them with the audit hook and without it, where only
the kernel's layers stand between them and the canaries.

``BATCH`` snippets are run one after another in one interpreter; ``KILLERS`` each get a
run of their own (they end or exhaust the interpreter).
"""

from __future__ import annotations

_READS = {
    "open": "leak(open(P).read())",
    "os.open": "import os\nfd = os.open(P, os.O_RDONLY)\nleak(os.read(fd, 999).decode())",
    "io.FileIO": "import io\nleak(io.FileIO(P).read().decode())",
    "_io.open": "import _io\nleak(_io.open(P).read())",
    "pathlib": "import pathlib\nleak(pathlib.Path(P).read_text())",
    "relative climb": "import os\nos.chdir('/')\nleak(open(P.lstrip('/')).read())",
    "dir_fd climb": (
        "import os\nzi = os.open('/usr/share/zoneinfo', os.O_RDONLY | os.O_DIRECTORY)\n"
        "fd = os.open('../../..' + P, os.O_RDONLY, dir_fd=zi)\nleak(os.read(fd, 999).decode())"
    ),
    "dir_fd chdir": (
        "import os\nos.makedirs('a/b/c/d/e', exist_ok=True)\nos.chdir('a/b/c/d/e')\n"
        "zi = os.open('/usr/share/zoneinfo', os.O_RDONLY | os.O_DIRECTORY)\n"
        "root = os.open('../../../../..', os.O_RDONLY | os.O_DIRECTORY, dir_fd=zi)\n"
        "leak(str(os.listdir(root)))\n"
        "fd = os.open(P.lstrip('/'), os.O_RDONLY, dir_fd=root)\nleak(os.read(fd, 999).decode())"
    ),
    "listdir fd": (
        "import os\nfd = os.open('/', os.O_RDONLY | os.O_DIRECTORY)\nleak(str(os.listdir(fd)))\n"
        "leak(str(os.listdir(D)))"
    ),
    "scandir": "import os\nleak(str([e.name for e in os.scandir(D)]))",
    "glob": "import glob\nleak(str(glob.glob(D + '/*')))",
    "shutil.copyfile": "import shutil\nshutil.copyfile(P, 'copy')\nleak(open('copy').read())",
    "linecache": "import linecache\nleak(linecache.getline(P, 1))",
    "tokenize.open": "import tokenize\nleak(tokenize.open(P).read())",
    "codecs.open": "import codecs\nleak(codecs.open(P).read())",
    "SourceFileLoader": (
        "import importlib.machinery as m\nleak(m.SourceFileLoader('x', P).get_data(P).decode())"
    ),
    "zipimport": "import zipimport\nzipimport.zipimporter(P)",
    "proc self root": "leak(open('/proc/self/root' + P).read())",
    "proc 1 root": "leak(open('/proc/1/root' + P).read())",
    "stat leaks existence": "import os\nos.stat(P)\nleak('exists:' + P)",
    "readlink": "import os\nleak(os.readlink('/proc/self/cwd'))\nleak(os.readlink(P))",
    "home ssh key": "import os\nleak(open(os.path.expanduser('~/.ssh/id_rsa')).read())",
    "another root": (
        "import os\nfor top in os.listdir('/'):\n"
        "    try:\n        leak(open('/' + top + P).read())\n    except OSError:\n        pass\n"
        "    for sub in ('', '/proc/1/root'):\n"
        "        try:\n            leak(open('/' + top + sub + P).read())\n"
        "        except OSError:\n            pass"
    ),
    "identity": "import os\nleak('uid=%d gid=%d' % (os.getuid(), os.getgid()))",
    "etc passwd": "leak(open('/etc/passwd').read())",
    "etc shadow": "leak(open('/etc/shadow').read())",
    "mmap": "import mmap\nf = open(P, 'rb')\nleak(mmap.mmap(f.fileno(), 0, access=1)[:].decode())",
    "sqlite3": "import sqlite3\nsqlite3.connect(P).execute('select 1')",
}

_NATIVE = {
    "ctypes system": "import ctypes\nctypes.CDLL(None).system(('cat ' + P + ' > got').encode())",
    "ctypes left in sys.modules": (
        "import sys\nc = sys.modules.get('ctypes') or sys.modules.get('_ctypes')\n"
        "c.CDLL(None).system(b'id > got') if c else None\nleak(open('got').read())"
    ),
    "ctypes types via subclasses": (
        "kinds = [k for k in object.__subclasses__() if k.__module__ == '_ctypes']\n"
        "import sys\nfor k in kinds:\n    sys.modules.setdefault('_ctypes_' + k.__name__, k)\n"
        "fn = [k for k in kinds if k.__name__ == 'CFuncPtr']\n"
        "fn[0](('system', None))(b'id') if fn else None"
    ),
    "dotted create_dynamic": (
        "import _imp, sys, importlib.machinery as m\n"
        "lib = [p for p in sys.path if p.endswith('lib-dynload')][0]\n"
        "so = lib + '/_posixsubprocess' + m.EXTENSION_SUFFIXES[0]\n"
        "mod = _imp.create_dynamic(m.ModuleSpec('x._posixsubprocess', None, origin=so))\n"
        "leak('loaded ' + str(mod))\n"
        "mod.fork_exec(['/bin/sh', '-c', 'cat ' + P + ' > got'], [b'/bin/sh'], True, (), "
        "None, None, -1, -1, -1, -1, -1, -1, -1, -1, False, False, 0, None, None, -1, -1, "
        "None, False)\nleak(open('got').read())"
    ),
    "create_builtin": (
        "import _imp, importlib.machinery as m, sys\n"
        "for name in sys.builtin_module_names:\n"
        "    if name in ('_posixsubprocess', '_socket', '_signal'):\n"
        "        leak('loaded ' + str(_imp.create_builtin(m.ModuleSpec(name, None))))"
    ),
    "import _posixsubprocess": "import _posixsubprocess",
    "subprocess": "import subprocess\nleak(subprocess.run(['cat', P], capture_output=True).stdout.decode())",
    "os.system": "import os\nos.system('cat ' + P + ' > got')\nleak(open('got').read())",
    "os.popen": "import os\nleak(os.popen('cat ' + P).read())",
    "os.execv": "import os\nos.execv('/bin/cat', ['cat', P])",
    "os.posix_spawn": "import os\nos.posix_spawn('/bin/sh', ['sh', '-c', 'id'], {})",
    "os.fork": "import os\npid = os.fork()\nos._exit(0) if pid == 0 else os.waitpid(pid, 0)",
    "pty.spawn": "import pty\npty.spawn(['/bin/sh', '-c', 'id'])",
    "multiprocessing": "import multiprocessing\nmultiprocessing.Process(target=print).start()",
    "marshal code": "import marshal\nmarshal.loads(b'c')",
    "code replace": "f = lambda: 0\nf.__code__ = f.__code__.replace(co_code=b'')",
    "gc objects": "import gc\nleak(str(len(gc.get_objects())))",
    "frame walk": "import sys\nf = sys._getframe()\nleak(str(f.f_back.f_globals.keys()))",
    "signal ignore xcpu": "import signal\nsignal.signal(signal.SIGXCPU, signal.SIG_IGN)",
    "new audit hook": "import sys\nsys.addaudithook(lambda *a: None)",
}

_NETWORK = {
    "socket": "import socket\nsocket.create_connection(('127.0.0.1', PORT), 1)",
    "_socket": "import _socket\ns = _socket.socket()\ns.connect(('127.0.0.1', PORT))",
    "ipv6": "import socket\nsocket.create_connection(('::1', PORT), 1)",
    "urllib": "import urllib.request\nurllib.request.urlopen(f'http://127.0.0.1:{PORT}/', timeout=1)",
    "http.client": (
        "import http.client\nc = http.client.HTTPConnection('127.0.0.1', PORT, timeout=1)\n"
        "c.request('GET', '/')"
    ),
    "asyncio": ("import asyncio\nasyncio.run(asyncio.open_connection('127.0.0.1', PORT))"),
    "unix socket": "import socket\ns = socket.socket(socket.AF_UNIX)\ns.connect('\\0x')",
    "socketpair": "import socket\nsocket.socketpair()",
    "curl": "import subprocess\nsubprocess.run(['curl', f'http://127.0.0.1:{PORT}/'])",
}

_PROCESSES = {
    "parent environ": ("import os\nleak(open(f'/proc/{os.getppid()}/environ').read())"),
    "every environ": (
        "import os\nfor p in os.listdir('/proc'):\n"
        "    if p.isdigit():\n        leak(open(f'/proc/{p}/environ', 'rb').read().decode('latin1'))"
    ),
    "every cmdline": (
        "import os\nfor p in os.listdir('/proc'):\n"
        "    if p.isdigit():\n        leak(open(f'/proc/{p}/cmdline', 'rb').read().decode('latin1'))"
    ),
    "own environ": "import os\nleak(str(dict(os.environ)))",
    "proc self environ": "leak(open('/proc/self/environ').read())",
    "other runs' cwd": (
        "import os\nfor p in os.listdir('/proc'):\n"
        "    if p.isdigit():\n        leak(str(os.listdir(f'/proc/{p}/cwd')))"
    ),
    "kill everything": "import os\nos.kill(-1, 9)",
    "ptrace": ("import ctypes\nctypes.CDLL(None).ptrace(16, __import__('os').getppid(), 0, 0)"),
    "tiocsti": "import fcntl, termios\nfcntl.ioctl(0, termios.TIOCSTI, b'x')",
}

_WRITES = {
    "append bashrc": "open(W, 'a').write('echo owned\\n')",
    "create outside": "import os\nos.close(os.open(W, os.O_CREAT | os.O_WRONLY))",
    "rename out": "open('x', 'w').write('x')\nimport os\nos.rename('x', W)",
    "symlink": "import os\nos.symlink(P, 'link')\nleak(open('link').read())",
    "hard link": "import os\nos.link(P, 'link2')\nleak(open('link2').read())",
    "tmp": "open('/tmp/' + MARK, 'w').write('x')",
    "dev shm": "open('/dev/shm/' + MARK, 'w').write('x')",
    "var tmp": "open('/var/tmp/' + MARK, 'w').write('x')",
    "mkfifo": "import os\nos.mkfifo('/tmp/' + MARK + '-fifo')",
    "mknod": "import os\nos.mknod('/tmp/' + MARK + '-node')",
    "copytree out": "import shutil, os\nos.mkdir('t')\nshutil.copytree('t', '/tmp/' + MARK + '-tree')",
    "chmod secret": "import os\nos.chmod(P, 0o777)",
    "utime secret": "import os\nos.utime(P, (0, 0))",
    "write system dir": "open('/usr/' + MARK, 'w').write('x')",
    "unshare": "import ctypes\nctypes.CDLL(None).unshare(0x10000000)",
}

BATCH: dict[str, str] = {**_READS, **_NATIVE, **_NETWORK, **_PROCESSES, **_WRITES}

KILLERS: dict[str, str] = {
    "fork bomb": "import os\nwhile True:\n    os.fork()",
    "thread bomb": (
        "import threading, time\nwhile True:\n"
        "    threading.Thread(target=time.sleep, args=(5,), daemon=True).start()"
    ),
    "memory bomb": "x = []\nwhile True:\n    x.append(' ' * 10**7)",
    # 20 MB: far past what is kept of it (tests/sandbox/test_sandbox.py runs one forever).
    "runaway output": "for _ in range(2000):\n    print('x' * 10000)",
    "disk filler": "f = open('big', 'wb')\nwhile True:\n    f.write(b'x' * 10**6)",
    "fd exhaustion": "fs = []\nwhile True:\n    fs.append(open('/dev/null'))",
    "kill the parent": "import os\nos.kill(os.getppid(), 9)",
    "deep recursion": "import sys\nsys.setrecursionlimit(10**5)\nf = lambda n: f(n + 1)\nf(0)",
}

HARNESS = """
import json, os
home = os.getcwd()
leaks = []
outcomes = {}
for name, snippet in data['attacks'].items():
    os.chdir(home)  # an attack that moved away does not weaken the next
    names = dict(data['names'])
    names['leak'] = leaks.append
    try:
        exec(snippet, names)
        outcomes[name] = 'ran'
    except BaseException as exc:
        outcomes[name] = (type(exc).__name__ + ': ' + str(exc))[:200]
result = json.dumps({'leaks': [str(x)[:2000] for x in leaks], 'outcomes': outcomes})
"""
