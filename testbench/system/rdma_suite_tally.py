#!/usr/bin/env python3
"""Tallies rdma-core's test suite as run_rdma_suite.sh ran it in a guest (the console log): one row
per module (tests, pass, fail, error, skip, seconds) and the skip reasons, each checked against
the expected skips (a file of 'reason substring | why a ConnectX-6 Dx skips it too' lines; a line
'test_name: reason substring | why' expects that skip of that one test only, and a line
'[vf] reason substring | why' expects it only in a guest on that function, given as the fourth
argument). Exit status 1 when a module failed, errored, timed out or never ran, or a skip is not
expected."""
import re
import sys
from collections import Counter, OrderedDict


def parse(log_lines):
    modules = OrderedDict()
    for line in log_lines:
        m = re.match(r"^SUITE (\S+) \| (.*)$", line)
        if m:
            mod = modules.setdefault(m.group(1), {"lines": [], "rc": None, "seconds": 0.0})
            mod["lines"].append(m.group(2))
            continue
        m = re.match(r"^SUITE-END (\S+) rc=(\d+) seconds=([\d.]+)", line)
        if m:
            mod = modules.setdefault(m.group(1), {"lines": [], "rc": None, "seconds": 0.0})
            mod["rc"], mod["seconds"] = int(m.group(2)), float(m.group(3))
    rows = []
    for name, mod in modules.items():
        text = "\n".join(mod["lines"])
        # unittest -v names a test on its first line; a docstring puts "... skipped" on the next.
        skipped, test = [], ""
        for line in mod["lines"]:
            named = re.match(r"^(test_\w+) \(", line)
            if named:
                test = named.group(1)
            # unittest prints the reason's repr: in double quotes when it holds a single quote. A
            # test's stderr (pyverbs' ignored __dealloc__ errors) may split "skipped" from its "...".
            reason = re.search(r"""(?:\.\.\. |^)skipped (['"])(.*)\1$""", line)
            if reason:
                skipped.append((test, reason.group(2)))
        ran = re.search(r"^Ran (\d+) tests?", text, re.M)
        counts = Counter()
        for key in ("failures", "errors", "skipped", "expected failures", "unexpected successes"):
            found = re.findall(rf"{key}=(\d+)", text)
            if found:
                counts[key] = int(found[-1])
        row = {
            "module": name,
            "tests": int(ran.group(1)) if ran else 0,
            "fail": counts["failures"],
            "error": counts["errors"],
            "skip": counts["skipped"],
            "seconds": mod["seconds"],
            "rc": mod["rc"],
            "reasons": [reason for _, reason in skipped],
            "skipped": skipped,
            "status": "ok",
        }
        row["pass"] = row["tests"] - row["fail"] - row["error"] - row["skip"] - counts["expected failures"]
        if mod["rc"] == 124:
            row["status"] = "timeout"
        elif not ran:
            row["status"] = "did not run"
        elif row["fail"] or row["error"]:
            row["status"] = "failed"
        elif row["skip"] != len(skipped):  # a skip whose reason was not read cannot be checked
            row["status"] = f"{row['skip']} skips, {len(skipped)} reasons read"
        rows.append(row)
    return rows


def expected_skips(path):
    """(function or "" for any, test name or "" for any test, reason substring) triples."""
    out = []
    for line in open(path, encoding="utf-8"):
        line = line.strip()
        if line and not line.startswith("#"):
            pattern = line.split("|")[0].strip()
            function = re.match(r"^\[(\w+)\] (.*)$", pattern)
            pattern = function.group(2) if function else pattern
            scoped = re.match(r"^(test_\w+): (.*)$", pattern)
            test, text = (scoped.group(1), scoped.group(2)) if scoped else ("", pattern)
            out.append((function.group(1) if function else "", test, text))
    return out


def is_expected(expected, function, test, reason):
    return any((not fn or fn == function) and (not name or name == test) and text in reason
               for fn, name, text in expected)


def main():
    if len(sys.argv) < 2:
        print("usage: rdma_suite_tally.py CONSOLE_LOG [EXPECTED_SKIPS] [LABEL] [FUNCTION]", file=sys.stderr)
        return 2
    rows = parse(open(sys.argv[1], encoding="utf-8", errors="replace").read().splitlines())
    expected = expected_skips(sys.argv[2]) if len(sys.argv) > 2 and sys.argv[2] else []
    label = sys.argv[3] if len(sys.argv) > 3 else ""
    function = sys.argv[4] if len(sys.argv) > 4 else ""
    print(f"rdma-core suite {label}".rstrip())
    print(f"{'module':28} {'tests':>5} {'pass':>5} {'fail':>5} {'error':>5} {'skip':>5} {'seconds':>8}  status")
    total = Counter()
    bad = []
    unexpected = Counter()
    for r in rows:
        print(f"{r['module']:28} {r['tests']:5} {r['pass']:5} {r['fail']:5} {r['error']:5} {r['skip']:5} "
              f"{r['seconds']:8.1f}  {r['status']}")
        for k in ("tests", "pass", "fail", "error", "skip"):
            total[k] += r[k]
        total["seconds"] += r["seconds"]
        if r["status"] != "ok":
            bad.append(f"{r['module']}: {r['status']}")
        for test, reason in r["skipped"]:
            if not is_expected(expected, function, test, reason):
                unexpected[reason] += 1
    print(f"{'total':28} {total['tests']:5} {total['pass']:5} {total['fail']:5} {total['error']:5} "
          f"{total['skip']:5} {total['seconds']:8.1f}")
    reasons = Counter(reason for r in rows for reason in r["reasons"])
    if reasons:
        print("skip reasons:")
        for reason, n in reasons.most_common():
            mark = "  (not expected)" if reason in unexpected else ""
            print(f"  {n:4}  {reason}{mark}")
    for b in bad:
        print(f"SUITE-VERDICT {b}")
    for reason, n in unexpected.items():
        print(f"SUITE-VERDICT unexpected skip x{n}: {reason}")
    return 1 if bad or unexpected or not rows else 0


if __name__ == "__main__":
    sys.exit(main())
