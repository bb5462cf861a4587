"""Reproduces a benchledger report's headline numbers from its Parquet
dataset with the SQL of tools/analysis/sql/, on DuckDB, and compares them
with the report's JSON form to the micro-dollar.

    python check_report.py DATASET_DIR REPORT_JSON [REPORT_JSON ...]

DATASET_DIR is what `benchledger export --parquet -o DIR [--append]` wrote
(DIR/<table>/lineage_key=lineage-<label>/*.parquet, the lineage a string
column of every file); each REPORT_JSON is `benchledger
report show LINEAGE --format json` of a lineage in it. Checked: every
group's passed / N and score, its cost on the report's basis, cost per
success, the cost and strong-call deltas of every comparable round, and
every cumulative lifecycle row. The SQL returns exact integers; the
percentages are formatted here with exact fractions, rounded half away from
zero as the report does (engines differ in DECIMAL division, not in integer
sums). Exit 0 when every number agrees, 1 on any disagreement, 2 on bad
input.
"""

import json
import pathlib
import sys

import duckdb

HERE = pathlib.Path(__file__).resolve().parent
TABLES = ("requests", "cases", "lineage_groups")


def ratio_text(num, den, places):
    """num / den rounded half away from zero to `places` decimals, as the
    report's `ratio_text` writes it (never "-0.00")."""
    scale = 10**places
    scaled = num * scale
    quotient, remainder = divmod(abs(scaled), den)
    if 2 * remainder >= den:
        quotient += 1
    sign = "-" if scaled < 0 and quotient != 0 else ""
    return f"{sign}{quotient // scale}.{quotient % scale:0{places}d}"


def connect(dataset, options=""):
    """An in-memory DuckDB with one view per table over the partitions.
    The `lineage` column is read from the files (a Parquet string), so
    DuckDB's defaults are right; `options` adds read_parquet options (the
    Spark check also reads with `hive_partitioning = true`)."""
    con = duckdb.connect()
    for table in TABLES:
        pattern = str(pathlib.Path(dataset) / table / "*" / "*.parquet").replace("'", "''")
        con.execute(f"CREATE VIEW {table} AS SELECT * FROM read_parquet('{pattern}'{options})")
    return con


def query(con, name):
    """The rows of sql/<name>.sql as dicts."""
    cursor = con.execute((HERE / "sql" / f"{name}.sql").read_text())
    columns = [column[0] for column in cursor.description]
    return [dict(zip(columns, row)) for row in cursor.fetchall()]


def by_group(rows, group_key="group_name"):
    return {(row["lineage"], row[group_key]): row for row in rows}


class Checker:
    def __init__(self):
        self.agreed = 0
        self.disagreements = []

    def same(self, where, what, sql_value, report_value):
        if sql_value == report_value:
            self.agreed += 1
        else:
            self.disagreements.append(f"{where}: {what}: SQL {sql_value!r}, report {report_value!r}")


def basis_column(report):
    """Which candidate cost column the report's basis is, or None."""
    basis = report["basis"]
    if basis["kind"] == "frozen_prices":
        return "frozen_prices"
    if basis["kind"] == "series" and basis["series"] in ("actual", "notional"):
        return basis["series"]
    return None


def check_groups(check, report, rates, costs):
    lineage = report["lineage"]
    column = basis_column(report)
    for group in report["groups"]:
        where = f"{lineage}/{group['group']}"
        rate = rates[(lineage, group["group"])]
        check.same(where, "passed", rate["passed"], group["passed"])
        check.same(where, "N", rate["predeclared_cases"], group["total"])
        if group["score_pct"] is not None:
            text = ratio_text(rate["passed"] * 100, rate["predeclared_cases"], 2)
            check.same(where, "score %", text, group["score_pct"]["text"])
        if group["cost"] is None:
            continue
        cost = costs[(lineage, group["group"])][f"cost_{column}_micro_usd"]
        check.same(where, "cost micro-USD", cost, group["cost"]["micro_usd"])
        check.same(where, "strong requests", costs[(lineage, group["group"])]["strong_requests"], group["strong_requests"])
        if group["cost_per_success"] is not None:
            text = ratio_text(cost, rate["passed"] * 1_000_000, 2)
            check.same(where, "cost per success", text, group["cost_per_success"]["text"])


def check_rounds(check, report, rounds):
    lineage = report["lineage"]
    column = basis_column(report)
    for group in report["groups"]:
        if group["cost_delta_pct"] is None:
            continue
        row = rounds[(lineage, group["group"])]
        where = f"{lineage}/{group['group']}"
        policy, control = row[f"round_{column}"], row[f"control_{column}"]
        check.same(where, "cost delta %", ratio_text((policy - control) * 100, control, 2), group["cost_delta_pct"]["text"])
        if group["strong_call_delta_pct"] is not None:
            strong, control_strong = row["strong_requests"], row["control_strong_requests"]
            text = ratio_text((strong - control_strong) * 100, control_strong, 2)
            check.same(where, "strong-call delta %", text, group["strong_call_delta_pct"]["text"])
    for cumulative in report["economics"]["cumulative"]:
        if cumulative["row"] is None:
            continue
        expected = cumulative["row"]
        row = rounds[(lineage, cumulative["through"])]
        where = f"{lineage} through {cumulative['through']}"
        policy = row[f"cumulative_{column}"]
        control = row[f"cumulative_control_{column}"]
        check.same(where, "K", row["k"], expected["k"])
        check.same(where, "C_policy(1..K) micro-USD", policy, expected["policy"]["micro_usd"])
        check.same(where, "C_control(1..K) micro-USD", control, expected["control"]["micro_usd"])
        check.same(where, "cumulative delta %", ratio_text((policy - control) * 100, control, 2), expected["delta_pct"]["text"])


def main(argv):
    if len(argv) < 3:
        print(__doc__.strip().splitlines()[3].strip(), file=sys.stderr)
        return 2
    dataset, report_paths = argv[1], argv[2:]
    con = connect(dataset)
    rates = by_group(query(con, "pass_rates"))
    costs = by_group(query(con, "group_costs"))
    rounds = by_group(query(con, "deltas_and_lifecycle"), "round_name")
    check = Checker()
    for path in report_paths:
        report = json.loads(pathlib.Path(path).read_text())
        check_groups(check, report, rates, costs)
        check_rounds(check, report, rounds)
    for line in check.disagreements:
        print(f"DISAGREES {line}")
    print(f"{dataset}: {check.agreed} numbers agree, {len(check.disagreements)} disagree ({len(report_paths)} reports)")
    return 1 if check.disagreements else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
