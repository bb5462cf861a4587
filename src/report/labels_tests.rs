use proptest::prelude::*;

use super::*;

const FIELD_AREA: Rect = Rect {
    x0: 30,
    y0: 48,
    x1: 716,
    y1: 368,
};

fn field(fixed: &[Rect]) -> Field<'_> {
    Field {
        area: FIELD_AREA,
        fixed,
        overflow_top: 444,
        overflow_left: 130,
    }
}

/// Every promise of the placement, checked on one result.
fn check_placement(points: &[(i128, i128)], widths: &[i128], fixed: &[Rect], placed: &[Placed]) {
    assert_eq!(placed.len(), points.len());
    let markers: Vec<Rect> = points.iter().map(|&at| marker_box(at)).collect();
    for (i, label) in placed.iter().enumerate() {
        let rect = label.rect;
        assert_eq!(
            rect.x1 - rect.x0,
            widths[i],
            "the box is the estimated width"
        );
        for (j, other) in placed.iter().enumerate().filter(|(j, _)| *j != i) {
            assert!(
                !rect.intersects(&other.rect),
                "REPORT-6: label {i} {rect:?} overlaps label {j} {:?}",
                other.rect
            );
        }
        for (j, marker) in markers.iter().enumerate() {
            assert!(
                !rect.intersects(marker),
                "REPORT-6: label {i} {rect:?} covers the marker of point {j}"
            );
        }
        if label.overflow {
            assert!(rect.y0 >= 444, "an overflow row is below the chart");
            continue;
        }
        assert!(
            FIELD_AREA.contains(&rect),
            "REPORT-6: label {i} leaves the plot"
        );
        assert!(
            !fixed.iter().any(|f| f.intersects(&rect)),
            "REPORT-6: label {i} covers a tick"
        );
        match label.leader {
            None => assert!(
                rect.distance_sq(points[i]) <= LEADER_FROM_PX * LEADER_FROM_PX,
                "REPORT-6: label {i} without a leader is next to its point"
            ),
            Some((a, b)) => {
                assert_eq!(a, points[i], "a leader starts at its point");
                assert_eq!(rect.distance_sq(b), 0, "a leader ends on its label");
                for (j, other) in placed.iter().enumerate().filter(|(j, _)| *j != i) {
                    assert!(
                        other.overflow || !other.rect.meets_segment(a, b),
                        "REPORT-6: the leader of label {i} crosses label {j}"
                    );
                }
                let apart = |(_, m): &(usize, &Rect)| !m.intersects(&markers[i]);
                for (j, marker) in markers.iter().enumerate().filter(apart) {
                    assert!(
                        !marker.meets_segment(a, b),
                        "REPORT-6: the leader of label {i} crosses the marker of point {j}"
                    );
                }
            }
        }
    }
}

#[test]
fn rect_and_segment_geometry() {
    let r = Rect {
        x0: 0,
        y0: 0,
        x1: 10,
        y1: 10,
    };
    assert!(r.intersects(&r.grown(-2)));
    // Boxes that only touch share no area.
    assert!(!r.intersects(&Rect {
        x0: 10,
        y0: 0,
        x1: 20,
        y1: 10
    }));
    assert_eq!(r.distance_sq((13, 14)), 9 + 16);
    assert_eq!(r.distance_sq((5, 5)), 0);
    assert!(
        r.meets_segment((-5, 5), (15, 5)),
        "a segment through the box"
    );
    assert!(
        r.meets_segment((-5, -5), (0, 0)),
        "a segment ending on a corner"
    );
    assert!(
        !r.meets_segment((-5, 12), (15, 11)),
        "a segment passing below"
    );
    assert!(
        !r.meets_segment((11, -5), (20, 5)),
        "a segment right of the box"
    );
    assert!(segments_meet((0, 0), (4, 4), (0, 4), (4, 0)));
    assert!(
        segments_meet((0, 0), (4, 0), (2, 0), (6, 0)),
        "collinear overlap"
    );
    assert!(
        !segments_meet((0, 0), (4, 0), (5, 0), (6, 0)),
        "collinear apart"
    );
}

#[test]
fn coinciding_points_get_separate_labels_with_leaders_then_rows() {
    // 16 groups (GROUPS_MAX) at one spot: the first labels fit next to it,
    // the rest are set apart with leaders, and every promise holds.
    let points = vec![(400, 200); 16];
    let widths = vec![label_width(24); 16];
    let placed = place_labels(&points, &widths, &field(&[]));
    check_placement(&points, &widths, &[], &placed);
    assert!(
        placed.iter().take(2).all(|p| p.leader.is_none()),
        "REPORT-6"
    );
    assert!(placed.iter().any(|p| p.leader.is_some()), "REPORT-6");
    // Labels wider than the plot go to the rows below it.
    let wide = vec![label_width(120); 3];
    let placed = place_labels(&points[..3], &wide, &field(&[]));
    check_placement(&points[..3], &wide, &[], &placed);
    assert!(placed.iter().all(|p| p.overflow), "REPORT-6");
    assert_eq!(
        placed.iter().map(|p| p.rect.y0).collect::<Vec<_>>(),
        [444, 444 + OVERFLOW_ROW_PX, 444 + 2 * OVERFLOW_ROW_PX]
    );
}

fn points_and_widths() -> impl Strategy<Value = Vec<((i128, i128), i128)>> {
    prop::collection::vec(((60i128..=690, 60i128..=370), 1usize..=60), 1..=16).prop_map(|v| {
        v.into_iter()
            .map(|(at, chars)| (at, label_width(chars)))
            .collect()
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    /// Any points, any label widths: the placement keeps every promise
    /// and is a function of its input.
    #[test]
    fn placed_labels_never_overlap(pw in points_and_widths(), tick_y in 60i128..=370) {
        let points: Vec<(i128, i128)> = pw.iter().map(|(at, _)| *at).collect();
        let widths: Vec<i128> = pw.iter().map(|(_, w)| *w).collect();
        let fixed = [Rect { x0: 88, y0: tick_y - 8, x1: 124, y1: tick_y + 8 }];
        let placed = place_labels(&points, &widths, &field(&fixed));
        check_placement(&points, &widths, &fixed, &placed);
        prop_assert_eq!(placed, place_labels(&points, &widths, &field(&fixed)));
    }
}
