//! A hand-written SVG line chart over labelled x positions, for the seed-topology studies of
//! `cuberoute study` (`crate::plot` draws the Q_n ones).

use std::fmt::Write;

const FRAME: Frame = Frame {
    w: 820.0,
    h: 480.0,
    left: 64.0,
    right: 230.0,
    top: 48.0,
    bottom: 64.0,
};
const W: f64 = FRAME.w;
const H: f64 = FRAME.h;
const LEFT: f64 = FRAME.left;
const RIGHT: f64 = FRAME.right;
const TOP: f64 = FRAME.top;
const BOTTOM: f64 = FRAME.bottom;

/// The geometry of a chart: its size and the margins around the plot area (the legend sits in
/// the right one). Both study charts (this module's and `crate::plot`) draw their frame here.
pub struct Frame {
    pub w: f64,
    pub h: f64,
    pub left: f64,
    pub right: f64,
    pub top: f64,
    pub bottom: f64,
}

impl Frame {
    /// The y pixel of value `y` on an axis from 0 to `ytop`.
    pub fn y(&self, y: f64, ytop: f64) -> f64 {
        self.h - self.bottom - y / ytop * (self.h - self.top - self.bottom)
    }

    /// The SVG element and a white background.
    pub fn open(&self, svg: &mut String) {
        let (w, h) = (self.w, self.h);
        let _ = writeln!(
            svg,
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="sans-serif" font-size="13">"#
        );
        let _ = writeln!(svg, r#"<rect width="100%" height="100%" fill="white"/>"#);
    }

    /// Horizontal grid lines with their values, every `ystep` from 0 to `ytop`.
    pub fn y_grid(&self, svg: &mut String, ytop: f64, ystep: f64) {
        let left = self.left;
        let mut y = 0.0;
        while y <= ytop + 1e-9 {
            let _ = writeln!(
                svg,
                r##"<line x1="{left}" y1="{0:.1}" x2="{1:.1}" y2="{0:.1}" stroke="#e4e4e4"/><text x="{2:.1}" y="{3:.1}" text-anchor="end" fill="#444">{y}</text>"##,
                self.y(y, ytop),
                self.w - self.right,
                left - 8.0,
                self.y(y, ytop) + 4.0
            );
            y += ystep;
        }
    }

    /// The two axes, the x axis's title at height `x_title_y`, and the y axis's (path length).
    pub fn axes(&self, svg: &mut String, ytop: f64, x_title: &str, x_title_y: f64) {
        let left = self.left;
        let _ = writeln!(
            svg,
            r##"<line x1="{left}" y1="{0:.1}" x2="{1:.1}" y2="{0:.1}" stroke="#222"/><line x1="{left}" y1="{2}" x2="{left}" y2="{0:.1}" stroke="#222"/>"##,
            self.y(0.0, ytop),
            self.w - self.right,
            self.top
        );
        let _ = writeln!(
            svg,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{x_title}</text>"#,
            (left + self.w - self.right) / 2.0,
            x_title_y
        );
        let _ = writeln!(
            svg,
            r#"<text transform="translate(18,{:.1}) rotate(-90)" text-anchor="middle">path length (edges)</text>"#,
            (self.top + self.h - self.bottom) / 2.0
        );
    }
}

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
    let py = |y: f64| FRAME.y(y, ytop);
    let mut svg = String::new();
    FRAME.open(&mut svg);
    let _ = writeln!(
        svg,
        r#"<text x="{:.1}" y="26" font-size="16" text-anchor="middle">{title}</text>"#,
        (LEFT + W - RIGHT) / 2.0
    );
    FRAME.y_grid(&mut svg, ytop, ystep);
    for (i, label) in x_labels.iter().enumerate() {
        let _ = writeln!(
            svg,
            r##"<text x="{:.1}" y="{:.1}" text-anchor="middle" fill="#444">{label}</text>"##,
            px(i),
            H - BOTTOM + 18.0
        );
    }
    FRAME.axes(&mut svg, ytop, x_title, H - 18.0);
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
