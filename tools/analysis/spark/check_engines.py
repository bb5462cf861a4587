"""Runs the shared SQL of tools/analysis/sql/ unchanged on DuckDB and on
Spark (PySpark in local mode) over one benchledger Parquet dataset, and
checks that both engines return exactly the rows written below by hand
(issue 31 item 7).

    python check_engines.py DATASET_DIR

DATASET_DIR is `benchledger export --parquet` of the recorded ledger
replay-tests/ledgers/partition-names.jsonl: lineages labelled "001", "1"
and "2026-07-10", which a reader that typed the lineage from a `lineage=`
directory would read as the integer 1 (twice) and as a date. Each engine
reads with its defaults, partition type inference on: Spark discovers the
`lineage_key=` directories and infers their type, DuckDB detects Hive
partitions and auto-casts them; DuckDB also reads with
`hive_partitioning = true`. The `lineage` column the SQL uses is a Parquet
string in every file, so every reading must give the same rows. Exit 0
when every engine returns the expected rows, 1 on any difference, 2 on
bad usage. The rows are checked over the whole dataset and over a copy
holding only "001" and "1" (an inferring reader types a partition column
over the values it sees; "2026-07-10" among them would make it a string);
a copy holding only "2026-07-10" is checked for its lineage's type.
"""

import pathlib
import shutil
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from check_report import TABLES, connect  # noqa: E402

SQL = HERE.parent / "sql"

# The expected rows, by hand. Each lineage is the recorded short-13 data:
# canary 1 of 1 passed, control and rounds 10 of 13 (76.92%); control
# $1.008949 (26 strong-route requests, frozen prices = the actual series),
# r1 $0.451750 and r2 $0.465473 (no strong requests, the notional series);
# the canary's $0.037592 has no single-series basis. "001" runs control,
# r1 and r2; "1" runs its own control and r1 (r2 declared, never run, so
# not accepted and without cost); "2026-07-10" runs r1 against the control
# of "001" (reused: its rows are read from lineage "001").
C, R1, R2, CANARY = 1_008_949, 451_750, 465_473, 37_592

EXPECTED = {
    # lineage, group_name, group_order, kind, accepted, predeclared_cases,
    # passed, accepted_cases, skipped_cases
    "pass_rates": [
        ("001", "canary-1", 0, "canary", True, 1, 1, 1, 0),
        ("001", "control", 1, "control", True, 13, 10, 13, 0),
        ("001", "r1", 2, "round", True, 13, 10, 13, 0),
        ("001", "r2", 3, "round", True, 13, 10, 13, 0),
        ("1", "canary-1", 0, "canary", True, 1, 1, 1, 0),
        ("1", "control", 1, "control", True, 13, 10, 13, 0),
        ("1", "r1", 2, "round", True, 13, 10, 13, 0),
        ("1", "r2", 3, "round", False, 13, 0, 0, 0),
        ("2026-07-10", "canary-1", 0, "canary", True, 1, 1, 1, 0),
        ("2026-07-10", "control", 1, "control", True, 13, 10, 13, 0),
        ("2026-07-10", "r1", 2, "round", True, 13, 10, 13, 0),
        ("2026-07-10", "r2", 3, "round", False, 13, 0, 0, 0),
    ],
    # lineage, group_name, group_order, kind, accepted, requests,
    # strong_requests, cost on frozen prices, actual, notional (micro-USD)
    "group_costs": [
        ("001", "canary-1", 0, "canary", True, 2, 0, CANARY, None, None),
        ("001", "control", 1, "control", True, 26, 26, C, C, None),
        ("001", "r1", 2, "round", True, 26, 0, R1, None, R1),
        ("001", "r2", 3, "round", True, 26, 0, R2, None, R2),
        ("1", "canary-1", 0, "canary", True, 2, 0, CANARY, None, None),
        ("1", "control", 1, "control", True, 26, 26, C, C, None),
        ("1", "r1", 2, "round", True, 26, 0, R1, None, R1),
        ("1", "r2", 3, "round", False, 0, 0, None, None, None),
        ("2026-07-10", "canary-1", 0, "canary", True, 2, 0, CANARY, None, None),
        ("2026-07-10", "control", 1, "control", True, 26, 26, C, C, None),
        ("2026-07-10", "r1", 2, "round", True, 26, 0, R1, None, R1),
        ("2026-07-10", "r2", 3, "round", False, 0, 0, None, None, None),
    ],
    # lineage, round, k, round accepted, control accepted, strong, control
    # strong, then per basis (frozen prices, actual, notional) the round's
    # and control's cost, then per basis C_policy(1..K) and K x C_control.
    "deltas_and_lifecycle": [
        ("001", "r1", 1, True, True, 0, 26, R1, C, None, C, R1, None, R1, C, None, C, R1, None),
        ("001", "r2", 2, True, True, 0, 26, R2, C, None, C, R2, None, R1 + R2, 2 * C, None, 2 * C, R1 + R2, None),
        ("1", "r1", 1, True, True, 0, 26, R1, C, None, C, R1, None, R1, C, None, C, R1, None),
        ("1", "r2", 2, False, True, 0, 26, None, C, None, C, None, None, R1, 2 * C, None, 2 * C, R1, None),
        ("2026-07-10", "r1", 1, True, True, 0, 26, R1, C, None, C, R1, None, R1, C, None, C, R1, None),
        ("2026-07-10", "r2", 2, False, True, 0, 26, None, C, None, C, None, None, R1, 2 * C, None, 2 * C, R1, None),
    ],
}


def duckdb_rows(dataset, options):
    con = connect(dataset, options)
    for table in TABLES:
        kind = {row[0]: row[1] for row in con.execute(f"DESCRIBE {table}").fetchall()}
        if kind.get("lineage") != "VARCHAR":
            raise SystemExit(f"DuckDB reads {dataset} {table}.lineage as {kind.get('lineage')}, not a string")
    return {
        name: [tuple(row) for row in con.execute((SQL / f"{name}.sql").read_text()).fetchall()]
        for name in EXPECTED
    }


def spark_session():
    from pyspark.sql import SparkSession

    return (
        SparkSession.builder.master("local[1]")
        .appName("benchledger-analysis-check")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "1")
        .config("spark.sql.session.timeZone", "UTC")
        # Spark's default, stated: partition values are typed by inference.
        .config("spark.sql.sources.partitionColumnTypeInference.enabled", "true")
        .getOrCreate()
    )


def spark_rows(spark, dataset):
    for table in TABLES:
        frame = spark.read.parquet(str(pathlib.Path(dataset) / table))
        kind = dict(frame.dtypes).get("lineage")
        if kind != "string":
            raise SystemExit(f"Spark reads {dataset} {table}.lineage as {kind}, not a string")
        frame.createOrReplaceTempView(table)
    return {
        name: [tuple(row) for row in spark.sql((SQL / f"{name}.sql").read_text()).collect()]
        for name in EXPECTED
    }


def subset(dataset, lineages, into):
    """A copy of the dataset holding only `lineages`' partitions: Spark
    types partition values over the set it sees ("001" and "1" alone are
    both the integer 1 to an inferring reader; "2026-07-10" alone a date)."""
    for table in TABLES:
        for lineage in lineages:
            part = f"lineage_key=lineage-{lineage}"
            shutil.copytree(pathlib.Path(dataset) / table / part, pathlib.Path(into) / table / part)
    return str(into)


def readings_of(spark, dataset):
    """Every engine's rows over `dataset`, by reading."""
    readings = {
        "DuckDB (defaults)": duckdb_rows(dataset, ""),
        "DuckDB (hive_partitioning = true)": duckdb_rows(dataset, ", hive_partitioning = true"),
        "Spark (partition type inference on)": spark_rows(spark, dataset),
    }
    return readings


def differences(engine, got, expected):
    """Every row where `got` differs from `expected`, named."""
    out = []
    for name, rows in expected.items():
        if len(got[name]) != len(rows):
            out.append(f"{engine} {name}: {len(got[name])} rows, expected {len(rows)}")
        for i, (have, want) in enumerate(zip(got[name], rows)):
            if have != want:
                out.append(f"{engine} {name} row {i}: {have!r}, expected {want!r}")
    return out


def main(argv):
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[5].strip(), file=sys.stderr)
        return 2
    dataset = argv[1]
    problems = []
    spark = spark_session()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            sets = {
                "all three": (dataset, ("001", "1", "2026-07-10")),
                "001 and 1": (subset(dataset, ("001", "1"), f"{tmp}/a"), ("001", "1")),
                "2026-07-10": (subset(dataset, ("2026-07-10",), f"{tmp}/b"), None),
            }
            for label, (path, lineages) in sets.items():
                for engine, got in readings_of(spark, path).items():
                    if lineages is None:
                        # Alone, its reused control (of "001") is absent:
                        # only the lineage's type and value are checked.
                        seen = {row[0] for row in got["pass_rates"]}
                        if seen != {"2026-07-10"}:
                            problems.append(f"{engine} [{label}]: lineage read as {seen!r}")
                        continue
                    want = {name: [row for row in rows if row[0] in lineages] for name, rows in EXPECTED.items()}
                    problems += differences(f"{engine} [{label}]", got, want)
            # The comparison itself sees a wrong row: one micro-dollar off.
            got = duckdb_rows(dataset, "")
            off = {name: list(rows) for name, rows in EXPECTED.items()}
            off["group_costs"][1] = off["group_costs"][1][:7] + (C + 1,) + off["group_costs"][1][8:]
            if not differences("self-check", got, off):
                problems.append("self-check: a row one micro-dollar off was not seen")
    finally:
        spark.stop()
    for line in problems:
        print(f"DIFFERS {line}")
    rows = sum(len(rows) for rows in EXPECTED.values())
    print(f"{dataset}: 3 readings (DuckDB twice, Spark) x 3 lineage sets ({rows} rows over all three), {len(problems)} differences")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
