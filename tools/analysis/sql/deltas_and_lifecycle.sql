-- Every policy round against its lineage's control (REPORT-2, REPORT-3):
-- the operands of the cost delta % = (C_round / C_control - 1) x 100 and of
-- the strong-call delta, and the lifecycle through round K:
-- C_policy(1..K) = the sum of the rounds' costs, C_control(1..K) = K x
-- C_control. Exact integers on every candidate basis; a reused control is
-- read from the lineage that ran it, so lineages of several ledgers
-- compare in this one statement. The report shows a delta or a cumulative
-- row only where the round (and every round before it) is accepted and
-- comparable; the percentage is rounded half away from zero by the reader.
--
-- Tables: requests, lineage_groups. Portable to DuckDB, Spark SQL, Trino.
WITH request_costs AS (
  SELECT
    lineage,
    group_name,
    COUNT(*) AS requests,
    SUM(CASE WHEN tier = 'strong' THEN 1 ELSE 0 END) AS strong_requests,
    SUM(CASE WHEN series = 'incomplete' THEN 1 ELSE 0 END) AS incomplete_requests,
    SUM(CASE WHEN recomputed_micro_usd IS NULL THEN 1 ELSE 0 END) AS unpriced_requests,
    SUM(recomputed_micro_usd) AS frozen_price_sum,
    SUM(CASE WHEN series = 'actual' THEN charge_micro_usd ELSE 0 END) AS actual_sum,
    SUM(CASE WHEN series = 'notional' THEN charge_micro_usd ELSE 0 END) AS notional_sum,
    SUM(CASE WHEN series <> 'actual' AND charge_micro_usd > 0 THEN 1 ELSE 0 END) AS charged_outside_actual,
    SUM(CASE WHEN series <> 'notional' AND charge_micro_usd > 0 THEN 1 ELSE 0 END) AS charged_outside_notional
  FROM requests
  GROUP BY lineage, group_name
),
group_costs AS (
  SELECT
    g.lineage,
    g.group_name,
    g.group_order,
    g.kind,
    g.accepted,
    COALESCE(r.strong_requests, 0) AS strong_requests,
    CASE WHEN r.incomplete_requests = 0 AND r.unpriced_requests = 0 THEN r.frozen_price_sum END AS frozen_prices,
    CASE WHEN r.incomplete_requests = 0 AND r.charged_outside_actual = 0 THEN r.actual_sum END AS actual,
    CASE WHEN r.incomplete_requests = 0 AND r.charged_outside_notional = 0 THEN r.notional_sum END AS notional
  FROM lineage_groups g
  LEFT JOIN request_costs r
    ON r.lineage = g.source_lineage AND r.group_name = g.source_group
),
rounds AS (
  SELECT
    lineage,
    group_name,
    group_order,
    accepted,
    strong_requests,
    frozen_prices,
    actual,
    notional,
    ROW_NUMBER() OVER (PARTITION BY lineage ORDER BY group_order) AS k,
    SUM(frozen_prices) OVER (PARTITION BY lineage ORDER BY group_order ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS cumulative_frozen_prices,
    SUM(actual) OVER (PARTITION BY lineage ORDER BY group_order ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS cumulative_actual,
    SUM(notional) OVER (PARTITION BY lineage ORDER BY group_order ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS cumulative_notional
  FROM group_costs
  WHERE kind = 'round'
),
controls AS (
  SELECT lineage, accepted, strong_requests, frozen_prices, actual, notional
  FROM group_costs
  WHERE kind = 'control'
)
SELECT
  r.lineage,
  r.group_name AS round_name,
  r.k,
  r.accepted AS round_accepted,
  c.accepted AS control_accepted,
  r.strong_requests,
  c.strong_requests AS control_strong_requests,
  r.frozen_prices AS round_frozen_prices,
  c.frozen_prices AS control_frozen_prices,
  r.actual AS round_actual,
  c.actual AS control_actual,
  r.notional AS round_notional,
  c.notional AS control_notional,
  r.cumulative_frozen_prices,
  r.k * c.frozen_prices AS cumulative_control_frozen_prices,
  r.cumulative_actual,
  r.k * c.actual AS cumulative_control_actual,
  r.cumulative_notional,
  r.k * c.notional AS cumulative_control_notional
FROM rounds r
LEFT JOIN controls c ON c.lineage = r.lineage
ORDER BY r.lineage, r.k
