//! Where the chart's point labels go (issue 31): a pure, deterministic,
//! greedy placement in which no two label boxes intersect, no label box
//! covers a point marker or a fixed text of the chart, and every label is
//! next to its point, or, set apart from it, joined to it by a leader line
//! that crosses no other label or marker.
//!
//! A label's box is estimated, not measured: labels are set in a monospace
//! font at [`LABEL_FONT_PX`], whose every character advances at most
//! [`LABEL_CHAR_WIDTH_PX`] (0.6 em in the common monospace faces, rounded
//! up), so the box of `n` characters is `n` x that wide and
//! [`LABEL_ASCENT_PX`] + [`LABEL_DESCENT_PX`] high around the baseline.
//! Group names are ASCII (frozen labels), so one character is one advance.
//! The chart test renders the SVG and checks each label's ink lies in its
//! box.

/// A box `[x0, x1) x [y0, y1)` in SVG user units.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Rect {
    pub x0: i128,
    pub y0: i128,
    pub x1: i128,
    pub y1: i128,
}

impl Rect {
    /// Whether the two boxes share an area.
    pub(crate) fn intersects(&self, other: &Rect) -> bool {
        self.x0 < other.x1 && other.x0 < self.x1 && self.y0 < other.y1 && other.y0 < self.y1
    }

    /// The box grown by `by` on every side.
    pub(crate) fn grown(&self, by: i128) -> Rect {
        Rect {
            x0: self.x0 - by,
            y0: self.y0 - by,
            x1: self.x1 + by,
            y1: self.y1 + by,
        }
    }

    fn contains(&self, other: &Rect) -> bool {
        self.x0 <= other.x0 && other.x1 <= self.x1 && self.y0 <= other.y0 && other.y1 <= self.y1
    }

    /// The point of the box nearest to `(x, y)`.
    fn nearest(&self, (x, y): (i128, i128)) -> (i128, i128) {
        (x.clamp(self.x0, self.x1), y.clamp(self.y0, self.y1))
    }

    /// The squared distance from `(x, y)` to the box (0 inside).
    pub(crate) fn distance_sq(&self, at: (i128, i128)) -> i128 {
        let (nx, ny) = self.nearest(at);
        (nx - at.0).pow(2) + (ny - at.1).pow(2)
    }

    /// Whether the segment `a`-`b` touches the box.
    fn meets_segment(&self, a: (i128, i128), b: (i128, i128)) -> bool {
        let inside =
            |(x, y): (i128, i128)| self.x0 <= x && x <= self.x1 && self.y0 <= y && y <= self.y1;
        if inside(a) || inside(b) {
            return true;
        }
        let corners = [
            (self.x0, self.y0),
            (self.x1, self.y0),
            (self.x1, self.y1),
            (self.x0, self.y1),
        ];
        (0..4).any(|i| segments_meet(a, b, corners[i], corners[(i + 1) % 4]))
    }
}

/// The sign of the turn `a` -> `b` -> `c`.
fn turn(a: (i128, i128), b: (i128, i128), c: (i128, i128)) -> i128 {
    ((b.0 - a.0) * (c.1 - a.1) - (b.1 - a.1) * (c.0 - a.0)).signum()
}

/// Whether the closed segments `a`-`b` and `c`-`d` share a point.
fn segments_meet(a: (i128, i128), b: (i128, i128), c: (i128, i128), d: (i128, i128)) -> bool {
    let on = |p: (i128, i128), q: (i128, i128), r: (i128, i128)| {
        p.0.min(q.0) <= r.0 && r.0 <= p.0.max(q.0) && p.1.min(q.1) <= r.1 && r.1 <= p.1.max(q.1)
    };
    let (d1, d2, d3, d4) = (turn(c, d, a), turn(c, d, b), turn(a, b, c), turn(a, b, d));
    (d1 * d2 < 0 && d3 * d4 < 0)
        || (d1 == 0 && on(c, d, a))
        || (d2 == 0 && on(c, d, b))
        || (d3 == 0 && on(a, b, c))
        || (d4 == 0 && on(a, b, d))
}

/// The labels' font size.
pub(crate) const LABEL_FONT_PX: i128 = 11;
/// The most one label character advances at [`LABEL_FONT_PX`] in a
/// monospace face (0.6 em = 6.6, rounded up).
pub(crate) const LABEL_CHAR_WIDTH_PX: i128 = 7;
/// A label's box above its baseline.
pub(crate) const LABEL_ASCENT_PX: i128 = 10;
/// A label's box below its baseline.
pub(crate) const LABEL_DESCENT_PX: i128 = 3;
/// Half the side of the square every point marker fits in (a circle of
/// radius 6 with a stroke of 2; a cross of half-side 6 with a stroke of 3).
pub(crate) const MARKER_HALF_PX: i128 = 8;
/// Space kept clear between a label box and any other box.
pub(crate) const LABEL_GAP_PX: i128 = 2;
/// How far from its point a label may be set apart (with a leader line).
const DISPLACED_RADIUS_PX: i128 = 240;
/// The grid a displaced label's corner is searched on.
const DISPLACED_STEP_X_PX: i128 = 6;
const DISPLACED_STEP_Y_PX: i128 = 5;
/// A label box farther than this from its point gets a leader line.
const LEADER_FROM_PX: i128 = MARKER_HALF_PX + LABEL_GAP_PX + 4;
/// The height of one row of the list below the chart that takes a label
/// with no room near its point.
pub(crate) const OVERFLOW_ROW_PX: i128 = 16;

/// The box of a label of `chars` characters.
pub(crate) fn label_width(chars: usize) -> i128 {
    i128::try_from(chars).unwrap_or(i128::MAX / 4) * LABEL_CHAR_WIDTH_PX
}

/// A point marker's box.
pub(crate) fn marker_box((x, y): (i128, i128)) -> Rect {
    Rect {
        x0: x - MARKER_HALF_PX,
        y0: y - MARKER_HALF_PX,
        x1: x + MARKER_HALF_PX,
        y1: y + MARKER_HALF_PX,
    }
}

/// Where one label went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Placed {
    /// The label's box; its text starts at `x0` on the baseline
    /// `y0 + LABEL_ASCENT_PX`.
    pub rect: Rect,
    /// From the point to the box, when the box is set apart from it.
    pub leader: Option<((i128, i128), (i128, i128))>,
    /// Listed below the chart: no room anywhere near its point.
    pub overflow: bool,
}

impl Placed {
    /// The x of the text start and the y of its baseline.
    pub(crate) fn text_at(&self) -> (i128, i128) {
        (self.rect.x0, self.rect.y0 + LABEL_ASCENT_PX)
    }
}

/// What the placement must keep clear of.
pub(crate) struct Field<'a> {
    /// Every label box next to its point lies inside.
    pub area: Rect,
    /// Fixed texts of the chart (axis tick labels).
    pub fixed: &'a [Rect],
    /// The y of the first row of the list below the chart.
    pub overflow_top: i128,
    /// The x the list's rows start at.
    pub overflow_left: i128,
}

/// A label box of width `w` whose corner is at `(x0, y0)`.
fn label_box(x0: i128, y0: i128, w: i128) -> Rect {
    Rect {
        x0,
        y0,
        x1: x0 + w,
        y1: y0 + LABEL_ASCENT_PX + LABEL_DESCENT_PX,
    }
}

/// The eight boxes next to a point, in order of preference: right, left,
/// above and below (right, left, centred) of its marker.
fn adjacent(at: (i128, i128), w: i128) -> [Rect; 8] {
    let (x, y) = at;
    let h = LABEL_ASCENT_PX + LABEL_DESCENT_PX;
    let side = MARKER_HALF_PX + LABEL_GAP_PX;
    let (mid, above, below) = (y - h / 2, y - side - h, y + side);
    [
        label_box(x + side, mid, w),
        label_box(x - side - w, mid, w),
        label_box(x, above, w),
        label_box(x - w, above, w),
        label_box(x, below, w),
        label_box(x - w, below, w),
        label_box(x - w / 2, above, w),
        label_box(x - w / 2, below, w),
    ]
}

/// Boxes set apart from a point, nearest first (ties: top to bottom,
/// left to right), within [`DISPLACED_RADIUS_PX`].
fn displaced(at: (i128, i128), w: i128) -> Vec<Rect> {
    let h = LABEL_ASCENT_PX + LABEL_DESCENT_PX;
    let r = DISPLACED_RADIUS_PX;
    let mut boxes: Vec<(i128, Rect)> = Vec::new();
    let mut y0 = at.1 - r - h;
    while y0 <= at.1 + r {
        let mut x0 = at.0 - r - w;
        while x0 <= at.0 + r {
            let rect = label_box(x0, y0, w);
            let d = rect.distance_sq(at);
            if d <= r * r {
                boxes.push((d, rect));
            }
            x0 += DISPLACED_STEP_X_PX;
        }
        y0 += DISPLACED_STEP_Y_PX;
    }
    boxes.sort_by_key(|(d, rect)| (*d, rect.y0, rect.x0));
    boxes.into_iter().map(|(_, rect)| rect).collect()
}

/// The placement so far.
struct Board<'a> {
    field: &'a Field<'a>,
    markers: Vec<Rect>,
    labels: Vec<Rect>,
    leaders: Vec<((i128, i128), (i128, i128))>,
}

impl Board<'_> {
    /// Whether the box (and its leader, if any) of the label of point
    /// `own` keeps clear of everything placed.
    fn free(&self, own: usize, rect: &Rect, leader: Option<((i128, i128), (i128, i128))>) -> bool {
        let clear = rect.grown(LABEL_GAP_PX);
        let boxes_clear = self.field.area.contains(rect)
            && !self.markers.iter().any(|m| m.intersects(&clear))
            && !self.field.fixed.iter().any(|f| f.intersects(&clear))
            && !self.labels.iter().any(|l| l.intersects(&clear))
            && !self.leaders.iter().any(|&(a, b)| clear.meets_segment(a, b));
        boxes_clear
            && leader.is_none_or(|(a, b)| {
                // Markers that overlap its own are crossed by any leader.
                let own_marker = self.markers[own];
                let others = self.markers.iter().filter(|m| !m.intersects(&own_marker));
                !others.into_iter().any(|m| m.meets_segment(a, b))
                    && !self.labels.iter().any(|l| l.grown(1).meets_segment(a, b))
                    && !self.field.fixed.iter().any(|f| f.meets_segment(a, b))
            })
    }

    /// The label of point `own`, `w` wide: next to it, else set apart with
    /// a leader, else `None`.
    fn near(&self, own: usize, at: (i128, i128), w: i128) -> Option<Placed> {
        let next_to = adjacent(at, w)
            .into_iter()
            .find(|rect| self.free(own, rect, None));
        if let Some(rect) = next_to {
            return Some(Placed {
                rect,
                leader: None,
                overflow: false,
            });
        }
        displaced(at, w).into_iter().find_map(|rect| {
            let apart = rect.distance_sq(at) > LEADER_FROM_PX * LEADER_FROM_PX;
            let leader = apart.then(|| (at, rect.nearest(at)));
            self.free(own, &rect, leader).then_some(Placed {
                rect,
                leader,
                overflow: false,
            })
        })
    }
}

/// Places one label per point: `points[i]` is the centre of point i's
/// marker and `widths[i]` its label's width. Points are taken in order;
/// each label goes to the first free box next to its point, else the
/// nearest free box within [`DISPLACED_RADIUS_PX`] with a leader line,
/// else a row of the list below the chart (`overflow`).
pub(crate) fn place_labels(
    points: &[(i128, i128)],
    widths: &[i128],
    field: &Field<'_>,
) -> Vec<Placed> {
    let mut board = Board {
        field,
        markers: points.iter().map(|&at| marker_box(at)).collect(),
        labels: Vec::new(),
        leaders: Vec::new(),
    };
    let mut rows = 0;
    let mut placed = Vec::with_capacity(points.len());
    for (own, (&at, &w)) in points.iter().zip(widths).enumerate() {
        let label = board.near(own, at, w).unwrap_or_else(|| {
            rows += 1;
            Placed {
                rect: label_box(
                    field.overflow_left,
                    field.overflow_top + (rows - 1) * OVERFLOW_ROW_PX,
                    w,
                ),
                leader: None,
                overflow: true,
            }
        });
        if !label.overflow {
            board.labels.push(label.rect);
            board.leaders.extend(label.leader);
        }
        placed.push(label);
    }
    placed
}

#[cfg(test)]
#[path = "labels_tests.rs"]
mod tests;
