"""Run 1 of the --trace/--report link test (integration/outputs_test.go).

Plants, in the working directory (the sandbox), symlinks that a later
tracecell run could be told to write its own files through:

    argv[1] NAME=TARGET ...   os.symlink(TARGET, NAME)

Creating a symlink inside a writable root is allowed whatever its target:
it is the next write through it that the policy checks, and tracecell's
own writes (the trace, the report) are not the tree's.
"""
import os
import sys

for spec in sys.argv[1:]:
    name, target = spec.split("=", 1)
    os.symlink(target, name)
    print("planted", name, "->", target)
