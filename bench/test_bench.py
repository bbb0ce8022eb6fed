"""Unit tests of bench.py's statistics (run by `make unit`)."""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402


class PairedTest(unittest.TestCase):
    def test_ratios_within_rounds(self):
        self.assertEqual(bench.paired_ratios([2, 3, 8], [1, 3, 4]), [2, 1, 2])
        # A failed or missing run (0) is skipped, not divided by.
        self.assertEqual(bench.paired_ratios([2, 0, 8], [1, 3, 0]), [2])

    def test_drift_cancels(self):
        # The machine runs at half speed in rounds 2 and 4: every mode of
        # those rounds takes twice as long. The ratio of the medians moves
        # with which rounds are slow; the paired ratio stays 1.10.
        floor = [100, 200, 100, 200, 200]
        tc = [110, 220, 110, 220, 220]
        self.assertAlmostEqual(sorted(bench.paired_ratios(tc, floor))[2], 1.10)
        tc_shifted = [220, 110, 220, 110, 110]  # the slow rounds fell elsewhere
        self.assertNotAlmostEqual(sorted(tc_shifted)[2] / sorted(floor)[2], 1.10)

    def test_geomean_and_interval(self):
        g, lo, hi = bench.paired_geomean([[1.0, 1.0, 1.0], [4.0, 4.0, 4.0]])
        self.assertAlmostEqual(g, 2.0)
        self.assertAlmostEqual(lo, 2.0)
        self.assertAlmostEqual(hi, 2.0)
        rounds = [[1.0, 1.2, 0.9, 1.1, 1.3], [1.05, 0.95, 1.0, 1.2, 1.1]]
        g, lo, hi = bench.paired_geomean(rounds)
        self.assertLessEqual(lo, g)
        self.assertLessEqual(g, hi)
        self.assertLess(lo, hi)
        self.assertEqual(bench.paired_geomean(rounds), (g, lo, hi))  # seeded
        self.assertIsNone(bench.paired_geomean([[], None]))
        # Too few rounds for an interval.
        self.assertEqual(bench.paired_geomean([[1.0, 4.0]]), (2.5, None, None))



class StageTest(unittest.TestCase):
    """stage_binaries: every tracecell binary runs from a copy in one directory."""

    def setUp(self):
        import tempfile
        self.d = tempfile.mkdtemp(prefix="bench-stage-test-")
        self.addCleanup(__import__("shutil").rmtree, self.d, True)
        self.saved = dict(bench.COMPARE_BINS)
        self.addCleanup(lambda: (bench.COMPARE_BINS.clear(), bench.COMPARE_BINS.update(self.saved)))

    def prog(self, name, body):
        p = os.path.join(self.d, name)
        with open(p, "w") as f:
            f.write("#!/bin/sh\n" + body + "\n")
        os.chmod(p, 0o755)
        return p

    def bench_for(self, tc):
        args = type("A", (), {"python": sys.executable, "tracecell": tc, "modes": [],
                              "disk_dir": self.d})()
        return bench.Bench(args)

    def test_copies(self):
        tc = self.prog("tc", "echo tracecell version new")
        old = self.prog("old", "echo tracecell version old")
        bench.COMPARE_BINS.clear()
        bench.COMPARE_BINS["cmp1"] = old
        b = self.bench_for(tc)
        b.stage_binaries()
        self.assertNotEqual(b.tc, tc)
        self.assertEqual(os.path.dirname(b.tc), b.bindir)
        self.assertEqual(os.path.dirname(bench.COMPARE_BINS["cmp1"]), b.bindir)
        for orig, staged in [(tc, b.tc), (old, bench.COMPARE_BINS["cmp1"])]:
            with open(orig, "rb") as f1, open(staged, "rb") as f2:
                self.assertEqual(f1.read(), f2.read())

    def test_falls_back_when_the_copies_do_not_run(self):
        tc = self.prog("tc", "exit 3")
        bench.COMPARE_BINS.clear()
        b = self.bench_for(tc)
        b.stage_binaries()
        self.assertEqual(b.tc, tc)


if __name__ == "__main__":
    unittest.main()
