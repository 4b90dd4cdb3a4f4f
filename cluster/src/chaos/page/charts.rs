//! The page's three charts, drawn by plotters into SVG strings.
//!
//! A time chart is drawn in three layers, one `<svg>` in the end: plotters draws the frame (the
//! background, the grid, the axes and their labels); then come the fault windows, written here
//! as SVG of our own so that each is one element the page and its tests can find (a
//! `<g class="fault-window">` with `data-` attributes, a `<title>`, its translucent band and its
//! name), positioned with the chart's own mapping of coordinates to pixels; then plotters draws
//! the data and the legend on top, in a second backend built with the same frame, so that the
//! two map coordinates to the same pixels. The layers are joined by taking the inside of each
//! `<svg>` plotters wrote (its namespace is left off: an `<svg>` inside HTML needs none).

use super::escape;
use crate::chaos::timeline::{FaultWindow, Outcome, Timeline};
use plotters::coord::Shift;
use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::collections::HashSet;
use std::fmt::Write as _;
use std::ops::Range;

/// Above this many markers (two a set at most: first and last copy), markers that would fall
/// in the same cell of pixels, with the same outcome and of the same copy, are drawn once;
/// the cell grows until no more than this many are left.
pub const MAX_MARKERS: usize = 8_000;

/// Width of every chart, in pixels (the page scales it down to its own width).
const WIDTH: u32 = 1100;
/// Left margin and the y axis's label area.
const LEFT: u32 = 12;
const Y_LABELS: u32 = 70;
/// The right margin of the time charts holds their legend.
const LEGEND_W: u32 = 190;
/// The fault windows stand in lanes above the plot, at most this many.
const MAX_LANES: usize = 6;
/// A lane's height: the window's name above its strip.
const LANE_H: u32 = 19;
const FONT: &str = "sans-serif";

pub fn outcome_colour(o: Outcome) -> RGBColor {
    match o {
        Outcome::Delivered => RGBColor(0x1f, 0x77, 0xb4),
        Outcome::Partial => RGBColor(0xf5, 0x7c, 0x00),
        Outcome::Lost => RGBColor(0xd6, 0x27, 0x28),
        Outcome::Failed => RGBColor(0x7f, 0x7f, 0x7f),
    }
}

/// The colour of a fault window's band: one per kind of fault (the first word of `what`), in
/// the order the kinds first appear; none of them an outcome's colour.
pub fn window_colours(windows: &[FaultWindow]) -> Vec<RGBColor> {
    const PALETTE: [RGBColor; 6] = [
        RGBColor(0x7e, 0x57, 0xc2), // violet
        RGBColor(0x00, 0x89, 0x7b), // teal
        RGBColor(0x8d, 0x6e, 0x63), // brown
        RGBColor(0xd8, 0x1b, 0x60), // pink
        RGBColor(0x9e, 0x9d, 0x24), // olive
        RGBColor(0x39, 0x49, 0xab), // indigo
    ];
    let mut kinds: Vec<&str> = Vec::new();
    windows
        .iter()
        .map(|w| {
            let kind = w.what.split_whitespace().next().unwrap_or("");
            let i = kinds.iter().position(|k| *k == kind).unwrap_or_else(|| {
                kinds.push(kind);
                kinds.len() - 1
            });
            PALETTE[i % PALETTE.len()]
        })
        .collect()
}

pub fn hex(c: RGBColor) -> String {
    format!("#{:02X}{:02X}{:02X}", c.0, c.1, c.2)
}

/// One axis: its range, its labelled ticks and lighter grid lines, how a tick reads, and what
/// the axis is (with its unit).
struct Axis {
    range: Range<f64>,
    ticks: Vec<f64>,
    light: Vec<f64>,
    label: Box<dyn Fn(f64) -> String>,
    desc: String,
}

/// A linear axis whose ticks (and lighter grid lines) are the ones given: plotters' own
/// `with_key_points` wrapper loses the default formatting its mesh needs.
struct Ticked {
    range: Range<f64>,
    bold: Vec<f64>,
    light: Vec<f64>,
}

impl Ranged for Ticked {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        let span = self.range.end - self.range.start;
        if span <= 0.0 || !span.is_finite() {
            return (limit.0 + limit.1) / 2;
        }
        let at = (value - self.range.start) / span;
        (limit.0 as f64 + at * (limit.1 - limit.0) as f64).round() as i32
    }

    fn key_points<Hint: KeyPointHint>(&self, hint: Hint) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            self.light.clone()
        } else {
            self.bold.clone()
        }
    }

    fn range(&self) -> Range<f64> {
        self.range.clone()
    }
}

type Coord = Ticked;
type Chart<'a, 'b> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<Coord, Coord>>;
type Area<'b> = DrawingArea<SVGBackend<'b>, Shift>;

/// What a chart is, enough to build it twice with the same mapping of coordinates to pixels.
struct Frame {
    id: &'static str,
    label: String,
    height: u32,
    /// Margin above the plot (the fault windows' names stand there).
    top: u32,
    right: u32,
    /// Vertical grid lines at the x ticks (not under bars).
    x_grid: bool,
    x: Axis,
    y: Axis,
}

impl Frame {
    fn build<'a, 'b>(&self, root: &'a Area<'b>) -> anyhow::Result<Chart<'a, 'b>> {
        let x = Ticked {
            range: self.x.range.clone(),
            bold: self.x.ticks.clone(),
            light: self.x.light.clone(),
        };
        let y = Ticked {
            range: self.y.range.clone(),
            bold: self.y.ticks.clone(),
            light: self.y.light.clone(),
        };
        Ok(ChartBuilder::on(root)
            .margin_top(self.top)
            .margin_left(LEFT)
            .margin_right(self.right)
            .margin_bottom(8)
            .x_label_area_size(48)
            .y_label_area_size(Y_LABELS)
            .build_cartesian_2d(x, y)?)
    }

    /// The frame's grid, axes and labels.
    fn draw_frame(&self, chart: &mut Chart) -> anyhow::Result<()> {
        let x_label = |v: &f64| (self.x.label)(*v);
        let y_label = |v: &f64| (self.y.label)(*v);
        let mut mesh = chart.configure_mesh();
        if !self.x_grid {
            mesh.disable_x_mesh();
        }
        mesh.bold_line_style(RGBColor(0xd0, 0xd0, 0xd0))
            .light_line_style(RGBColor(0xee, 0xee, 0xee))
            .axis_style(RGBColor(0x55, 0x55, 0x55))
            // plotters writes a font's size divided by 1.24: 15 is 12 px, 16 is 13 px.
            .label_style((FONT, 15).into_font().color(&RGBColor(0x33, 0x33, 0x33)))
            .axis_desc_style((FONT, 16).into_font().color(&RGBColor(0x22, 0x22, 0x22)))
            .x_label_formatter(&x_label)
            .y_label_formatter(&y_label)
            .x_desc(self.x.desc.as_str())
            .y_desc(self.y.desc.as_str())
            .draw()?;
        Ok(())
    }

    /// The chart: the frame, then `marks` (SVG of our own, given the frame's chart to place
    /// it), then what `draw` draws on a second backend (building the same frame on it).
    fn render(
        &self,
        marks: impl FnOnce(&Chart) -> String,
        draw: impl FnOnce(&Area) -> anyhow::Result<()>,
    ) -> anyhow::Result<String> {
        let size = (WIDTH, self.height);
        let mut under = String::new();
        let middle;
        {
            let root = SVGBackend::with_string(&mut under, size).into_drawing_area();
            root.fill(&WHITE)?;
            let mut chart = self.build(&root)?;
            self.draw_frame(&mut chart)?;
            middle = marks(&chart);
            root.present()?;
        }
        let mut over = String::new();
        {
            let root = SVGBackend::with_string(&mut over, size).into_drawing_area();
            draw(&root)?;
            root.present()?;
        }
        let mut svg = String::with_capacity(under.len() + middle.len() + over.len() + 200);
        writeln!(
            svg,
            "<svg id=\"{}\" class=\"chart\" width=\"{WIDTH}\" height=\"{h}\" \
             viewBox=\"0 0 {WIDTH} {h}\" role=\"img\" aria-label=\"{}\">",
            self.id,
            escape(&self.label),
            h = self.height
        )?;
        svg.push_str(inside(&under));
        svg.push_str(&middle);
        svg.push_str(inside(&over));
        svg.push_str("</svg>\n");
        Ok(svg)
    }
}

/// What is inside the outermost `<svg>` plotters wrote.
fn inside(svg: &str) -> &str {
    let start = svg
        .find("<svg")
        .and_then(|i| svg[i..].find('>').map(|j| i + j + 1))
        .unwrap_or(0);
    let end = svg.rfind("</svg>").unwrap_or(svg.len()).max(start);
    &svg[start..end]
}

/// Ticks at multiples of a round step (1, 2, 2.5 or 5 times a power of ten) covering
/// `lo..hi`, about `target` of them: the axis's range and its ticks.
fn linear_ticks(lo: f64, hi: f64, target: usize) -> (Range<f64>, Vec<f64>) {
    let span = (hi - lo).max(f64::MIN_POSITIVE);
    let raw = span / target.max(1) as f64;
    let magnitude = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * magnitude)
        .find(|s| *s >= raw * 0.999)
        .unwrap_or(10.0 * magnitude);
    let first = (lo / step).floor();
    let last = (hi / step).ceil().max(first + 1.0);
    let ticks = (first as i64..=last as i64)
        .map(|i| i as f64 * step)
        .collect::<Vec<_>>();
    (first * step..last * step, ticks)
}

/// A number as a tick reads: at most three significant digits, no trailing zeros.
fn tick(v: f64) -> String {
    if v == 0.0 {
        return "0".into();
    }
    let digits = (2 - v.abs().log10().floor() as i32).max(0) as usize;
    let s = format!("{v:.digits$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// The time axis: seconds from the start of the run to its end.
fn time_axis(timeline: &Timeline) -> Axis {
    let end_ms = timeline
        .sets
        .iter()
        .map(|s| s.sent_ms)
        .chain(timeline.windows.iter().flat_map(|w| [w.start_ms, w.end_ms]))
        .chain([timeline.duration_ms])
        .filter(|v| v.is_finite())
        .fold(0.0, f64::max);
    let end_s = if end_ms > 0.0 { end_ms / 1000.0 } else { 1.0 };
    let (_, ticks) = linear_ticks(0.0, end_s, 10);
    Axis {
        range: 0.0..end_s,
        ticks: ticks
            .into_iter()
            .filter(|t| *t <= end_s * 1.000_001)
            .collect(),
        light: vec![],
        label: Box::new(tick),
        desc: "time since the start of the run (s)".into(),
    }
}

/// The fault windows as SVG elements of their own over `chart`'s plot: each in its own lane
/// above the plot (a strip from its start to its end, with its name), and in the plot a faint
/// band between dashed edges of its colour, so that windows that overlap stay apart. A window
/// for which no lane had room keeps its band, its edges and its tooltip; the table names it.
fn bands(chart: &Chart, windows: &[FaultWindow], colours: &[RGBColor], lanes: &Lanes) -> String {
    let (xs, ys) = chart.plotting_area().get_pixel_range();
    let x_range = chart.x_range();
    let y_top = chart.y_range().end;
    let px = |ms: f64| {
        let s = (ms / 1000.0).clamp(x_range.start, x_range.end);
        chart.backend_coord(&(s, y_top)).0
    };
    let mut out = String::from("<g class=\"fault-windows\">\n");
    for ((w, colour), lane) in windows.iter().zip(colours).zip(&lanes.of) {
        if !(w.start_ms.is_finite() && w.end_ms.is_finite()) {
            continue;
        }
        let x0 = px(w.start_ms.min(w.end_ms));
        let x1 = px(w.end_ms.max(w.start_ms)).max(x0 + 2);
        let name = format!("{} · {}", w.what, w.place);
        let c = hex(*colour);
        let _ = writeln!(
            out,
            "<g class=\"fault-window\" data-what=\"{}\" data-place=\"{}\" data-mechanism=\"{}\" \
             data-start-ms=\"{}\" data-end-ms=\"{}\" data-lane=\"{}\">\
             <title>{} at {}, {:.1} s to {:.1} s ({})</title>\n\
             <rect x=\"{x0}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{c}\" fill-opacity=\"0.06\"/>\n\
             <line x1=\"{x0}\" y1=\"{}\" x2=\"{x0}\" y2=\"{}\" stroke=\"{c}\" stroke-width=\"1.2\" stroke-dasharray=\"4 3\"/>\n\
             <line x1=\"{x1}\" y1=\"{}\" x2=\"{x1}\" y2=\"{}\" stroke=\"{c}\" stroke-width=\"1.2\" stroke-dasharray=\"4 3\"/>",
            escape(&w.what),
            escape(&w.place),
            escape(&w.mechanism),
            w.start_ms,
            w.end_ms,
            lane.map_or(String::new(), |l| l.to_string()),
            escape(&w.what),
            escape(&w.place),
            w.start_ms / 1000.0,
            w.end_ms / 1000.0,
            escape(&w.mechanism),
            ys.start,
            x1 - x0,
            ys.end - ys.start,
            ys.start,
            ys.end,
            ys.start,
            ys.end,
        );
        if let Some(lane) = lane {
            // Lane 0 is the nearest the plot.
            let top = ys.start - 3 - (*lane as i32 + 1) * LANE_H as i32;
            let _ = writeln!(
                out,
                "<rect class=\"lane\" x=\"{x0}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{c}\" \
                 fill-opacity=\"0.85\"/>\n\
                 <text class=\"fault-name\" x=\"{}\" y=\"{}\" font-family=\"{FONT}\" \
                 font-size=\"12\" fill=\"{c}\">{}</text>",
                top + LANE_H as i32 - 6,
                x1 - x0,
                4,
                x0.max(xs.start) + 2,
                top + LANE_H as i32 - 9,
                escape(&name),
            );
        }
        out.push_str("</g>\n");
    }
    out.push_str("</g>\n");
    out
}

/// A chart's note that it has nothing to show, in the middle of its plot.
fn empty(chart: &Chart, why: &str) -> String {
    let (xs, ys) = chart.plotting_area().get_pixel_range();
    format!(
        "<text class=\"empty\" x=\"{}\" y=\"{}\" text-anchor=\"middle\" font-family=\"{FONT}\" \
         font-size=\"15\" fill=\"#666\">{}</text>\n",
        (xs.start + xs.end) / 2,
        (ys.start + ys.end) / 2,
        escape(why)
    )
}

/// Which lane above the plot each fault window takes: the first, from the plot outwards,
/// where the window before it (its strip and its name) ended before it starts, so that windows
/// that overlap in time or in name are in lanes of their own; at most [`MAX_LANES`].
struct Lanes {
    of: Vec<Option<usize>>,
    count: usize,
}

impl Lanes {
    fn of(windows: &[FaultWindow], x: &Axis) -> Lanes {
        let plot_w = (WIDTH - LEFT - Y_LABELS - LEGEND_W) as f64;
        let per_s = plot_w / (x.range.end - x.range.start).max(f64::MIN_POSITIVE);
        let at = |ms: f64| (ms / 1000.0 - x.range.start) * per_s;
        let mut ends = [f64::MIN; MAX_LANES];
        let mut count = 1;
        let of = windows
            .iter()
            .map(|w| {
                let x0 = at(w.start_ms.min(w.end_ms));
                let name = (w.what.chars().count() + w.place.chars().count() + 3) as f64 * 6.6;
                let end = at(w.end_ms.max(w.start_ms)).max(x0 + name + 12.0);
                let lane = ends.iter().position(|e| *e < x0)?;
                ends[lane] = end;
                count = count.max(lane + 1);
                Some(lane)
            })
            .collect();
        Lanes { of, count }
    }

    /// The margin above the plot that the lanes take.
    fn top(&self) -> u32 {
        10 + self.count as u32 * LANE_H
    }
}

/// A legend entry's marker, as the legend draws it at `(x, y)`.
#[derive(Clone, Copy)]
enum Key {
    Dot(RGBColor),
    Ring(RGBColor),
    Line(RGBColor, u32),
    Band(RGBColor),
}

/// The legend, in the margin right of the plot (whose pixels are `plot`), drawn on `root`.
fn legend(
    root: &Area,
    plot: (Range<i32>, Range<i32>),
    keys: &[(String, Key)],
) -> anyhow::Result<()> {
    const ROW: i32 = 20;
    let (x0, y0) = (plot.0.end + 16, plot.1.start);
    let (x1, y1) = (x0 + LEGEND_W as i32 - 28, y0 + 8 + ROW * keys.len() as i32);
    root.draw(&Rectangle::new([(x0, y0), (x1, y1)], WHITE.filled()))?;
    root.draw(&Rectangle::new(
        [(x0, y0), (x1, y1)],
        RGBColor(0xcc, 0xcc, 0xcc).stroke_width(1),
    ))?;
    let font = (FONT, 16)
        .into_font()
        .color(&RGBColor(0x22, 0x22, 0x22))
        .pos(Pos::new(HPos::Left, VPos::Center));
    for (i, (label, key)) in keys.iter().enumerate() {
        let (x, y) = (x0 + 10, y0 + 4 + ROW / 2 + ROW * i as i32);
        match *key {
            Key::Dot(c) => root.draw(&Circle::new((x + 8, y), 4, c.filled()))?,
            Key::Ring(c) => root.draw(&Circle::new((x + 8, y), 4, c.stroke_width(1)))?,
            Key::Line(c, w) => root.draw(&PathElement::new(
                vec![(x, y), (x + 16, y)],
                c.stroke_width(w),
            ))?,
            Key::Band(c) => root.draw(&Rectangle::new(
                [(x + 2, y - 7), (x + 14, y + 7)],
                c.mix(0.25).filled(),
            ))?,
        }
        root.draw(&Text::new(label.as_str(), (x + 24, y), font.clone()))?;
    }
    Ok(())
}

fn count(n: usize) -> String {
    super::thousands(n as u64)
}

/// What the latency chart drew, for the line under it.
pub struct LatencyDrawn {
    pub svg: String,
    /// Markers there would be, one per copy (first; last when it differs).
    pub points: usize,
    /// Markers drawn.
    pub markers: usize,
    /// The side of the cells points were merged in, when they were (pixels).
    pub cell: Option<u32>,
    pub log: bool,
}

/// Chart 1: the latency of every set over time.
pub fn latency(timeline: &Timeline, colours: &[RGBColor]) -> anyhow::Result<LatencyDrawn> {
    let x = time_axis(timeline);
    let lanes = Lanes::of(&timeline.windows, &x);
    let sets: Vec<_> = timeline
        .sets
        .iter()
        .filter(|s| s.sent_ms.is_finite())
        .collect();
    let positive = |v: &Option<f64>| v.filter(|v| v.is_finite() && *v >= 0.0);
    let latencies: Vec<f64> = sets
        .iter()
        .flat_map(|s| [positive(&s.first_ms), positive(&s.last_ms)])
        .flatten()
        .collect();
    let (lo, hi) = latencies
        .iter()
        .fold((f64::INFINITY, 0.0f64), |(lo, hi), v| {
            (if *v > 0.0 { lo.min(*v) } else { lo }, hi.max(*v))
        });
    let log = lo.is_finite() && hi / lo > 20.0;
    // The y axis in its own units: log10(ms) on a log scale; ms otherwise.
    let (to_axis, y): (Box<dyn Fn(f64) -> f64>, Axis) = if log {
        let (ticks, light) = log_ticks(lo, hi);
        // A latency of 0 on the bottom edge.
        let floor = ticks.first().copied().unwrap_or(lo).min(lo);
        let (a, b) = (
            ticks.first().copied().unwrap_or(lo).min(lo).log10(),
            ticks.last().copied().unwrap_or(hi).max(hi).log10(),
        );
        (
            Box::new(move |ms: f64| ms.max(floor).log10()),
            Axis {
                range: a..b,
                ticks: ticks.iter().map(|t| t.log10()).collect(),
                light: light.iter().map(|t| t.log10()).collect(),
                label: Box::new(|v| tick(10f64.powf(v))),
                desc: "latency (ms, log scale)".into(),
            },
        )
    } else {
        let top = if hi > 0.0 { hi } else { 1.0 };
        let (range, ticks) = linear_ticks(0.0, top, 6);
        (
            Box::new(|ms: f64| ms),
            Axis {
                range,
                ticks,
                light: vec![],
                label: Box::new(tick),
                desc: "latency (ms)".into(),
            },
        )
    };
    // Above the data, a band for the sets no copy of which arrived.
    let span = y.range.end - y.range.start;
    let band = (y.range.end + 0.03 * span)..(y.range.end + 0.13 * span);
    let (lost_y, failed_y) = (
        band.start + 0.68 * (band.end - band.start),
        band.start + 0.32 * (band.end - band.start),
    );
    let y = Axis {
        range: y.range.start..band.end,
        ..y
    };
    let frame = Frame {
        id: "latency",
        label: "latency of every set over time".into(),
        height: 470,
        top: lanes.top(),
        right: LEGEND_W,
        x_grid: true,
        x,
        y,
    };

    // Every marker: (outcome, is the last copy, x, y in axis units).
    let mut points: Vec<(Outcome, bool, f64, f64)> = Vec::new();
    for s in &sets {
        let t = s.sent_ms.max(0.0) / 1000.0;
        match (positive(&s.first_ms), positive(&s.last_ms)) {
            (None, None) => {
                let y = if s.outcome == Outcome::Failed {
                    failed_y
                } else {
                    lost_y
                };
                points.push((s.outcome, false, t, y));
            }
            (first, last) => {
                let first = first.or(last).unwrap_or_default();
                points.push((s.outcome, false, t, to_axis(first)));
                if let Some(last) = last.filter(|l| (to_axis(*l) - to_axis(first)).abs() > 1e-9) {
                    points.push((s.outcome, true, t, to_axis(last)));
                }
            }
        }
    }
    let total = points.len();
    let mut drawn = LatencyDrawn {
        svg: String::new(),
        points: total,
        markers: total,
        cell: None,
        log,
    };
    let counts: Vec<usize> = Outcome::ALL
        .iter()
        .map(|o| sets.iter().filter(|s| s.outcome == *o).count())
        .collect();

    let svg = frame.render(
        |chart| {
            let (xs, _) = chart.plotting_area().get_pixel_range();
            let top = chart.backend_coord(&(0.0, band.end)).1;
            let bottom = chart.backend_coord(&(0.0, band.start)).1;
            let mut s = format!(
                "<g class=\"no-copy\"><rect x=\"{}\" y=\"{top}\" width=\"{}\" height=\"{}\" \
                 fill=\"#f4f4f4\"/>\n<line x1=\"{}\" y1=\"{bottom}\" x2=\"{}\" y2=\"{bottom}\" \
                 stroke=\"#999\" stroke-dasharray=\"4 3\"/>\n\
                 <text x=\"{}\" y=\"{}\" text-anchor=\"end\" font-family=\"{FONT}\" font-size=\"11\" \
                 fill=\"#555\">no copy</text>\n</g>\n",
                xs.start,
                xs.end - xs.start,
                bottom - top,
                xs.start,
                xs.end,
                xs.start - 6,
                (top + bottom) / 2 + 4,
            );
            s.push_str(&bands(chart, &timeline.windows, colours, &lanes));
            if sets.is_empty() {
                s.push_str(&empty(chart, "no sets"));
            }
            s
        },
        |root| {
            let mut chart = frame.build(root)?;
            // Merge markers into cells of pixels while there are too many.
            let mut keep: Vec<&(Outcome, bool, f64, f64)> = points.iter().collect();
            if keep.len() > MAX_MARKERS {
                let mut cell = 2.0f64;
                loop {
                    let mut seen = HashSet::new();
                    keep = points
                        .iter()
                        .filter(|(o, last, x, y)| {
                            let (px, py) = chart.backend_coord(&(*x, *y));
                            seen.insert((
                                *o as u8,
                                *last,
                                (px as f64 / cell) as i32,
                                (py as f64 / cell) as i32,
                            ))
                        })
                        .collect();
                    if keep.len() <= MAX_MARKERS || cell >= 64.0 {
                        break;
                    }
                    cell = (cell * 1.5).ceil();
                }
                drawn.cell = Some(cell as u32);
            }
            drawn.markers = keep.len();
            // The common outcome first, so that the rare ones stay on top; last copies under
            // first copies.
            for o in [
                Outcome::Delivered,
                Outcome::Partial,
                Outcome::Failed,
                Outcome::Lost,
            ] {
                let c = outcome_colour(o);
                for last in [true, false] {
                    let style = if last {
                        c.mix(0.55).stroke_width(1)
                    } else {
                        c.mix(0.85).filled()
                    };
                    chart.draw_series(
                        keep.iter()
                            .filter(|p| p.0 == o && p.1 == last)
                            .map(|p| Circle::new((p.2, p.3), if last { 3 } else { 2 }, style)),
                    )?;
                }
            }
            let mut keys: Vec<(String, Key)> = Outcome::ALL
                .iter()
                .zip(&counts)
                .map(|(o, n)| (format!("{} {}", o.name(), count(*n)), Key::Dot(outcome_colour(*o))))
                .collect();
            keys.push(("first copy".into(), Key::Dot(RGBColor(0x44, 0x44, 0x44))));
            keys.push(("last copy".into(), Key::Ring(RGBColor(0x44, 0x44, 0x44))));
            if let Some(c) = colours.first() {
                keys.push(("fault window".into(), Key::Band(*c)));
            }
            legend(root, chart.plotting_area().get_pixel_range(), &keys)
        },
    )?;
    drawn.svg = svg;
    Ok(drawn)
}

/// Ticks of a log axis covering `lo..hi` (ms): 1, 2, 5 times powers of ten while there are at
/// most 12 of them, else powers of ten; the light lines at every integer multiple in between.
fn log_ticks(lo: f64, hi: f64) -> (Vec<f64>, Vec<f64>) {
    let (a, b) = (lo.log10().floor() as i32, hi.log10().ceil() as i32);
    let decades = (b - a).max(1);
    let multiples: &[f64] = if decades <= 4 {
        &[1.0, 2.0, 5.0]
    } else {
        &[1.0]
    };
    let mut all = Vec::new();
    let mut light = Vec::new();
    for e in a..=b {
        let p = 10f64.powi(e);
        for m in multiples {
            all.push(m * p);
        }
        if decades <= 6 {
            light.extend((2..10).map(|m| m as f64 * p));
        }
    }
    // From the last tick at or below lo to the first at or above hi.
    let first = all.iter().rposition(|t| *t <= lo * 1.000_001).unwrap_or(0);
    let last = all
        .iter()
        .position(|t| *t >= hi * 0.999_999)
        .unwrap_or(all.len() - 1);
    let ticks = all[first..=last].to_vec();
    let (t0, t1) = (ticks[0], *ticks.last().unwrap());
    light.retain(|v| *v > t0 && *v < t1 && !ticks.iter().any(|t| (t - v).abs() < 1e-9 * v));
    (ticks, light)
}

/// Chart 2: sets per second, by the time they were sent.
pub fn rate(timeline: &Timeline, colours: &[RGBColor]) -> anyhow::Result<(String, f64)> {
    let x = time_axis(timeline);
    let lanes = Lanes::of(&timeline.windows, &x);
    let end_s = x.range.end;
    // A round bin of at least a second giving at most 200 bins; at most 20 bins in a run of
    // less than ten seconds.
    const BINS: [f64; 15] = [
        0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0, 3600.0,
    ];
    let bin = BINS
        .into_iter()
        .find(|b| {
            if end_s < 10.0 {
                end_s / b <= 20.0
            } else {
                *b >= 1.0 && end_s / b <= 200.0
            }
        })
        .unwrap_or(end_s / 200.0);
    let bins = ((end_s / bin).ceil() as usize).max(1);
    let mut sent = vec![0usize; bins];
    let mut by = vec![vec![0usize; bins]; Outcome::ALL.len()];
    for s in &timeline.sets {
        if !s.sent_ms.is_finite() {
            continue;
        }
        let i = ((s.sent_ms / 1000.0 / bin) as usize).min(bins - 1);
        sent[i] += 1;
        by[s.outcome as usize][i] += 1;
    }
    let peak = sent.iter().copied().max().unwrap_or(0) as f64 / bin;
    let (range, ticks) = linear_ticks(0.0, if peak > 0.0 { peak * 1.08 } else { 1.0 }, 5);
    let frame = Frame {
        id: "rate",
        label: "sets per second".into(),
        height: 330,
        top: lanes.top(),
        right: LEGEND_W,
        x_grid: true,
        x,
        y: Axis {
            range,
            ticks,
            light: vec![],
            label: Box::new(tick),
            desc: "sets/s (by time of sending)".into(),
        },
    };
    let steps = |counts: &[usize]| -> Vec<(f64, f64)> {
        counts
            .iter()
            .enumerate()
            .flat_map(|(i, n)| {
                let r = *n as f64 / bin;
                let (a, b) = (i as f64 * bin, ((i + 1) as f64 * bin).min(end_s));
                [(a, r), (b, r)]
            })
            .collect()
    };
    let svg = frame.render(
        |chart| {
            let mut s = bands(chart, &timeline.windows, colours, &lanes);
            if timeline.sets.is_empty() {
                s.push_str(&empty(chart, "no sets"));
            }
            s
        },
        |root| {
            let mut chart = frame.build(root)?;
            let mut keys = Vec::new();
            let mut line =
                |name: &str, counts: &[usize], c: RGBColor, w: u32| -> anyhow::Result<()> {
                    chart.draw_series(LineSeries::new(steps(counts), c.stroke_width(w)))?;
                    keys.push((
                        format!("{name} {}", count(counts.iter().sum())),
                        Key::Line(c, w),
                    ));
                    Ok(())
                };
            // Sent: wide and light, under the others (delivered covers it where all arrived).
            line("sent", &sent, RGBColor(0xb8, 0xb8, 0xb8), 5)?;
            for o in Outcome::ALL {
                let counts = &by[o as usize];
                // Delivered and lost always; partial and failed when there were any.
                if matches!(o, Outcome::Delivered | Outcome::Lost) || counts.iter().any(|n| *n > 0)
                {
                    line(o.name(), counts, outcome_colour(o), 2)?;
                }
            }
            if let Some(c) = colours.first() {
                keys.push(("fault window".into(), Key::Band(*c)));
            }
            let plot = chart.plotting_area().get_pixel_range();
            legend(root, plot, &keys)
        },
    )?;
    Ok((svg, bin))
}

/// Chart 3: how many sets lost their copy on each path.
pub fn paths(timeline: &Timeline) -> anyhow::Result<String> {
    let k = timeline
        .sets
        .iter()
        .flat_map(|s| s.paths_lost.iter().map(|p| p + 1).chain([s.k]))
        .chain([timeline.max_k])
        .max()
        .unwrap_or(0) as usize;
    let mut lost = vec![0usize; k];
    for s in &timeline.sets {
        let mut seen = HashSet::new();
        for p in &s.paths_lost {
            // A set counts once on a path, however often the path is named.
            if seen.insert(*p) {
                lost[*p as usize] += 1;
            }
        }
    }
    let peak = lost.iter().copied().max().unwrap_or(0) as f64;
    let (range, ticks) = linear_ticks(0.0, if peak > 0.0 { peak * 1.12 } else { 1.0 }, 5);
    let every = k.div_ceil(24).max(1);
    let frame = Frame {
        id: "paths",
        label: "copies lost per path".into(),
        height: 300,
        top: 16,
        right: 24,
        x_grid: false,
        x: Axis {
            range: -0.5..(k.max(1) as f64 - 0.5),
            ticks: (0..k).step_by(every).map(|i| i as f64).collect(),
            light: vec![],
            label: Box::new(|v| format!("{}", v.round() as i64)),
            desc: "path index (0 to k-1)".into(),
        },
        y: Axis {
            range,
            ticks,
            light: vec![],
            label: Box::new(tick),
            desc: "sets whose copy on the path was lost".into(),
        },
    };
    frame.render(
        |chart| {
            if peak > 0.0 {
                return String::new();
            }
            empty(
                chart,
                if k == 0 {
                    "no sets"
                } else {
                    "no copy was lost on any path"
                },
            )
        },
        |root| {
            let mut chart = frame.build(root)?;
            let c = outcome_colour(Outcome::Lost);
            // Bars 70% of their slot, at most 80 px wide.
            let (xs, _) = chart.plotting_area().get_pixel_range();
            let per_path = (xs.end - xs.start) as f64 / k.max(1) as f64;
            let half = (0.35f64).min(40.0 / per_path);
            chart.draw_series(lost.iter().enumerate().map(|(i, n)| {
                let x = i as f64;
                Rectangle::new([(x - half, 0.0), (x + half, *n as f64)], c.filled())
            }))?;
            if k <= 32 {
                chart.draw_series(lost.iter().enumerate().filter(|(_, n)| **n > 0).map(
                    |(i, n)| {
                        Text::new(
                            count(*n),
                            (i as f64, *n as f64),
                            (FONT, 15)
                                .into_font()
                                .color(&RGBColor(0x33, 0x33, 0x33))
                                .pos(Pos::new(HPos::Center, VPos::Bottom)),
                        )
                    },
                ))?;
            }
            Ok(())
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn linear_ticks_are_round() {
        let (range, ticks) = linear_ticks(0.0, 9.3, 5);
        assert_eq!(ticks, vec![0.0, 2.0, 4.0, 6.0, 8.0, 10.0]);
        assert_eq!(range, 0.0..10.0);
        let (range, ticks) = linear_ticks(0.0, 75.0, 10);
        assert_eq!((range, ticks.len()), (0.0..80.0, 9));
        let (range, ticks) = linear_ticks(0.0, 0.3, 6);
        assert!((range.end - 0.3).abs() < 1e-12, "{range:?}");
        assert!((ticks[1] - 0.05).abs() < 1e-12, "{ticks:?}");
        assert_eq!(tick(ticks[3]), "0.15");
    }

    #[test]
    fn log_ticks_cover_the_range() {
        let (ticks, light) = log_ticks(0.8, 130.0);
        assert_eq!(
            ticks,
            vec![0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0]
        );
        assert!(light.contains(&3.0) && !light.contains(&2.0));
        let (ticks, _) = log_ticks(0.01, 100_000.0);
        assert_eq!(ticks.first(), Some(&0.01));
        assert_eq!(ticks.last(), Some(&100_000.0));
        assert_eq!(ticks.len(), 8);
    }

    #[test]
    fn ticks_read_plainly() {
        assert_eq!(tick(0.0), "0");
        assert_eq!(tick(0.5), "0.5");
        assert_eq!(tick(2.5), "2.5");
        assert_eq!(tick(20.0), "20");
        assert_eq!(tick(1000.0), "1000");
        assert_eq!(tick(0.001), "0.001");
    }

    #[test]
    fn the_inside_of_an_svg() {
        assert_eq!(
            inside("<svg width=\"1\" xmlns=\"x\">\n<rect/>\n</svg>\n"),
            "\n<rect/>\n"
        );
    }
}
