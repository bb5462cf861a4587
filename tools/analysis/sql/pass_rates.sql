-- Pass rates per target group (REPORT-1): passed cases over N, the group's
-- predeclared case identities (skips and failures count 0), and the
-- runnable-only denominator. Exact integers; the percentage is
-- passed / predeclared_cases x 100.
--
-- Tables: cases, lineage_groups (see tools/analysis/README.md); a reused
-- control's cases are read from the lineage that ran it. Written in the
-- SQL that DuckDB, Spark SQL and Trino share: no dialect functions, no
-- integer division, GROUP is never an identifier.
WITH case_counts AS (
  SELECT
    lineage,
    group_name,
    SUM(CASE WHEN passed THEN 1 ELSE 0 END) AS passed,
    SUM(CASE WHEN replacement = 0 AND status = 'terminal_valid' THEN 1 ELSE 0 END) AS accepted_cases,
    SUM(CASE WHEN skipped AND replacement = 0 THEN 1 ELSE 0 END) AS skipped_cases
  FROM cases
  GROUP BY lineage, group_name
)
SELECT
  g.lineage,
  g.group_name,
  g.group_order,
  g.kind,
  g.accepted,
  g.predeclared_cases,
  COALESCE(c.passed, 0) AS passed,
  COALESCE(c.accepted_cases, 0) AS accepted_cases,
  COALESCE(c.skipped_cases, 0) AS skipped_cases
FROM lineage_groups g
LEFT JOIN case_counts c
  ON c.lineage = g.source_lineage AND c.group_name = g.source_group
ORDER BY g.lineage, g.group_order
