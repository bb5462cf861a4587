//! The chart's labels (issue 31): no two label boxes intersect and no label
//! covers a marker, first on the computed layout (report 001's values, the
//! recorded short-13 chart and random charts), then on the raster: the SVG
//! rendered by resvg with the DejaVu fonts, one label or marker at a time,
//! each label's ink inside its computed box and apart from every other
//! label's and marker's ink.

use std::sync::Arc;

use proptest::prelude::*;

use super::labels::{marker_box, Rect, LABEL_ASCENT_PX, LABEL_CHAR_WIDTH_PX, LABEL_DESCENT_PX};
use super::numbers::{score_pct, Money};
use super::svg::chart_layout;
use super::{build, render_svg, ChartMarker, ChartPoint, Report};

fn point(group: &str, marker: ChartMarker, passed: u64, n: u64, cost: Option<u64>) -> ChartPoint {
    ChartPoint {
        group: group.to_string(),
        marker,
        score_pct: score_pct(passed, n),
        cost: cost.map(Money::new),
    }
}

/// Report 001's chart: control $330.70 with 68 passed of 88, and three
/// rounds about 30% cheaper within a few tasks of it (the values at which
/// the fixed-offset labels crossed).
fn chart_001() -> Vec<ChartPoint> {
    use ChartMarker::Accepted;
    vec![
        point("control", Accepted, 68, 88, Some(330_697_145)),
        point("r1", Accepted, 66, 88, Some(222_230_400)),
        point("r2", Accepted, 67, 88, Some(226_480_000)),
        point("r3", Accepted, 69, 88, Some(236_750_000)),
    ]
}

/// The layout's promises: label boxes pairwise apart, none on a marker.
fn check_layout(chart: &[ChartPoint]) {
    let layout = chart_layout(chart);
    for (i, (_, text, label)) in layout.iter().enumerate() {
        for (j, (at, other_text, other)) in layout.iter().enumerate() {
            assert!(
                !marker_box(*at).intersects(&label.rect),
                "REPORT-6: label {text:?} covers the marker of {other_text:?}"
            );
            assert!(
                i == j || !label.rect.intersects(&other.rect),
                "REPORT-6: label {text:?} {:?} overlaps {other_text:?} {:?}",
                label.rect,
                other.rect
            );
        }
    }
}

#[test]
fn the_001_labels_are_apart_and_next_to_their_points() {
    check_layout(&chart_001());
    let layout = chart_layout(&chart_001());
    assert!(
        layout
            .iter()
            .all(|(_, _, label)| label.leader.is_none() && !label.overflow),
        "REPORT-6: at 001's values every label fits next to its point: {layout:?}"
    );
}

fn chart_points() -> impl Strategy<Value = Vec<ChartPoint>> {
    let marker = prop_oneof![
        Just(ChartMarker::Accepted),
        Just(ChartMarker::Rejected),
        Just(ChartMarker::Unsealed)
    ];
    let cost = prop_oneof![1 => Just(None), 6 => (0u64..=400_000_000).prop_map(Some)];
    let name = prop_oneof![4 => "[a-z0-9]{1,10}", 1 => "[a-z0-9._-]{40,128}"];
    (1u64..=100).prop_flat_map(move |n| {
        prop::collection::vec((name.clone(), marker.clone(), 0..=n, cost.clone()), 1..=16).prop_map(
            move |points| {
                points
                    .into_iter()
                    .map(|(group, marker, passed, cost)| point(&group, marker, passed, n, cost))
                    .collect()
            },
        )
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Any chart of up to 16 groups (GROUPS_MAX): its labels keep apart.
    #[test]
    fn chart_labels_never_overlap(chart in chart_points()) {
        check_layout(&chart);
    }
}

/// resvg's options with the DejaVu faces as the generic families, so the
/// raster does not depend on the machine's fonts.
fn options() -> resvg::usvg::Options<'static> {
    let mut options = resvg::usvg::Options::default();
    let fonts = Arc::make_mut(&mut options.fontdb);
    fonts.load_font_data(dejavu::sans_mono::regular().to_vec());
    fonts.load_font_data(dejavu::sans::regular().to_vec());
    fonts.set_monospace_family("DejaVu Sans Mono");
    fonts.set_sans_serif_family("DejaVu Sans");
    options
}

/// The bounding box of the pixels an SVG document inks, if any.
fn ink(svg: &str, options: &resvg::usvg::Options<'_>) -> Option<Rect> {
    let tree = resvg::usvg::Tree::from_str(svg, options).expect("the chart parses");
    let size = tree.size().to_int_size();
    let mut pixmap = resvg::tiny_skia::Pixmap::new(size.width(), size.height()).unwrap();
    resvg::render(
        &tree,
        resvg::tiny_skia::Transform::default(),
        &mut pixmap.as_mut(),
    );
    let width = i128::from(size.width());
    let mut found: Option<Rect> = None;
    for (i, pixel) in (0i128..).zip(pixmap.pixels()) {
        if pixel.alpha() == 0 {
            continue;
        }
        let (x, y) = (i % width, i / width);
        let r = found.get_or_insert(Rect {
            x0: x,
            y0: y,
            x1: x + 1,
            y1: y + 1,
        });
        *r = Rect {
            x0: r.x0.min(x),
            y0: r.y0.min(y),
            x1: r.x1.max(x + 1),
            y1: r.y1.max(y + 1),
        };
    }
    found
}

fn attribute(line: &str, name: &str) -> i128 {
    let start = line.find(&format!(" {name}=\"")).unwrap() + name.len() + 3;
    line[start..].split('"').next().unwrap().parse().unwrap()
}

/// The box the layout promised a label line: its text from x on the
/// baseline y, `LABEL_CHAR_WIDTH_PX` per character.
fn promised(line: &str) -> Rect {
    let text = line[line.find('>').unwrap() + 1..line.find("</text>").unwrap()]
        .replace("&quot;", "\"")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&");
    let (x, y) = (attribute(line, "x"), attribute(line, "y"));
    let chars = i128::try_from(text.chars().count()).unwrap();
    Rect {
        x0: x,
        y0: y - LABEL_ASCENT_PX,
        x1: x + chars * LABEL_CHAR_WIDTH_PX,
        y1: y + LABEL_DESCENT_PX,
    }
}

/// What the raster shows wrong with a chart: each label and each marker
/// rendered alone, its ink box compared with its promised box and with
/// every other's ink.
fn raster_problems(svg: &str) -> Vec<String> {
    let options = options();
    let root = svg.lines().next().unwrap();
    let alone = |line: &str| ink(&format!("{root}\n{line}\n</svg>\n"), &options);
    let labels: Vec<&str> = svg
        .lines()
        .filter(|l| l.contains(r#"class="label""#))
        .collect();
    let markers: Vec<Option<Rect>> = svg
        .lines()
        .filter(|l| l.contains(r#"class="marker""#))
        .map(alone)
        .collect();
    let mut problems = Vec::new();
    let mut inks = Vec::new();
    for line in &labels {
        let Some(ink) = alone(line) else {
            problems.push(format!("no ink: {line}"));
            continue;
        };
        // One pixel of anti-aliasing either side.
        if !(promised(line).grown(1).x0 <= ink.x0
            && ink.x1 <= promised(line).grown(1).x1
            && promised(line).grown(1).y0 <= ink.y0
            && ink.y1 <= promised(line).grown(1).y1)
        {
            problems.push(format!(
                "ink {ink:?} outside the box {:?}: {line}",
                promised(line)
            ));
        }
        for (j, marker) in markers.iter().enumerate() {
            if marker.is_some_and(|m| m.intersects(&ink)) {
                problems.push(format!("ink {ink:?} on marker {j} {marker:?}: {line}"));
            }
        }
        inks.push((ink, *line));
    }
    for (i, (a, line_a)) in inks.iter().enumerate() {
        for (b, line_b) in &inks[i + 1..] {
            if a.intersects(b) {
                problems.push(format!("ink {a:?} of {line_a} meets ink {b:?} of {line_b}"));
            }
        }
    }
    problems
}

fn with_chart(mut report: Report, chart: Vec<ChartPoint>) -> Report {
    report.chart = chart;
    report
}

#[test]
fn rendered_labels_do_not_intersect_on_the_raster() {
    let short13 = build(&super::short13(), None, super::head()).unwrap();
    use ChartMarker::{Accepted, Rejected, Unsealed};
    let crowded: Vec<ChartPoint> = (0..16u64)
        .map(|i| {
            let marker = [Accepted, Rejected, Unsealed][(i % 3) as usize];
            let cost = (i != 5).then_some(200_000_000 + i * 1_500_000);
            point(&format!("round-{i}"), marker, 60 + i % 4, 88, cost)
        })
        .collect();
    for (name, report) in [
        ("001", with_chart(short13.clone(), chart_001())),
        ("short13", short13.clone()),
        ("crowded", with_chart(short13, crowded)),
    ] {
        let svg = render_svg(&report);
        let labels = svg.matches(r#"class="label""#).count();
        assert_eq!(labels, report.chart.len(), "{name}: one label per point");
        let problems = raster_problems(&svg);
        assert!(problems.is_empty(), "REPORT-6: {name}: {problems:#?}");
    }
}

#[test]
fn the_raster_check_sees_labels_that_cross() {
    // The check itself: two labels drawn over each other are caught.
    let report = with_chart(
        build(&super::short13(), None, super::head()).unwrap(),
        chart_001(),
    );
    let svg = render_svg(&report);
    let first = svg
        .lines()
        .find(|l| l.contains(r#"class="label""#))
        .unwrap();
    let crossed = svg.replacen(
        first,
        &format!("{first}\n{}", first.replace("control", "r9")),
        1,
    );
    let problems = raster_problems(&crossed);
    assert!(
        problems.iter().any(|p| p.contains("meets ink")),
        "REPORT-6: crossing labels are seen: {problems:#?}"
    );
}
