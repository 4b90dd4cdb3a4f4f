//! The papers' empirical studies of cuberoute's disjoint-path algorithms, reproduced: random
//! instances per size from a seeded generator, the longest path of each instance and the time,
//! against the algorithm's bound and, on Q_n, against a generic max flow on the same instances.
//! Each study gives a [`Report`]: a table (CSV and Markdown) and an SVG chart.
//!
//! Modules, lowest first (each imports only those above it; `modules_import_downwards_only`
//! checks it):
//! - [`error`]: why a study did not run; [`options`]: what a run is asked for;
//! - [`rng`]: the seeded splitmix64 instance generator; [`measure`]: mean, sd, max, timing;
//! - [`report`]: the tables (CSV, Markdown) and the files; [`chart`]: every SVG chart;
//! - [`maxflow`]: the generic baseline (petgraph's Dinic on the node-split graph);
//! - [`cube`]: the studies on Q_n; [`seed`]: the studies on the seed families (HHC, metacube).
//!
//! The algorithms, their names and their bounds come from the protocol's algorithm table
//! (`cuberoute_protocol::paths::table`); nothing here decides a path.

pub mod error;
pub mod options;

pub mod measure;
pub mod rng;

pub mod chart;
pub mod report;

pub mod maxflow;

pub mod cube;
pub mod seed;

pub use error::Error;
pub use options::Options;
pub use report::Report;

/// Every study.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Study {
    /// On Q_n, against the bound and the generic max flow.
    Cube(cube::Algorithm),
    /// On a seed family, against the bound (and, on HHC, the other algorithm).
    Seed(seed::Study),
}

impl Study {
    pub const ALL: [Study; 6] = [
        Study::Cube(cube::Algorithm::Container),
        Study::Cube(cube::Algorithm::N2s),
        Study::Cube(cube::Algorithm::Xftn2s),
        Study::Cube(cube::Algorithm::S2s),
        Study::Seed(seed::Study::HhcN2s),
        Study::Seed(seed::Study::McN2s),
    ];

    /// Its name, which names its files too.
    pub fn name(self) -> &'static str {
        match self {
            Study::Cube(alg) => alg.id(),
            Study::Seed(study) => study.id(),
        }
    }

    /// What it is, in one line.
    pub fn about(self) -> String {
        match self {
            Study::Cube(alg) => alg.about(),
            Study::Seed(study) => study.about(),
        }
    }

    /// Run it; `progress` hears a line as each size is done.
    pub fn run(self, options: &Options, progress: &mut dyn FnMut(&str)) -> Result<Report, Error> {
        match self {
            Study::Cube(alg) => cube::run(alg, options, progress),
            Study::Seed(study) => study.run(options, progress),
        }
    }
}

impl std::str::FromStr for Study {
    type Err = String;

    fn from_str(name: &str) -> Result<Study, String> {
        Study::ALL
            .into_iter()
            .find(|study| study.name() == name)
            .ok_or_else(|| format!("no study named {name:?}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_parse_back() {
        for study in Study::ALL {
            assert_eq!(study.name().parse::<Study>(), Ok(study));
            assert_eq!(
                Study::ALL
                    .iter()
                    .filter(|s| s.name() == study.name())
                    .count(),
                1
            );
        }
        assert!("hhc".parse::<Study>().is_err());
    }

    /// The modules, lowest first, with their text.
    const MODULES: [(&str, &str); 9] = [
        ("error", include_str!("error.rs")),
        ("options", include_str!("options.rs")),
        ("measure", include_str!("measure.rs")),
        ("rng", include_str!("rng.rs")),
        ("chart", include_str!("chart.rs")),
        ("report", include_str!("report.rs")),
        ("maxflow", include_str!("maxflow.rs")),
        ("cube", include_str!("cube.rs")),
        ("seed", include_str!("seed.rs")),
    ];

    #[test]
    fn modules_import_downwards_only() {
        // Every module declared here is in the list.
        let declared: Vec<&str> = include_str!("lib.rs")
            .lines()
            .filter_map(|line| line.strip_prefix("pub mod ")?.strip_suffix(';'))
            .collect();
        let mut listed: Vec<&str> = MODULES.iter().map(|(name, _)| *name).collect();
        listed.sort_unstable();
        let mut declared_sorted = declared.clone();
        declared_sorted.sort_unstable();
        assert_eq!(listed, declared_sorted);
        // A module names only modules before it (`crate::x`, in code or doc links).
        for (i, (name, text)) in MODULES.iter().enumerate() {
            for (at, _) in text.match_indices("crate::") {
                let rest = &text[at + "crate::".len()..];
                let end = rest
                    .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                    .unwrap_or(rest.len());
                let target = &rest[..end];
                assert!(
                    MODULES[..i].iter().any(|(lower, _)| *lower == target),
                    "{name} names crate::{target}, which is not below it"
                );
            }
            // `super::` only in the tests, for the module's own items.
            for (at, _) in text.match_indices("super::") {
                assert!(
                    text[at..].starts_with("super::*;"),
                    "{name}: {}",
                    &text[at..]
                );
            }
        }
    }

    #[test]
    fn descriptions_name_the_table_algorithms() {
        let about: Vec<String> = Study::ALL.iter().map(|s| s.about()).collect();
        assert_eq!(
            about,
            [
                "HC-CONTAINER: bit-constrained node-to-node",
                "Cube-N2S: node-to-set",
                "Cube-XFTN2S: fault-tolerant node-to-set",
                "Cube-S2S: set-to-set",
                "HHC-N2S against HHC-iN2S on the same instances",
                "MC-N2S against its bound",
            ]
        );
    }
}
