"""Runs one SQL statement over a benchledger Parquet dataset on DuckDB and
prints the result: the tables `requests`, `cases` and `lineage_groups` are
views over every lineage partition of DATASET_DIR.

    python query.py DATASET_DIR "SELECT ... FROM requests ..."
"""

import sys

from check_report import connect


def main(argv):
    if len(argv) != 3:
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    connect(argv[1]).sql(argv[2]).show(max_rows=200, max_width=200)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
