//! `cuberoute study <STUDY>`: parses the options, runs the study (crate `cuberoute-study`),
//! prints its Markdown table and writes `<out>/<study>.csv`, `.md` and `.svg`.

use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use cuberoute_study::{Error, Options, Study};
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct Args {
    #[arg(value_parser = studies())]
    algorithm: Study,
    /// Sizes to study, `A..B` inclusive: the dimension n on Q_n (default 4..16), m for
    /// hhc-n2s (default 3..5), k for mc-n2s (default 1..5, m running over 1..9).
    #[arg(long)]
    sizes: Option<String>,
    /// Random instances per size (the papers use 10,000).
    #[arg(long, default_value_t = Options::default().instances)]
    instances: usize,
    /// Instances per size also solved by the generic max flow (the first ones).
    #[arg(long, default_value_t = Options::default().maxflow_instances)]
    maxflow_instances: usize,
    /// The bit constraint gamma_I of `container`.
    #[arg(long, default_value_t = Options::default().constraint)]
    constraint: u32,
    /// Seed of the instance generator.
    #[arg(long, default_value_t = Options::default().seed)]
    seed: u64,
    /// Directory for the CSV, Markdown and SVG files.
    #[arg(long, default_value = "cuberoute-study")]
    out: PathBuf,
}

/// The studies as clap's possible values, each with its one-line description.
fn studies() -> impl TypedValueParser<Value = Study> {
    PossibleValuesParser::new(
        Study::ALL.map(|study| PossibleValue::new(study.name()).help(study.about())),
    )
    .map(|name| name.parse::<Study>().expect("one of the possible values"))
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let options = Options {
        sizes: args.sizes,
        instances: args.instances,
        maxflow_instances: args.maxflow_instances,
        constraint: args.constraint,
        seed: args.seed,
    };
    let report = args
        .algorithm
        .run(&options, &mut |line| eprintln!("{line}"))
        .map_err(|err| match err {
            Error::Usage(message) => super::usage(message),
            other => other.into(),
        })?;
    let base = report.write(&args.out)?;
    print!("{}", report.markdown);
    println!("\nwritten: {0}.csv, {0}.md, {0}.svg", base.display());
    Ok(())
}
