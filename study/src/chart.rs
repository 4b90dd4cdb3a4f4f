//! Every chart the studies draw, as hand-written SVG: a y axis of path lengths from 0 with a
//! grid, the x axis below, the title above, the legend in the right margin.
//!
//! - [`by_size`]: a study on Q_n, over the dimension n: per n the mean of the longest path with
//!   one standard deviation as error bars, its maximum, the bound, and the generic max flow's
//!   mean and maximum on the same instances.
//! - [`lines`]: lines over labelled x positions (the seed-family studies: m for HHC, (k,m) for
//!   the metacube).

use std::fmt::Write;

/// The geometry of a chart: its size and the margins around the plot area (the legend sits in
/// the right one).
struct Frame {
    w: f64,
    h: f64,
    left: f64,
    right: f64,
    top: f64,
    bottom: f64,
}

impl Frame {
    /// The y pixel of value `y` on an axis from 0 to `ytop`.
    fn y(&self, y: f64, ytop: f64) -> f64 {
        self.h - self.bottom - y / ytop * (self.h - self.top - self.bottom)
    }

    /// The middle of the plot area, across.
    fn centre(&self) -> f64 {
        (self.left + self.w - self.right) / 2.0
    }

    /// The SVG element and a white background.
    fn open(&self, svg: &mut String) {
        let (w, h) = (self.w, self.h);
        let _ = writeln!(
            svg,
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="sans-serif" font-size="13">"#
        );
        let _ = writeln!(svg, r#"<rect width="100%" height="100%" fill="white"/>"#);
    }

    /// Horizontal grid lines with their values, every `ystep` from 0 to `ytop`.
    fn y_grid(&self, svg: &mut String, ytop: f64, ystep: f64) {
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

    /// The label of an x position, under the axis.
    fn x_label(&self, svg: &mut String, x: f64, label: impl std::fmt::Display) {
        let _ = writeln!(
            svg,
            r##"<text x="{x:.1}" y="{:.1}" text-anchor="middle" fill="#444">{label}</text>"##,
            self.h - self.bottom + 18.0
        );
    }

    /// The two axes, the x axis's title at height `x_title_y`, and the y axis's (path length).
    fn axes(&self, svg: &mut String, ytop: f64, x_title: &str, x_title_y: f64) {
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
            self.centre(),
            x_title_y
        );
        let _ = writeln!(
            svg,
            r#"<text transform="translate(18,{:.1}) rotate(-90)" text-anchor="middle">path length (edges)</text>"#,
            (self.top + self.h - self.bottom) / 2.0
        );
    }
}

/// The stroke-dasharray attribute of an SVG dash pattern, nothing for a solid line.
fn dash_attribute(dash: &str) -> String {
    if dash.is_empty() {
        String::new()
    } else {
        format!(r#" stroke-dasharray="{dash}""#)
    }
}

// ---- By size, on Q_n ----

const SIZE_FRAME: Frame = Frame {
    w: 760.0,
    h: 460.0,
    left: 64.0,
    right: 200.0,
    top: 48.0,
    bottom: 56.0,
};

/// One size of a study on Q_n, as [`by_size`] draws it.
pub struct Size {
    /// The dimension.
    pub n: u32,
    pub bound: usize,
    /// Mean, standard deviation and maximum of the longest path of each instance.
    pub mean: f64,
    pub std: f64,
    pub max: usize,
    /// The max flow's mean and maximum longest path on its instances.
    pub flow_mean: f64,
    pub flow_max: usize,
}

struct Series<'a> {
    label: &'a str,
    colour: &'a str,
    dash: &'a str,
    marker: bool,
    points: Vec<(f64, f64)>,
}

/// The chart of a study on Q_n (`sizes` not empty, in increasing n): `instances` per n, the
/// max flow on the first `flow_instances` of them.
pub fn by_size(title: &str, sizes: &[Size], instances: usize, flow_instances: usize) -> String {
    let frame = &SIZE_FRAME;
    let (x0, x1) = (sizes[0].n as f64, sizes[sizes.len() - 1].n as f64);
    let ymax = sizes
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
    let px = |x: f64| frame.left + (x - x0) / span * (frame.w - frame.left - frame.right);
    let py = |y: f64| frame.y(y, ytop);
    let mut svg = String::new();
    frame.open(&mut svg);
    let _ = writeln!(
        svg,
        r#"<text x="{}" y="26" font-size="16" text-anchor="middle">{title}: longest path per instance</text>"#,
        frame.centre()
    );
    frame.y_grid(&mut svg, ytop, ystep);
    for r in sizes {
        frame.x_label(&mut svg, px(r.n as f64), r.n);
    }
    frame.axes(&mut svg, ytop, "dimension n", frame.h - 14.0);
    // Error bars: mean +- one standard deviation.
    for r in sizes {
        let x = px(r.n as f64);
        let (a, b) = (py((r.mean - r.std).max(0.0)), py(r.mean + r.std));
        let _ = writeln!(
            svg,
            r##"<path d="M{x:.1},{a:.1} V{b:.1} M{:.1},{a:.1} h8 M{:.1},{b:.1} h8" stroke="#1f5fbf" stroke-width="1.2" fill="none"/>"##,
            x - 4.0,
            x - 4.0
        );
    }
    let at = |value: fn(&Size) -> f64| -> Vec<(f64, f64)> {
        sizes.iter().map(|r| (r.n as f64, value(r))).collect()
    };
    let series = [
        Series {
            label: "bound",
            colour: "#555",
            dash: "6,4",
            marker: false,
            points: at(|r| r.bound as f64),
        },
        Series {
            label: "max longest",
            colour: "#c0392b",
            dash: "",
            marker: true,
            points: at(|r| r.max as f64),
        },
        Series {
            label: "mean longest ± 1 sd",
            colour: "#1f5fbf",
            dash: "",
            marker: true,
            points: at(|r| r.mean),
        },
        Series {
            label: "max flow: max",
            colour: "#2e8b57",
            dash: "3,3",
            marker: true,
            points: at(|r| r.flow_max as f64),
        },
        Series {
            label: "max flow: mean",
            colour: "#7fbf3f",
            dash: "3,3",
            marker: true,
            points: at(|r| r.flow_mean),
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
        let dash = dash_attribute(s.dash);
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
        let ly = frame.top + 14.0 + 24.0 * i as f64;
        let lx = frame.w - frame.right + 16.0;
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
        r##"<text x="{}" y="{}" fill="#444" font-size="11">{instances} instances per n;</text><text x="{}" y="{}" fill="#444" font-size="11">max flow on the first {flow_instances}</text>"##,
        frame.w - frame.right + 16.0,
        frame.top + 150.0,
        frame.w - frame.right + 16.0,
        frame.top + 166.0,
    );
    svg.push_str("</svg>\n");
    svg
}

// ---- Lines over labelled positions ----

const LINES_FRAME: Frame = Frame {
    w: 820.0,
    h: 480.0,
    left: 64.0,
    right: 230.0,
    top: 48.0,
    bottom: 64.0,
};

/// One line of a [`lines`] chart: a value per x position.
pub struct Line<'a> {
    pub label: &'a str,
    pub colour: &'a str,
    /// SVG dash pattern, empty for a solid line.
    pub dash: &'a str,
    pub values: Vec<f64>,
}

/// The chart: `x_labels` evenly spaced, a linear y axis from 0, the legend on the right.
pub fn lines(title: &str, x_title: &str, x_labels: &[String], lines: &[Line]) -> String {
    let frame = &LINES_FRAME;
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
    let px = |i: usize| frame.left + i as f64 / span * (frame.w - frame.left - frame.right);
    let py = |y: f64| frame.y(y, ytop);
    let mut svg = String::new();
    frame.open(&mut svg);
    let _ = writeln!(
        svg,
        r#"<text x="{:.1}" y="26" font-size="16" text-anchor="middle">{title}</text>"#,
        frame.centre()
    );
    frame.y_grid(&mut svg, ytop, ystep);
    for (i, label) in x_labels.iter().enumerate() {
        frame.x_label(&mut svg, px(i), label);
    }
    frame.axes(&mut svg, ytop, x_title, frame.h - 18.0);
    let right = frame.w - frame.right;
    for (n, line) in lines.iter().enumerate() {
        let points: Vec<String> = line
            .values
            .iter()
            .enumerate()
            .map(|(i, &v)| format!("{:.1},{:.1}", px(i), py(v)))
            .collect();
        let dash = dash_attribute(line.dash);
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
        let ly = frame.top + 10.0 + 24.0 * n as f64;
        let _ = writeln!(
            svg,
            r#"<line x1="{0:.1}" y1="{ly:.1}" x2="{1:.1}" y2="{ly:.1}" stroke="{2}" stroke-width="2"{dash}/><text x="{3:.1}" y="{4:.1}">{5}</text>"#,
            right + 16.0,
            right + 44.0,
            line.colour,
            right + 50.0,
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
    fn lines_one_polyline_and_legend_entry_per_line() {
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
        assert_eq!(svg.matches(r#"stroke-dasharray="4,2""#).count(), 2);
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>\n"));
    }

    fn size(n: u32, mean: f64) -> Size {
        Size {
            n,
            bound: n as usize + 3,
            mean,
            std: 0.5,
            max: n as usize + 1,
            flow_mean: mean - 0.5,
            flow_max: n as usize,
        }
    }

    #[test]
    fn by_size_draws_five_series_and_an_error_bar_per_size() {
        let svg = by_size("T", &[size(4, 4.0), size(5, 5.0), size(6, 6.0)], 50, 5);
        // Five series, three error bars.
        assert_eq!(svg.matches("<path").count(), 8);
        // Every series but the bound has a marker per size.
        assert_eq!(svg.matches("<circle").count(), 4 * 3);
        assert!(svg.contains(">T: longest path per instance</text>"));
        assert!(svg.contains(">50 instances per n;<") && svg.contains("the first 5<"));
        assert!(svg.ends_with("</svg>\n"));
    }

    #[test]
    fn values_are_placed_on_the_y_axis() {
        // With a maximum of 9 the axis runs to 10 by steps of 2: value 0 at the bottom of the
        // plot area, 10 at its top.
        let svg = by_size("T", &[size(6, 3.0)], 1, 0);
        let bottom = SIZE_FRAME.h - SIZE_FRAME.bottom;
        assert_eq!(SIZE_FRAME.y(0.0, 10.0), bottom);
        assert_eq!(SIZE_FRAME.y(10.0, 10.0), SIZE_FRAME.top);
        for label in [0, 2, 4, 6, 8, 10] {
            assert!(svg.contains(&format!(">{label}</text>")), "{label}");
        }
        assert!(!svg.contains(">12</text>"));
    }
}
