//! A hand-written SVG line chart for `cuberoute study`: per size n, the mean (with one standard
//! deviation as error bars) and the maximum of the longest path, the theoretical bound, and the
//! generic max flow's mean and maximum on the same instances.

use crate::chart::Frame;
use crate::commands::study::Row;
use std::fmt::Write;

const FRAME: Frame = Frame {
    w: 760.0,
    h: 460.0,
    left: 64.0,
    right: 200.0,
    top: 48.0,
    bottom: 56.0,
};
const W: f64 = FRAME.w;
const H: f64 = FRAME.h;
const LEFT: f64 = FRAME.left;
const RIGHT: f64 = FRAME.right;
const TOP: f64 = FRAME.top;
const BOTTOM: f64 = FRAME.bottom;

struct Series<'a> {
    label: &'a str,
    colour: &'a str,
    dash: &'a str,
    marker: bool,
    points: Vec<(f64, f64)>,
}

pub fn longest_path_chart(title: &str, rows: &[Row]) -> String {
    let (x0, x1) = (rows[0].n as f64, rows[rows.len() - 1].n as f64);
    let ymax = rows
        .iter()
        .map(|r| r.bound.max(r.max).max(r.flow_max) as f64)
        .fold(0.0, f64::max);
    let ystep = if ymax <= 12.0 {
        2.0
    } else if ymax <= 30.0 {
        5.0
    } else {
        10.0
    };
    let ytop = (ymax / ystep).ceil() * ystep;
    let span = (x1 - x0).max(1.0);
    let px = |x: f64| LEFT + (x - x0) / span * (W - LEFT - RIGHT);
    let py = |y: f64| FRAME.y(y, ytop);
    let mut svg = String::new();
    FRAME.open(&mut svg);
    let _ = writeln!(
        svg,
        r#"<text x="{}" y="26" font-size="16" text-anchor="middle">{title}: longest path per instance</text>"#,
        (LEFT + W - RIGHT) / 2.0
    );
    // Grid and axes.
    FRAME.y_grid(&mut svg, ytop, ystep);
    for r in rows {
        let _ = writeln!(
            svg,
            r##"<text x="{:.1}" y="{:.1}" text-anchor="middle" fill="#444">{}</text>"##,
            px(r.n as f64),
            H - BOTTOM + 18.0,
            r.n
        );
    }
    FRAME.axes(&mut svg, ytop, "dimension n", H - 14.0);
    // Error bars: mean +- one standard deviation.
    for r in rows {
        let x = px(r.n as f64);
        let (a, b) = (py((r.mean - r.std).max(0.0)), py(r.mean + r.std));
        let _ = writeln!(
            svg,
            r##"<path d="M{x:.1},{a:.1} V{b:.1} M{:.1},{a:.1} h8 M{:.1},{b:.1} h8" stroke="#1f5fbf" stroke-width="1.2" fill="none"/>"##,
            x - 4.0,
            x - 4.0
        );
    }
    let series = [
        Series {
            label: "bound",
            colour: "#555",
            dash: "6,4",
            marker: false,
            points: rows.iter().map(|r| (r.n as f64, r.bound as f64)).collect(),
        },
        Series {
            label: "max longest",
            colour: "#c0392b",
            dash: "",
            marker: true,
            points: rows.iter().map(|r| (r.n as f64, r.max as f64)).collect(),
        },
        Series {
            label: "mean longest ± 1 sd",
            colour: "#1f5fbf",
            dash: "",
            marker: true,
            points: rows.iter().map(|r| (r.n as f64, r.mean)).collect(),
        },
        Series {
            label: "max flow: max",
            colour: "#2e8b57",
            dash: "3,3",
            marker: true,
            points: rows
                .iter()
                .map(|r| (r.n as f64, r.flow_max as f64))
                .collect(),
        },
        Series {
            label: "max flow: mean",
            colour: "#7fbf3f",
            dash: "3,3",
            marker: true,
            points: rows.iter().map(|r| (r.n as f64, r.flow_mean)).collect(),
        },
    ];
    for (i, s) in series.iter().enumerate() {
        let d: Vec<String> = s
            .points
            .iter()
            .enumerate()
            .map(|(j, &(x, y))| {
                format!(
                    "{}{:.1},{:.1}",
                    if j == 0 { "M" } else { "L" },
                    px(x),
                    py(y)
                )
            })
            .collect();
        let dash = if s.dash.is_empty() {
            String::new()
        } else {
            format!(r#" stroke-dasharray="{}""#, s.dash)
        };
        let _ = writeln!(
            svg,
            r#"<path d="{}" fill="none" stroke="{}" stroke-width="2"{dash}/>"#,
            d.join(" "),
            s.colour
        );
        if s.marker {
            for &(x, y) in &s.points {
                let _ = writeln!(
                    svg,
                    r#"<circle cx="{:.1}" cy="{:.1}" r="3.2" fill="{}"/>"#,
                    px(x),
                    py(y),
                    s.colour
                );
            }
        }
        let ly = TOP + 14.0 + 24.0 * i as f64;
        let lx = W - RIGHT + 16.0;
        let _ = writeln!(
            svg,
            r#"<line x1="{lx}" y1="{ly}" x2="{}" y2="{ly}" stroke="{}" stroke-width="2"{dash}/><text x="{}" y="{}">{}</text>"#,
            lx + 26.0,
            s.colour,
            lx + 32.0,
            ly + 4.0,
            s.label
        );
    }
    let _ = writeln!(
        svg,
        r##"<text x="{}" y="{}" fill="#444" font-size="11">{} instances per n;</text><text x="{}" y="{}" fill="#444" font-size="11">max flow on the first {}</text>"##,
        W - RIGHT + 16.0,
        TOP + 150.0,
        rows[0].instances,
        W - RIGHT + 16.0,
        TOP + 166.0,
        rows[0].flow_instances
    );
    svg.push_str("</svg>\n");
    svg
}
