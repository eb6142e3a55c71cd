#!/usr/bin/env python3
"""rdma_suite_tally.py on a crafted console log: skip reasons in either quote style are read and
checked against the expected skips (by reason, or by test and reason), and a module whose skips
outnumber the reasons read is not passed."""
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))

LOG = """SUITE-BEGIN test_a
SUITE test_a | test_one (tests.test_a.A.test_one) ... ok
SUITE test_a | test_two (tests.test_a.A.test_two)
SUITE test_a | A docstring line. ... skipped "Device caps doesn't support X"
SUITE test_a | test_three (tests.test_a.A.test_three) ... skipped 'Feature Y is not supported'
SUITE test_a | test_four (tests.test_a.A.test_four) ... Traceback (most recent call last):
SUITE test_a | pyverbs.pyverbs_error.PyverbsRDMAError: Failed to close CQ. Errno: 9, Bad file descriptor
SUITE test_a | skipped 'Feature Y is not supported'
SUITE test_a | Ran 4 tests in 0.1s
SUITE test_a | OK (skipped=3)
SUITE-END test_a rc=0 seconds=1.0
"""


def tally(log, expected, function="pf"):
    with tempfile.TemporaryDirectory() as d:
        log_path, expected_path = os.path.join(d, "log"), os.path.join(d, "expected")
        open(log_path, "w").write(log)
        open(expected_path, "w").write(expected)
        run = subprocess.run([sys.executable, os.path.join(HERE, "rdma_suite_tally.py"), log_path, expected_path,
                              f"on the {function}", function], capture_output=True, text=True)
        return run.returncode, run.stdout


class Tally(unittest.TestCase):
    def test_both_quote_styles_are_checked(self):
        rc, out = tally(LOG, "Feature Y is not supported | why\n")
        self.assertEqual(rc, 1, out)
        self.assertIn("unexpected skip x1: Device caps doesn't support X", out)
        self.assertIn("2  Feature Y is not supported\n", out)  # test_four's reason read too, and expected

    def test_expected_by_reason_or_by_test(self):
        rc, out = tally(LOG, "test_two: doesn't support X | why\nFeature Y | why\n")
        self.assertEqual(rc, 0, out)
        rc, out = tally(LOG, "test_three: doesn't support X | why\nFeature Y | why\n")
        self.assertEqual(rc, 1, out)  # scoped to another test

    def test_expected_on_one_function_only(self):
        expected = "[vf] doesn't support X | why\nFeature Y | why\n"
        rc, out = tally(LOG, expected, "vf")
        self.assertEqual(rc, 0, out)
        rc, out = tally(LOG, expected, "pf")
        self.assertEqual(rc, 1, out)
        self.assertIn("unexpected skip x1: Device caps doesn't support X", out)
        rc, out = tally(LOG, "[vf] test_two: doesn't support X | why\nFeature Y | why\n", "vf")
        self.assertEqual(rc, 0, out)

    def test_a_skip_without_a_reason_read_fails_its_module(self):
        rc, out = tally(LOG.replace("OK (skipped=3)", "OK (skipped=4)"), "X | why\nFeature Y | why\n")
        self.assertEqual(rc, 1, out)
        self.assertIn("4 skips, 3 reasons read", out)


if __name__ == "__main__":
    unittest.main()
