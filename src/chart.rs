//! A hand-written SVG line chart over labelled x positions, for the seed-topology studies of
//! `cuberoute study` (`crate::plot` draws the Q_n ones).

use std::fmt::Write;

const W: f64 = 820.0;
const H: f64 = 480.0;
const LEFT: f64 = 64.0;
const RIGHT: f64 = 230.0;
const TOP: f64 = 48.0;
const BOTTOM: f64 = 64.0;

/// One line of the chart: a value per x position.
pub struct Line<'a> {
    pub label: &'a str,
    pub colour: &'a str,
    /// SVG dash pattern, empty for a solid line.
    pub dash: &'a str,
    pub values: Vec<f64>,
}

/// The chart: `x_labels` evenly spaced, a linear y axis from 0, the legend on the right.
pub fn lines(title: &str, x_title: &str, x_labels: &[String], lines: &[Line]) -> String {
    let ymax = lines
        .iter()
        .flat_map(|l| l.values.iter().copied())
        .fold(1.0, f64::max);
    let ystep = [2.0, 5.0, 10.0, 20.0, 25.0, 50.0, 100.0]
        .into_iter()
        .find(|step| ymax / step <= 12.0)
        .unwrap_or(200.0);
    let ytop = (ymax / ystep).ceil() * ystep;
    let span = (x_labels.len().max(2) - 1) as f64;
    let px = |i: usize| LEFT + i as f64 / span * (W - LEFT - RIGHT);
    let py = |y: f64| H - BOTTOM - y / ytop * (H - TOP - BOTTOM);
    let mut svg = String::new();
    let _ = writeln!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="13">"#
    );
    let _ = writeln!(svg, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(
        svg,
        r#"<text x="{:.1}" y="26" font-size="16" text-anchor="middle">{title}</text>"#,
        (LEFT + W - RIGHT) / 2.0
    );
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
    for (i, label) in x_labels.iter().enumerate() {
        let _ = writeln!(
            svg,
            r##"<text x="{:.1}" y="{:.1}" text-anchor="middle" fill="#444">{label}</text>"##,
            px(i),
            H - BOTTOM + 18.0
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
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{x_title}</text>"#,
        (LEFT + W - RIGHT) / 2.0,
        H - 18.0
    );
    let _ = writeln!(
        svg,
        r#"<text transform="translate(18,{:.1}) rotate(-90)" text-anchor="middle">path length (edges)</text>"#,
        (TOP + H - BOTTOM) / 2.0
    );
    for (n, line) in lines.iter().enumerate() {
        let points: Vec<String> = line
            .values
            .iter()
            .enumerate()
            .map(|(i, &v)| format!("{:.1},{:.1}", px(i), py(v)))
            .collect();
        let dash = if line.dash.is_empty() {
            String::new()
        } else {
            format!(r#" stroke-dasharray="{}""#, line.dash)
        };
        let _ = writeln!(
            svg,
            r#"<polyline points="{}" fill="none" stroke="{}" stroke-width="2"{dash}/>"#,
            points.join(" "),
            line.colour
        );
        for (i, &v) in line.values.iter().enumerate() {
            let _ = writeln!(
                svg,
                r#"<circle cx="{:.1}" cy="{:.1}" r="3" fill="{}"/>"#,
                px(i),
                py(v),
                line.colour
            );
        }
        let ly = TOP + 10.0 + 24.0 * n as f64;
        let _ = writeln!(
            svg,
            r#"<line x1="{0:.1}" y1="{ly:.1}" x2="{1:.1}" y2="{ly:.1}" stroke="{2}" stroke-width="2"{dash}/><text x="{3:.1}" y="{4:.1}">{5}</text>"#,
            W - RIGHT + 16.0,
            W - RIGHT + 44.0,
            line.colour,
            W - RIGHT + 50.0,
            ly + 4.0,
            line.label
        );
    }
    svg.push_str("</svg>\n");
    svg
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_polyline_and_legend_entry_per_line() {
        let labels: Vec<String> = ["3", "4", "5"].iter().map(|s| s.to_string()).collect();
        let svg = lines(
            "t",
            "m",
            &labels,
            &[
                Line {
                    label: "a",
                    colour: "#000",
                    dash: "",
                    values: vec![1.0, 2.0, 3.0],
                },
                Line {
                    label: "b",
                    colour: "#f00",
                    dash: "4,2",
                    values: vec![3.0, 2.0, 1.0],
                },
            ],
        );
        assert_eq!(svg.matches("<polyline").count(), 2);
        assert_eq!(svg.matches("<circle").count(), 6);
        assert!(svg.ends_with("</svg>\n"));
    }
}
