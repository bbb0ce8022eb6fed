"""Refused PATH searches, for integration/execwalk_test.go.

PATH names directories that each hold an executable tctool; exec is
refused, so each search (subprocess, os.execvp) tries every directory, each
try a refused execve(2). Each argument is one action:

    subprocess   subprocess.run(["tctool"]) (the search runs in the child)
    execvp       os.execvp("tctool", ...) in this process
    write        open a file outside the sandbox for writing

Prints "result: ACTION:ERRNO ..." in order.
"""
import errno
import os
import subprocess
import sys

out = []
for how in sys.argv[1:]:
    try:
        if how == "subprocess":
            subprocess.run(["tctool"])
        elif how == "execvp":
            os.execvp("tctool", ["tctool"])
        elif how == "write":
            open("/etc/tracecell-path-search-probe", "w")
        else:
            sys.exit("path_search.py: unknown action %r" % how)
        out.append(how + ":ran")
    except OSError as e:
        out.append("%s:%s" % (how, errno.errorcode.get(e.errno, e.errno)))
print("result: " + " ".join(out))
