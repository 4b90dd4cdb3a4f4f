//! A study's output: its table, as CSV (full precision, machine-readable column names) and as
//! Markdown (rounded, for the eye), its chart, and the three files they go to.

use crate::error::Error;
use std::path::{Path, PathBuf};

/// A table with one header and one row per size, kept in both forms: a Markdown row may join
/// figures that CSV keeps in columns of their own, and rounds them further.
#[derive(Debug)]
pub struct Table {
    markdown: String,
    csv: String,
}

impl Table {
    /// A table with these column names, separated by `|` for Markdown and by `,` for CSV.
    pub fn new(markdown_header: &str, csv_header: &str) -> Table {
        let columns: Vec<&str> = markdown_header.split('|').collect();
        Table {
            markdown: format!(
                "| {} |\n|{}\n",
                columns.join(" | "),
                "---|".repeat(columns.len())
            ),
            csv: format!("{csv_header}\n"),
        }
    }

    pub fn push(&mut self, markdown: &[String], csv: &[String]) {
        self.markdown += &format!("| {} |\n", markdown.join(" | "));
        self.csv += &format!("{}\n", csv.join(","));
    }
}

/// What a study writes: `<name>.csv`, `<name>.md` (the title, then the table) and `<name>.svg`.
#[derive(Debug)]
pub struct Report {
    /// The file name, without extension: the study's name.
    pub name: &'static str,
    pub title: String,
    /// The Markdown table (without the title).
    pub markdown: String,
    pub csv: String,
    pub svg: String,
}

impl Report {
    pub fn new(name: &'static str, title: String, table: Table, svg: String) -> Report {
        Report {
            name,
            title,
            markdown: table.markdown,
            csv: table.csv,
            svg,
        }
    }

    /// Write the three files into `dir` (created if missing); returns their path without
    /// extension.
    pub fn write(&self, dir: &Path) -> Result<PathBuf, Error> {
        std::fs::create_dir_all(dir).map_err(|source| Error::Io {
            what: "creating",
            path: dir.to_path_buf(),
            source,
        })?;
        let base = dir.join(self.name);
        let files = [
            ("csv", self.csv.clone()),
            ("md", format!("# {}\n\n{}", self.title, self.markdown)),
            ("svg", self.svg.clone()),
        ];
        for (extension, text) in files {
            let path = base.with_extension(extension);
            std::fs::write(&path, text).map_err(|source| Error::Io {
                what: "writing",
                path,
                source,
            })?;
        }
        Ok(base)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> Table {
        let mut t = Table::new("n|mean / max", "n,mean,max");
        t.push(
            &["4".into(), "3.50 / 5".into()],
            &["4".into(), "3.5000".into(), "5".into()],
        );
        t
    }

    #[test]
    fn markdown_and_csv_forms() {
        let t = table();
        assert_eq!(
            t.markdown,
            "| n | mean / max |\n|---|---|\n| 4 | 3.50 / 5 |\n"
        );
        assert_eq!(t.csv, "n,mean,max\n4,3.5000,5\n");
    }

    #[test]
    fn writes_three_files() {
        let dir =
            std::env::temp_dir().join(format!("cuberoute-study-report-{}", std::process::id()));
        let report = Report::new("demo", "A title".into(), table(), "<svg/>\n".into());
        let base = report.write(&dir.join("nested")).unwrap();
        assert_eq!(base, dir.join("nested").join("demo"));
        let read = |ext: &str| std::fs::read_to_string(base.with_extension(ext)).unwrap();
        assert_eq!(read("csv"), report.csv);
        assert_eq!(read("md"), format!("# A title\n\n{}", report.markdown));
        assert_eq!(read("svg"), "<svg/>\n");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn an_unwritable_directory_is_an_io_error() {
        let file =
            std::env::temp_dir().join(format!("cuberoute-study-file-{}", std::process::id()));
        std::fs::write(&file, "").unwrap();
        let report = Report::new("demo", String::new(), table(), String::new());
        let err = report.write(&file.join("sub")).unwrap_err();
        assert!(
            matches!(
                err,
                Error::Io {
                    what: "creating",
                    ..
                }
            ),
            "{err}"
        );
        std::fs::remove_file(&file).unwrap();
    }
}
