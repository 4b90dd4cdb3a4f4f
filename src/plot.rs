//! A hand-written SVG line chart for `cuberoute study`: per size n, the mean (with one standard
//! deviation as error bars) and the maximum of the longest path, the theoretical bound, and the
//! generic max flow's mean and maximum on the same instances.

use crate::commands::study::Row;
use std::fmt::Write;

const W: f64 = 760.0;
const H: f64 = 460.0;
const LEFT: f64 = 64.0;
const RIGHT: f64 = 200.0;
const TOP: f64 = 48.0;
const BOTTOM: f64 = 56.0;

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
    let py = |y: f64| H - BOTTOM - y / ytop * (H - TOP - BOTTOM);
    let mut svg = String::new();
    let _ = writeln!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="13">"#
    );
    let _ = writeln!(svg, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(
        svg,
        r#"<text x="{}" y="26" font-size="16" text-anchor="middle">{title}: longest path per instance</text>"#,
        (LEFT + W - RIGHT) / 2.0
    );
    // Grid and axes.
    let mut y = 0.0;
    while y <= ytop + 1e-9 {
        let _ = writeln!(
            svg,
            r##"<line x1="{LEFT}" y1="{0:.1}" x2="{1:.1}" y2="{0:.1}" stroke="#e4e4e4"/><text x="{2:.1}" y="{3:.1}" text-anchor="end" fill="#444">{y}</text>"##,
            py(y),
            W - RIGHT,
            LEFT - 8.0,
            py(y) + 4.0
        );
        y += ystep;
    }
    for r in rows {
        let _ = writeln!(
            svg,
            r##"<text x="{:.1}" y="{:.1}" text-anchor="middle" fill="#444">{}</text>"##,
            px(r.n as f64),
            H - BOTTOM + 18.0,
            r.n
        );
    }
    let _ = writeln!(
        svg,
        r##"<line x1="{LEFT}" y1="{0:.1}" x2="{1:.1}" y2="{0:.1}" stroke="#222"/><line x1="{LEFT}" y1="{2}" x2="{LEFT}" y2="{0:.1}" stroke="#222"/>"##,
        py(0.0),
        W - RIGHT,
        TOP
    );
    let _ = writeln!(
        svg,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">dimension n</text>"#,
        (LEFT + W - RIGHT) / 2.0,
        H - 14.0
    );
    let _ = writeln!(
        svg,
        r#"<text transform="translate(18,{:.1}) rotate(-90)" text-anchor="middle">path length (edges)</text>"#,
        (TOP + H - BOTTOM) / 2.0
    );
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
