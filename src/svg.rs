//! An SVG drawing of a small topology with a set of disjoint paths in distinct colours.
//!
//! Layout: a grid whose columns and rows follow Gray code, so that most edges join neighbouring
//! cells. For EH(s,t) the column is the `a` field and the row the `b` field; each cell holds its
//! s-type node (upper left) and t-type node (lower right), joined by the dummy edge; `a` edges
//! run along rows, `b` edges along columns. For Q_n the low half of the bits picks the column and
//! the high half the row. The two-level families put each group in a cell, its members on a small
//! circle inside: HHC groups by subcube (Gray grid of sigma, members by processor), the metacube
//! by k-cube (Gray grid of the fields, members by class), RDN by cluster (one row per type, members
//! by node id). Edges between cells that are not next to each other are drawn as arcs.

use cuberoute_protocol::{NodeId, PathSet, Topology};
use std::collections::HashMap;
use std::fmt::Write;

/// Largest topology drawn, in nodes.
pub const MAX_NODES: u64 = 64;

const CELL: f64 = 120.0;
const MARGIN: f64 = 70.0;
const COLOURS: [&str; 10] = [
    "#e6194b", "#3cb44b", "#4363d8", "#f58231", "#911eb4", "#42d4f4", "#f032e6", "#9a6324",
    "#808000", "#000075",
];

/// The position of a node on the canvas.
fn position(topology: Topology, v: NodeId) -> (f64, f64) {
    let rank = |x: u64| {
        // Inverse Gray code: the place of x in the Gray sequence.
        let mut r = x;
        let mut shift = x >> 1;
        while shift != 0 {
            r ^= shift;
            shift >>= 1;
        }
        r as f64
    };
    match topology {
        Topology::Exchanged(eh) => {
            let offset = if v.0 & 1 == 0 { 0.0 } else { CELL * 0.38 };
            (
                MARGIN + rank(eh.a_of(v)) * CELL + offset,
                MARGIN + rank(eh.b_of(v)) * CELL + offset,
            )
        }
        Topology::Hypercube(q) => {
            let low = q.n.div_ceil(2);
            (
                MARGIN + rank(v.0 & ((1 << low) - 1)) * CELL,
                MARGIN + rank(v.0 >> low) * CELL,
            )
        }
        Topology::Hhc(h) => {
            let sigma = h.subcube(v);
            let low = h.cube_dimension().div_ceil(2);
            let cell = (rank(sigma & ((1 << low) - 1)), rank(sigma >> low));
            in_cell(cell, h.processor(v) as u64, 1 << h.m)
        }
        Topology::Metacube(mc) => {
            let fields = mc.fields(v);
            let low = mc.field_bits().div_ceil(2);
            let cell = (rank(fields & ((1 << low) - 1)), rank(fields >> low));
            in_cell(cell, mc.class(v) as u64, mc.classes() as u64)
        }
        Topology::DualNet(r) => {
            let n = r.nodes_at(r.k - 1);
            let cluster = v.0 / n;
            let cell = ((cluster % n) as f64, (cluster / n) as f64);
            in_cell(cell, v.0 % n, n)
        }
    }
}

/// Member `i` of `count` on a circle inside grid cell `(column, row)`.
fn in_cell((column, row): (f64, f64), i: u64, count: u64) -> (f64, f64) {
    let angle = std::f64::consts::TAU * i as f64 / count as f64 - std::f64::consts::FRAC_PI_2;
    let radius = CELL * 0.3;
    (
        MARGIN + column * CELL + radius * angle.cos(),
        MARGIN + row * CELL + radius * angle.sin(),
    )
}

/// How far an edge keeps from every node it does not join: its circle and its label, so that
/// no path seems to pass a node it skips.
const CLEAR: f64 = 16.0;

/// Every node's place, found by grid cell: what drawing an edge clear of the nodes it skips
/// asks ("which nodes are near this point").
struct Layout {
    topology: Topology,
    cells: HashMap<(i64, i64), Vec<(f64, f64)>>,
}

fn cell_of((x, y): (f64, f64)) -> (i64, i64) {
    ((x / CELL).floor() as i64, (y / CELL).floor() as i64)
}

impl Layout {
    fn new(topology: Topology) -> Layout {
        let mut cells: HashMap<(i64, i64), Vec<(f64, f64)>> = HashMap::new();
        for v in topology.nodes() {
            let place = position(topology, v);
            cells.entry(cell_of(place)).or_default().push(place);
        }
        Layout { topology, cells }
    }

    /// The least distance from any of `points` to a node other than `ends` (only nodes closer
    /// than a cell are looked at: [`CLEAR`] is far less), or a distance under `enough` once one
    /// is found.
    fn clearance(&self, points: &[(f64, f64)], ends: [(f64, f64); 2], enough: f64) -> f64 {
        let mut least = CELL;
        for &(x, y) in points {
            if least < enough {
                break;
            }
            let (cx, cy) = cell_of((x, y));
            for dx in -1..=1 {
                for dy in -1..=1 {
                    for &(nx, ny) in self.cells.get(&(cx + dx, cy + dy)).into_iter().flatten() {
                        if ends.contains(&(nx, ny)) {
                            continue;
                        }
                        least = least.min(((x - nx).powi(2) + (y - ny).powi(2)).sqrt());
                    }
                }
            }
        }
        least
    }

    /// The SVG path data of the edge u-v: a line between nearby nodes, else (or where a line
    /// would pass a node) an arc, bulging as little as keeps it [`CLEAR`] of every node it
    /// skips, on whichever side does.
    fn edge_path(&self, u: NodeId, v: NodeId) -> String {
        let (x1, y1) = position(self.topology, u);
        let (x2, y2) = position(self.topology, v);
        let ends = [(x1, y1), (x2, y2)];
        let length = ((x2 - x1).powi(2) + (y2 - y1).powi(2)).sqrt();
        let line = || format!("M{x1:.1},{y1:.1} L{x2:.1},{y2:.1}");
        // A point every 3 px or so along the chord (a curve is at most about twice as long).
        let steps = (length / 3.0).ceil().clamp(16.0, 400.0) as u32;
        let along = |control: Option<(f64, f64)>| -> Vec<(f64, f64)> {
            (0..=steps)
                .map(|i| {
                    let t = f64::from(i) / f64::from(steps);
                    match control {
                        None => (x1 + t * (x2 - x1), y1 + t * (y2 - y1)),
                        Some((cx, cy)) => {
                            let s = 1.0 - t;
                            (
                                s * s * x1 + 2.0 * s * t * cx + t * t * x2,
                                s * s * y1 + 2.0 * s * t * cy + t * t * y2,
                            )
                        }
                    }
                })
                .collect()
        };
        if length <= CELL * 1.01 && self.clearance(&along(None), ends, CLEAR) >= CLEAR {
            return line();
        }
        // The control point off the chord's middle, perpendicular to it.
        let (mx, my) = ((x1 + x2) / 2.0, (y1 + y2) / 2.0);
        let (nx, ny) = (-(y2 - y1) / length, (x2 - x1) / length);
        let mut best: Option<(f64, (f64, f64))> = None;
        // Over more than 8 cells (the view of a large cluster) no bulge clears every row it
        // crosses: the usual one, without a search.
        let search = if length <= 8.0 * CELL { 24 } else { 1 };
        for bulge in (0..search).map(|i| 0.18 + 0.04 * f64::from(i)) {
            for side in [1.0, -1.0] {
                let control = (
                    mx + nx * bulge * side * length,
                    my + ny * bulge * side * length,
                );
                // Only a curve clearer than the best so far matters.
                let enough = best.map_or(0.0, |(c, _)| c);
                let clear = self.clearance(&along(Some(control)), ends, enough);
                if best.is_none_or(|(c, _)| clear > c) {
                    best = Some((clear, control));
                }
            }
            if best.is_some_and(|(c, _)| c >= CLEAR) {
                break;
            }
        }
        let (_, (cx, cy)) = best.expect("tried");
        format!("M{x1:.1},{y1:.1} Q{cx:.1},{cy:.1} {x2:.1},{y2:.1}")
    }
}

/// The layout of `topology` for `cluster view`: every node's place and every edge's path data.
pub fn drawing(topology: Topology) -> cuberoute_cluster::ops::view::Drawing {
    use cuberoute_cluster::ops::view::{Drawing, DrawnLink, DrawnNode};
    let layout = &Layout::new(topology);
    let nodes: Vec<DrawnNode> = topology
        .nodes()
        .map(|v| {
            let (x, y) = position(topology, v);
            DrawnNode {
                id: v.0,
                label: crate::print::node(topology, v),
                x,
                y,
            }
        })
        .collect();
    let links = topology
        .nodes()
        .flat_map(|u| {
            topology
                .neighbours(u)
                .filter(move |&v| v > u)
                .map(move |v| DrawnLink {
                    a: u.0,
                    b: v.0,
                    d: layout.edge_path(u, v),
                    dummy: (u.0 ^ v.0) == 1 && matches!(topology, Topology::Exchanged(_)),
                })
        })
        .collect();
    let width = nodes.iter().map(|n| n.x).fold(0.0, f64::max) + MARGIN + 60.0;
    let height = nodes.iter().map(|n| n.y).fold(0.0, f64::max) + MARGIN;
    Drawing {
        topology: topology.to_string(),
        width,
        height,
        nodes,
        links,
    }
}

/// Draw `set.topology` with the paths of `set`. The topology must have at most [`MAX_NODES`].
pub fn render(set: &PathSet) -> String {
    let t = set.topology;
    let layout = Layout::new(t);
    let (mut width, mut height) = (0.0f64, 0.0f64);
    for v in t.nodes() {
        let (x, y) = position(t, v);
        width = width.max(x);
        height = height.max(y);
    }
    let legend_height = 24.0 * (set.k() as f64 + 2.0);
    let (width, height) = (width + MARGIN + 60.0, height + MARGIN + legend_height);
    let mut svg = String::new();
    let _ = writeln!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0}" height="{height:.0}" viewBox="0 0 {width:.0} {height:.0}" font-family="monospace">"#
    );
    let _ = writeln!(svg, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(
        svg,
        r##"<g fill="none" stroke="#c8c8c8" stroke-width="1.5">"##
    );
    for u in t.nodes() {
        for v in t.neighbours(u).filter(|&v| v > u) {
            let dash = if (u.0 ^ v.0) == 1 && matches!(t, Topology::Exchanged(_)) {
                r#" stroke-dasharray="4,3""#
            } else {
                ""
            };
            let _ = writeln!(svg, r#"<path d="{}"{dash}/>"#, layout.edge_path(u, v));
        }
    }
    let _ = writeln!(svg, "</g>");
    for (i, path) in set.paths.iter().enumerate() {
        let colour = COLOURS[i % COLOURS.len()];
        let _ = writeln!(
            svg,
            r#"<g fill="none" stroke="{colour}" stroke-width="5" stroke-linecap="round" opacity="0.85">"#
        );
        for pair in path.windows(2) {
            let _ = writeln!(svg, r#"<path d="{}"/>"#, layout.edge_path(pair[0], pair[1]));
        }
        let _ = writeln!(svg, "</g>");
    }
    for v in t.nodes() {
        let (x, y) = position(t, v);
        let (fill, radius) = if v == set.src || v == set.dst {
            ("#222", 9.0)
        } else {
            ("#fff", 6.0)
        };
        let _ = writeln!(
            svg,
            r##"<circle cx="{x:.1}" cy="{y:.1}" r="{radius}" fill="{fill}" stroke="#222" stroke-width="1.5"/><text x="{:.1}" y="{:.1}" font-size="10" fill="#444">{}</text>"##,
            x + 8.0,
            y - 8.0,
            crate::print::node(t, v)
        );
    }
    let mut y = height - legend_height + 20.0;
    let _ = writeln!(
        svg,
        r#"<text x="{MARGIN}" y="{y:.0}" font-size="14">{t}: {} -> {}, distance {}, k = {}, longest {}</text>"#,
        crate::print::node(t, set.src),
        crate::print::node(t, set.dst),
        set.distance(),
        set.k(),
        set.longest()
    );
    for (i, path) in set.paths.iter().enumerate() {
        y += 22.0;
        let colour = COLOURS[i % COLOURS.len()];
        let _ = writeln!(
            svg,
            r#"<rect x="{MARGIN}" y="{:.0}" width="28" height="6" fill="{colour}"/><text x="{:.0}" y="{y:.0}" font-size="13">path {}: {} hops</text>"#,
            y - 7.0,
            MARGIN + 36.0,
            i + 1,
            path.len() - 1
        );
    }
    svg.push_str("</svg>\n");
    svg
}

#[cfg(test)]
mod tests {
    use super::*;
    use cuberoute_protocol::disjoint_paths;

    #[test]
    fn draws_every_node_and_path() {
        let t: Topology = "eh:1,2".parse().unwrap();
        let set = disjoint_paths(t, NodeId(0), NodeId(15)).unwrap();
        let svg = render(&set);
        assert_eq!(svg.matches("<circle").count(), 16);
        let hops: usize = set.paths.iter().map(|p| p.len() - 1).sum();
        let edges: u32 = t.nodes().map(|v| t.degree(v)).sum::<u32>() / 2;
        assert_eq!(svg.matches("<path").count(), edges as usize + hops);
        assert!(svg.ends_with("</svg>\n"));
    }

    #[test]
    fn the_view_draws_every_node_and_link_once() {
        let t: Topology = "eh:2,2".parse().unwrap();
        let d = drawing(t);
        assert_eq!(d.nodes.len(), 32);
        let edges: u32 = t.nodes().map(|v| t.degree(v)).sum::<u32>() / 2;
        assert_eq!(d.links.len(), edges as usize);
        assert_eq!(d.links.iter().filter(|l| l.dummy).count(), 16);
        assert!(d.nodes.iter().all(|n| n.x < d.width && n.y < d.height));
    }

    #[test]
    fn nodes_do_not_overlap() {
        for name in [
            "eh:2,3",
            "eh:3,2",
            "q:6",
            "eh:1,4",
            "hhc:2",
            "mc:1,2",
            "mc:2,1",
            "rdn:ring3,1",
            "rdn:q2,1",
        ] {
            let t: Topology = name.parse().unwrap();
            let mut seen = std::collections::HashSet::new();
            for v in t.nodes() {
                let (x, y) = position(t, v);
                assert!(seen.insert((x as i64, y as i64)), "{name}: {v:?} overlaps");
            }
        }
    }
    /// The points of an edge's path data (a line or one quadratic curve), `steps` of them.
    fn points(d: &str, steps: usize) -> Vec<(f64, f64)> {
        let numbers: Vec<f64> = d
            .split(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-'))
            .filter(|s| !s.is_empty())
            .map(|s| s.parse().unwrap())
            .collect();
        let at = |t: f64| match numbers[..] {
            [x1, y1, x2, y2] => (x1 + t * (x2 - x1), y1 + t * (y2 - y1)),
            [x1, y1, cx, cy, x2, y2] => {
                let u = 1.0 - t;
                (
                    u * u * x1 + 2.0 * u * t * cx + t * t * x2,
                    u * u * y1 + 2.0 * u * t * cy + t * t * y2,
                )
            }
            _ => panic!("{d}"),
        };
        (0..=steps).map(|i| at(i as f64 / steps as f64)).collect()
    }

    /// Issue 49: no link is drawn over a node it does not join (a path would seem to pass it):
    /// every point of every edge keeps clear of every other node's circle and label.
    #[test]
    fn links_keep_clear_of_the_nodes_they_skip() {
        // The two-level families crowd each group on a small circle in its cell: there a link
        // keeps clear of the circles, not always of the labels.
        for (name, clear) in [
            ("q:3", CLEAR - 2.0),
            ("q:4", CLEAR - 2.0),
            ("q:5", CLEAR - 2.0),
            ("q:6", CLEAR - 2.0),
            ("eh:1,2", CLEAR - 2.0),
            ("eh:2,2", CLEAR - 2.0),
            ("eh:2,3", CLEAR - 2.0),
            ("eh:3,3", CLEAR - 2.0),
            ("hhc:2", 9.0),
            ("mc:1,2", 9.0),
            ("mc:2,1", 9.0),
            ("rdn:q2,1", 9.0),
        ] {
            let t: Topology = name.parse().unwrap();
            let places: Vec<(NodeId, (f64, f64))> =
                t.nodes().map(|v| (v, position(t, v))).collect();
            for u in t.nodes() {
                for v in t.neighbours(u).filter(|&v| v > u) {
                    let d = Layout::new(t).edge_path(u, v);
                    for (x, y) in points(&d, 200) {
                        for &(w, (wx, wy)) in &places {
                            if w == u || w == v {
                                continue;
                            }
                            let far = ((x - wx).powi(2) + (y - wy).powi(2)).sqrt();
                            // Drawn by a point every 3 px or so, checked by 200 points.
                            assert!(
                                far >= clear,
                                "{name}: the link {}-{} passes {far:.1} from {}",
                                t.format_node(u),
                                t.format_node(v),
                                t.format_node(w)
                            );
                        }
                    }
                }
            }
        }
    }
}
