-- Cost per target group on every candidate basis (SETTLE-6: series are
-- never added), in exact integer micro-USD, and the request counts the
-- deltas use. A report compares costs on one basis for the whole lineage
-- (its section 5 names it): the frozen-price basis (usage x the frozen
-- price snapshot, every request repriced), or one series (actual,
-- notional) when every compared group's charges are in it. A cost is NULL
-- where its basis does not cover the group: a pending or unknown request,
-- a request without a frozen price, or a charge in another series.
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
)
SELECT
  g.lineage,
  g.group_name,
  g.group_order,
  g.kind,
  g.accepted,
  COALESCE(r.requests, 0) AS requests,
  COALESCE(r.strong_requests, 0) AS strong_requests,
  CASE WHEN r.requests IS NULL THEN NULL
       WHEN r.incomplete_requests = 0 AND r.unpriced_requests = 0 THEN r.frozen_price_sum
  END AS cost_frozen_prices_micro_usd,
  CASE WHEN r.requests IS NULL THEN NULL
       WHEN r.incomplete_requests = 0 AND r.charged_outside_actual = 0 THEN r.actual_sum
  END AS cost_actual_micro_usd,
  CASE WHEN r.requests IS NULL THEN NULL
       WHEN r.incomplete_requests = 0 AND r.charged_outside_notional = 0 THEN r.notional_sum
  END AS cost_notional_micro_usd
FROM lineage_groups g
LEFT JOIN request_costs r
  ON r.lineage = g.source_lineage AND r.group_name = g.source_group
ORDER BY g.lineage, g.group_order
