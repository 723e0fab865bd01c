"""Runs multi_node.mjs (ioredis and node-redis) against a real csqd.
Usage: test_multi_node.py /path/to/csqd [node]; the engine comes from
CSQ_TEST_ENGINE. The packages are those of package-lock.json, installed
by scripts/test (npm ci)."""

import os
import subprocess
import sys

from csqd_proc import Daemons

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    node = sys.argv[2] if len(sys.argv) > 2 else "node"
    # A missing tool skips (77), as the examples' do: ctest shows a skip
    # in a build that allows them (CMake's default), and scripts/test
    # (CSQ_TEST_SKIPS=OFF, after its npm ci) takes 77 for a failure.
    if not os.path.isdir(os.path.join(HERE, "node_modules")):
        print("tests/clients/node_modules is missing: run "
              "npm ci --prefix tests/clients (scripts/test does): skipped")
        return 77
    with Daemons(sys.argv[1]) as d:
        rc = subprocess.call([node, os.path.join(HERE, "multi_node.mjs"),
                              str(d.port)], cwd=HERE, timeout=120)
    return rc


if __name__ == "__main__":
    sys.exit(main())
