//! The chart: official score (y) vs cost on the basis (x) for control and
//! every round, written by hand from the report's chart points (no
//! plotting crate). Labels are placed by `labels` so none overlaps another
//! or a marker; each line of a label, marker or leader is one element with
//! its class (`label`, `marker`, `leader`), which the chart test renders
//! alone.

use std::fmt::{self, Write};

use super::labels::{label_width, place_labels, Field, Placed, Rect, LABEL_FONT_PX, LABEL_GAP_PX};
use super::model::{ChartMarker, ChartPoint, Report};
use super::numbers::{cents, usd, Ratio, MICRO};
use super::sections::CONTROL;

const WIDTH: i128 = 720;
const HEIGHT: i128 = 440;
/// The plot area.
const LEFT: i128 = 130;
const RIGHT: i128 = 690;
const TOP: i128 = 60;
const BOTTOM: i128 = 370;
/// The x of the "no cost" lane, left of the y axis.
const NO_COST_LANE: i128 = LEFT - 70;

/// Text inert (BIND-10) and escaped for XML.
fn xml(text: &str) -> String {
    crate::schema::strings::inert(text)
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The cost axis: `ticks` steps of `step` micro-USD.
struct CostAxis {
    step: u64,
    ticks: u64,
}

impl CostAxis {
    /// The smallest 1-2-5 x 10^k step of which at most 5 multiples cover
    /// `max` micro-USD.
    fn covering(max: u64) -> CostAxis {
        let max = max.max(1);
        let mut power = 1u64;
        loop {
            for multiple in [1u64, 2, 5] {
                let step = multiple.saturating_mul(power);
                let ticks = max.div_ceil(step);
                if ticks <= 5 {
                    return CostAxis {
                        step,
                        ticks: ticks.max(1),
                    };
                }
            }
            power = power.saturating_mul(10);
        }
    }

    /// The x of an amount.
    fn x_of(&self, micro_usd: u64) -> i128 {
        let axis_max = i128::from(self.step) * i128::from(self.ticks);
        LEFT + i128::from(micro_usd) * (RIGHT - LEFT) / axis_max
    }
}

/// The y of a score in percent.
fn y_of(score: &Ratio) -> i128 {
    BOTTOM - i128::from(score.num) * (BOTTOM - TOP) / (i128::from(score.den) * 100)
}

/// The chart: official score (y) vs cost on the basis (x) for control and
/// every round, written by hand from `report.chart` (no plotting crate).
/// Rejected groups are drawn as a red cross and labelled; groups without a
/// cost on the basis sit in a separate "no cost" lane left of the axis.
pub fn render_svg(report: &Report) -> String {
    let mut out = String::new();
    write_chart(&mut out, report).expect("writing to a String cannot fail");
    out
}

fn write_chart(out: &mut String, report: &Report) -> fmt::Result {
    let (axis, plotted) = plot(&report.chart);
    let placed = place_chart_labels(&plotted);
    let overflow: Vec<&Placed> = placed.iter().filter(|label| label.overflow).collect();
    let height = overflow
        .iter()
        .map(|label| label.rect.y1 + LABEL_GAP_PX * 2)
        .fold(HEIGHT, i128::max);
    let width = overflow
        .iter()
        .map(|label| label.rect.x1 + LABEL_GAP_PX * 4)
        .fold(WIDTH, i128::max);
    titles(out, report, width, height)?;
    axes(out, &axis, &report.claim.score_name)?;
    if report.chart.iter().any(|point| point.cost.is_none()) {
        writeln!(
            out,
            r##"<line x1="{NO_COST_LANE}" y1="{TOP}" x2="{NO_COST_LANE}" y2="{BOTTOM}" stroke="#bbb" stroke-dasharray="4 3"/><text x="{NO_COST_LANE}" y="{}" text-anchor="middle" fill="#777">no cost</text>"##,
            BOTTOM + 20
        )?;
    }
    for (point, label) in plotted.iter().zip(&placed) {
        if let Some(((x1, y1), (x2, y2))) = label.leader {
            writeln!(
                out,
                r#"<line class="leader" x1="{x1}" y1="{y1}" x2="{x2}" y2="{y2}" stroke="{}" stroke-width="1"/>"#,
                point.color
            )?;
        }
    }
    for point in &plotted {
        marker(out, point)?;
    }
    for (point, label) in plotted.iter().zip(&placed) {
        let (x, y) = label.text_at();
        writeln!(
            out,
            r#"<text class="label" x="{x}" y="{y}" font-family="monospace" font-size="{LABEL_FONT_PX}" fill="{}">{}</text>"#,
            point.color,
            xml(&point.label)
        )?;
    }
    legend(out)?;
    writeln!(out, "</svg>")
}

/// The cost axis and every point with a score, in chart order.
fn plot(chart: &[ChartPoint]) -> (CostAxis, Vec<Plotted<'_>>) {
    let max = chart
        .iter()
        .filter_map(|point| point.cost.as_ref().map(|cost| cost.micro_usd))
        .max()
        .unwrap_or(0);
    // 10% headroom right of the most expensive group.
    let axis = CostAxis::covering(max.saturating_add(max / 10));
    let plotted = chart
        .iter()
        .filter_map(|point| plotted(&axis, point))
        .collect();
    (axis, plotted)
}

/// The chart's layout, for tests: each drawn point's centre, label text
/// and label place.
#[cfg(test)]
pub(super) fn chart_layout(chart: &[ChartPoint]) -> Vec<((i128, i128), String, Placed)> {
    let (_, plotted) = plot(chart);
    let placed = place_chart_labels(&plotted);
    plotted
        .into_iter()
        .zip(placed)
        .map(|(point, label)| (point.at, point.label, label))
        .collect()
}

/// The labels' places: next to their points in the plot (and the "no
/// cost" lane), clear of the score axis's tick labels, else in rows below
/// the legend.
fn place_chart_labels(plotted: &[Plotted<'_>]) -> Vec<Placed> {
    let ticks: Vec<Rect> = (0..=5i128)
        .map(|step| {
            let y = BOTTOM - step * (BOTTOM - TOP) / 5;
            // "100%" at 12 px in a proportional face: at most 36 wide.
            Rect {
                x0: LEFT - 6 - 36,
                y0: y + 4 - 12,
                x1: LEFT - 6,
                y1: y + 4 + 4,
            }
        })
        .collect();
    let field = Field {
        area: Rect {
            x0: 30,
            y0: 48,
            x1: WIDTH - 4,
            y1: BOTTOM - 2,
        },
        fixed: &ticks,
        overflow_top: HEIGHT + 4,
        overflow_left: LEFT,
    };
    let points: Vec<(i128, i128)> = plotted.iter().map(|point| point.at).collect();
    let widths: Vec<i128> = plotted
        .iter()
        .map(|point| label_width(point.label.chars().count()))
        .collect();
    place_labels(&points, &widths, &field)
}

fn titles(out: &mut String, report: &Report, width: i128, height: i128) -> fmt::Result {
    writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">"#
    )?;
    writeln!(
        out,
        r#"<rect width="{width}" height="{height}" fill="white"/>"#
    )?;
    writeln!(
        out,
        r#"<text x="{}" y="24" text-anchor="middle" font-size="15">{}</text>"#,
        WIDTH / 2,
        xml(&format!(
            "{} vs cost per group: lineage {}",
            capitalized(&report.claim.score_name),
            report.lineage
        ))
    )?;
    writeln!(
        out,
        r##"<text x="{}" y="42" text-anchor="middle" fill="#555">{}</text>"##,
        WIDTH / 2,
        xml(&format!("cost basis: {}", report.basis.label))
    )
}

/// `Score over N` from `score over N`.
fn capitalized(text: &str) -> String {
    let mut characters = text.chars();
    characters.next().map_or(String::new(), |first| {
        first.to_uppercase().chain(characters).collect()
    })
}

/// A tick's amount: to the cent when the step is whole cents (the money
/// rule), else exact (a step below a cent would show equal labels).
fn tick_label(micro_usd: u64, step: u64) -> String {
    if step.is_multiple_of(MICRO as u64 / 100) {
        cents(micro_usd)
    } else {
        usd(micro_usd)
    }
}

fn axes(out: &mut String, axis: &CostAxis, score_name: &str) -> fmt::Result {
    writeln!(
        out,
        r#"<line x1="{LEFT}" y1="{BOTTOM}" x2="{RIGHT}" y2="{BOTTOM}" stroke="black"/><line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{BOTTOM}" stroke="black"/>"#
    )?;
    for step in 0..=5i128 {
        let y = BOTTOM - step * (BOTTOM - TOP) / 5;
        writeln!(
            out,
            r##"<line x1="{LEFT}" y1="{y}" x2="{RIGHT}" y2="{y}" stroke="#ddd"/><text x="{}" y="{}" text-anchor="end">{}%</text>"##,
            LEFT - 6,
            y + 4,
            step * 20
        )?;
    }
    for tick in 0..=axis.ticks {
        let micro_usd = axis.step.saturating_mul(tick);
        let x = axis.x_of(micro_usd);
        writeln!(
            out,
            r##"<line x1="{x}" y1="{BOTTOM}" x2="{x}" y2="{}" stroke="black"/><text x="{x}" y="{}" text-anchor="middle">${}</text>"##,
            BOTTOM + 5,
            BOTTOM + 20,
            tick_label(micro_usd, axis.step)
        )?;
    }
    writeln!(
        out,
        r#"<text x="{}" y="{}" text-anchor="middle">cost (USD)</text>"#,
        (LEFT + RIGHT) / 2,
        BOTTOM + 38
    )?;
    writeln!(
        out,
        r#"<text x="20" y="{}" text-anchor="middle" transform="rotate(-90 20 {})">{} (%)</text>"#,
        (TOP + BOTTOM) / 2,
        (TOP + BOTTOM) / 2,
        xml(score_name)
    )
}

/// A point's color: rejected red, unsealed grey, control black, rounds blue.
fn color_of(point: &ChartPoint) -> &'static str {
    match (point.marker, point.group.as_str()) {
        (ChartMarker::Rejected, _) => "#c62828",
        (ChartMarker::Unsealed, _) => "#888888",
        (_, CONTROL) => "#222222",
        _ => "#1565c0",
    }
}

/// A point with a score, where it is drawn and its label's text (inert,
/// not yet escaped).
struct Plotted<'a> {
    point: &'a ChartPoint,
    at: (i128, i128),
    color: &'static str,
    label: String,
}

/// One point, or `None` without a score (not drawn).
fn plotted<'a>(axis: &CostAxis, point: &'a ChartPoint) -> Option<Plotted<'a>> {
    let score = point.score_pct.as_ref()?;
    let x = point
        .cost
        .as_ref()
        .map_or(NO_COST_LANE, |cost| axis.x_of(cost.micro_usd));
    let label = format!(
        "{} {}% {}{}",
        point.group,
        score.text,
        point
            .cost
            .as_ref()
            .map_or("no cost".to_string(), |cost| format!("${}", cost.usd_cents)),
        match point.marker {
            ChartMarker::Rejected => " (rejected: diagnostics)",
            ChartMarker::Unsealed => " (unsealed)",
            ChartMarker::Accepted => "",
        }
    );
    Some(Plotted {
        point,
        at: (x, y_of(score)),
        color: color_of(point),
        label: crate::schema::strings::inert(&label).into_owned(),
    })
}

/// A point's marker.
fn marker(out: &mut String, plotted: &Plotted<'_>) -> fmt::Result {
    let ((x, y), color) = (plotted.at, plotted.color);
    match plotted.point.marker {
        ChartMarker::Rejected => writeln!(
            out,
            r#"<path class="marker" d="M{} {} L{} {} M{} {} L{} {}" stroke="{color}" stroke-width="3"/>"#,
            x - 6,
            y - 6,
            x + 6,
            y + 6,
            x - 6,
            y + 6,
            x + 6,
            y - 6
        ),
        ChartMarker::Unsealed => writeln!(
            out,
            r#"<circle class="marker" cx="{x}" cy="{y}" r="6" fill="white" stroke="{color}" stroke-width="2"/>"#
        ),
        ChartMarker::Accepted => writeln!(
            out,
            r#"<circle class="marker" cx="{x}" cy="{y}" r="6" fill="{color}"/>"#
        ),
    }
}

fn legend(out: &mut String) -> fmt::Result {
    let y = HEIGHT - 12;
    writeln!(
        out,
        r##"<circle cx="{}" cy="{}" r="5" fill="#222222"/><text x="{}" y="{}">control</text><circle cx="{}" cy="{}" r="5" fill="#1565c0"/><text x="{}" y="{}">accepted round</text><path d="M{} {} L{} {} M{} {} L{} {}" stroke="#c62828" stroke-width="3"/><text x="{}" y="{}">rejected (diagnostics only)</text><circle cx="{}" cy="{}" r="5" fill="white" stroke="#888888" stroke-width="2"/><text x="{}" y="{}">unsealed</text>"##,
        LEFT,
        y,
        LEFT + 10,
        y + 4,
        LEFT + 90,
        y,
        LEFT + 100,
        y + 4,
        LEFT + 225,
        y - 5,
        LEFT + 235,
        y + 5,
        LEFT + 225,
        y + 5,
        LEFT + 235,
        y - 5,
        LEFT + 245,
        y + 4,
        LEFT + 430,
        y,
        LEFT + 440,
        y + 4
    )
}
