"""multiprocessing.shared_memory under tracecell (integration/fsops_test.go).

Creates a segment, attaches to it by name, unlinks it, then unlinks a name
that does not exist (what the resource tracker does at exit for a segment a
child already unlinked): FileNotFoundError, as on a bare system, not a
PermissionError and a reported denial.
"""
import _posixshmem
from multiprocessing import shared_memory

s = shared_memory.SharedMemory(create=True, size=4096)
s.buf[0] = 7
t = shared_memory.SharedMemory(name=s.name)
assert t.buf[0] == 7
t.close()
s.close()
s.unlink()
try:
    _posixshmem.shm_unlink(s._name)
except FileNotFoundError:
    print("gone: FileNotFoundError")
except OSError as e:
    print("gone: %s" % type(e).__name__)
print("done")
