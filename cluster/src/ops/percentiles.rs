//! The one summary of a latency sample, used wherever latencies are reported (`bench`, `chaos
//! run`): its size, median, 99th and 99.9th percentiles and mean.

use serde::{Serialize, Serializer};

/// Percentiles of a sample of latencies, in microseconds. A percentile is the sample's value
/// of nearest rank: the element at index round((n-1)·q) of the sorted sample, so it is always
/// a value that was measured. An empty sample gives zeros.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Percentiles {
    pub samples: usize,
    pub p50_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
    pub mean_us: f64,
}

impl Percentiles {
    /// The summary of `values` (microseconds).
    pub fn of(values: impl IntoIterator<Item = f64>) -> Percentiles {
        let mut values: Vec<f64> = values.into_iter().collect();
        if values.is_empty() {
            return Percentiles::default();
        }
        values.sort_by(f64::total_cmp);
        let at = |q: f64| values[((values.len() - 1) as f64 * q).round() as usize];
        Percentiles {
            samples: values.len(),
            p50_us: at(0.5),
            p99_us: at(0.99),
            p999_us: at(0.999),
            mean_us: values.iter().sum::<f64>() / values.len() as f64,
        }
    }

    /// The summary of whole microseconds.
    pub fn of_us(values: impl IntoIterator<Item = u64>) -> Percentiles {
        Percentiles::of(values.into_iter().map(|v| v as f64))
    }
}

/// Serialise as `{"p50": .., "p99": .., "samples": ..}` in whole microseconds: the schema of
/// `chaos run --json`'s `latency_us`, which predates this type. For
/// `#[serde(serialize_with = ...)]`.
pub fn serialize_whole_us<S: Serializer>(
    p: &Percentiles,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    #[derive(Serialize)]
    struct WholeUs {
        p50: u64,
        p99: u64,
        samples: usize,
    }
    WholeUs {
        p50: p.p50_us.round() as u64,
        p99: p.p99_us.round() as u64,
        samples: p.samples,
    }
    .serialize(serializer)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_of_the_sorted_sample() {
        let p = Percentiles::of((1..=100).rev().map(f64::from));
        assert_eq!(
            (p.samples, p.p50_us, p.p99_us, p.mean_us),
            (100, 51.0, 99.0, 50.5)
        );
        let one = Percentiles::of_us([7]);
        assert_eq!(
            (one.samples, one.p50_us, one.p99_us, one.mean_us),
            (1, 7.0, 7.0, 7.0)
        );
        assert_eq!(Percentiles::of_us([]), Percentiles::default());
    }

    #[test]
    fn chaos_schema_in_whole_microseconds() {
        #[derive(Serialize)]
        struct Report {
            #[serde(serialize_with = "serialize_whole_us")]
            latency: Percentiles,
        }
        let latency = Percentiles::of_us([900, 1_200, 1_000, 5_000]);
        let json = serde_json::to_string(&Report { latency }).unwrap();
        assert_eq!(json, r#"{"latency":{"p50":1200,"p99":5000,"samples":4}}"#);
        let bench = serde_json::to_value(latency).unwrap();
        assert_eq!(bench["p50_us"], 1200.0);
        assert_eq!(bench["mean_us"], 2025.0);
    }
}
