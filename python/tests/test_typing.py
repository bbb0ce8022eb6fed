"""The package type-checks under mypy --strict and parses as Python 3.8."""
from __future__ import annotations

import ast
import os
import subprocess
import sys
import unittest

PKG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tracecell")


class TypingTest(unittest.TestCase):
    def test_mypy_strict(self) -> None:
        p = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--cache-dir", os.devnull, PKG],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
        self.assertEqual(p.returncode, 0, "mypy --strict failed (pip install -r python/requirements-test.txt):\n" + p.stdout)

    def test_python38_syntax(self) -> None:
        # requires-python is >=3.8: no match, no parenthesized context managers, no except*.
        names = sorted(n for n in os.listdir(PKG) if n.endswith(".py"))
        self.assertIn("client.py", names)
        for name in names:
            with self.subTest(file=name):
                with open(os.path.join(PKG, name)) as f:
                    src = f.read()
                ast.parse(src, name, feature_version=(3, 8))
                # Annotations are strings at runtime (PEP 563), so `X | Y` and list[int] in them are fine on 3.8.
                self.assertIn("from __future__ import annotations", src)


if __name__ == "__main__":
    unittest.main()
