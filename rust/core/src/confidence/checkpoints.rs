//! A betting confidence sequence read at chosen sample counts: what a race looks at after each
//! batch. Each stream is independent of the others, so many streams (one per pair of
//! configurations) are computed in parallel with results that do not depend on the thread count.

use rayon::prelude::*;

use super::betting::{BettingOptions, BettingSequence};
use super::looks::check_checkpoints;
use crate::error::Result;
use crate::invalid;

/// The running interval of the betting sequence of `samples` (each in [low, low + range]) after
/// the first `c` samples, for each `c` of `checkpoints` (strictly increasing, from 1 to the
/// number of samples). Peeking at every checkpoint keeps the 1 − δ guarantee: the sequence is
/// valid at all times at once.
pub fn intervals_at(
    samples: &[f64],
    low: f64,
    range: f64,
    delta: f64,
    options: BettingOptions,
    checkpoints: &[usize],
) -> Result<Vec<(f64, f64)>> {
    check_checkpoints(checkpoints, samples.len())?;
    let mut sequence = BettingSequence::new(low, range, delta, options)?;
    let mut out = Vec::with_capacity(checkpoints.len());
    let mut next = checkpoints.iter().peekable();
    for (k, &x) in samples.iter().enumerate() {
        if next.peek().is_none() {
            break;
        }
        sequence.push(x)?;
        if next.peek() == Some(&&(k + 1)) {
            out.push(sequence.interval());
            next.next();
        }
    }
    Ok(out)
}

/// Which confidence sequence to read.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Sequence {
    /// [`BettingSequence`]: valid at every sample count for samples in the declared range.
    Betting(BettingOptions),
    /// [`super::asymptotic::asymptotic_intervals_at`], tuned for the given sample count: valid
    /// as the counts grow, its width following the samples' spread; `one_sided`: each bound at
    /// the level on its own.
    Asymptotic { tuned_for: u64, one_sided: bool },
}

impl Sequence {
    /// The sequence called `kind` ("betting" with `betting`'s options, or "asymptotic" tuned for
    /// `betting.tuned_for` samples, which it then requires); `one_sided`: each bound at the level
    /// on its own.
    pub fn named(kind: &str, betting: BettingOptions, one_sided: bool) -> Result<Self> {
        match kind {
            "betting" => Ok(Self::Betting(BettingOptions { one_sided, ..betting })),
            "asymptotic" => match betting.tuned_for {
                Some(n) => Ok(Self::Asymptotic { tuned_for: n, one_sided }),
                None => Err(invalid!("the asymptotic sequence needs the sample count it is tuned for")),
            },
            other => Err(invalid!("unknown confidence sequence {other:?}: known are \"betting\" and \"asymptotic\"")),
        }
    }
}

/// The intervals of `sequence` at level 1 − δ for each row of a row-major `rows x columns` table
/// of samples in [low, low + range], read after each checkpoint, in parallel over rows; row `r`'s
/// intervals are entries `r * checkpoints.len()..` of the result.
pub fn intervals_at_rows(
    table: &[f64],
    columns: usize,
    low: f64,
    range: f64,
    delta: f64,
    sequence: Sequence,
    checkpoints: &[usize],
) -> Result<Vec<(f64, f64)>> {
    if columns == 0 || !table.len().is_multiple_of(columns) {
        return Err(invalid!("the samples must be a table with at least one column, got {} values", table.len()));
    }
    check_checkpoints(checkpoints, columns)?;
    let read = |row: &[f64]| match sequence {
        Sequence::Betting(options) => intervals_at(row, low, range, delta, options, checkpoints),
        Sequence::Asymptotic { tuned_for, one_sided } => {
            super::asymptotic::asymptotic_intervals_at(row, low, low + range, delta, tuned_for, one_sided, checkpoints)
        }
    };
    let rows: Vec<Result<Vec<(f64, f64)>>> = table.par_chunks(columns).map(read).collect();
    let mut out = Vec::with_capacity(rows.len() * checkpoints.len());
    for row in rows {
        out.extend(row?);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::stream;
    use rand::Rng as _;

    #[test]
    fn checkpoints_read_the_running_sequence() {
        let mut rng = stream(3, 0, 0);
        let samples: Vec<f64> = (0..200).map(|_| rng.random::<f64>() * 2.0 - 1.0).collect();
        let options = BettingOptions::default();
        let read = intervals_at(&samples, -1.0, 2.0, 0.05, options, &[1, 50, 200]).unwrap();
        let mut sequence = BettingSequence::new(-1.0, 2.0, 0.05, options).unwrap();
        let mut expected = Vec::new();
        for (k, &x) in samples.iter().enumerate() {
            sequence.push(x).unwrap();
            if [1, 50, 200].contains(&(k + 1)) {
                expected.push(sequence.interval());
            }
        }
        assert_eq!(read, expected);
        // Rows in parallel give each row's own intervals, whatever the thread count.
        let table: Vec<f64> = samples.iter().chain(samples.iter().rev()).copied().collect();
        let rows = intervals_at_rows(&table, 200, -1.0, 2.0, 0.05, Sequence::Betting(options), &[1, 50, 200]).unwrap();
        assert_eq!(&rows[..3], &expected[..]);
        let reversed: Vec<f64> = samples.iter().rev().copied().collect();
        assert_eq!(&rows[3..], &intervals_at(&reversed, -1.0, 2.0, 0.05, options, &[1, 50, 200]).unwrap()[..]);
    }

    #[test]
    fn rejects_bad_checkpoints_and_tables() {
        let options = BettingOptions::default();
        for bad in [&[][..], &[0][..], &[3, 2][..], &[2, 2][..], &[5][..]] {
            let e = intervals_at(&[0.0; 4], -1.0, 2.0, 0.1, options, bad).unwrap_err().to_string();
            assert!(e.contains("checkpoints"), "{e}");
        }
        let e =
            intervals_at_rows(&[0.0; 5], 2, -1.0, 2.0, 0.1, Sequence::Betting(options), &[1]).unwrap_err().to_string();
        assert!(e.contains("table"), "{e}");
        let e = intervals_at(&[0.0, 3.0], -1.0, 2.0, 0.1, options, &[2]).unwrap_err().to_string();
        assert!(e.contains("outside the declared bounds"), "{e}");
    }
}
